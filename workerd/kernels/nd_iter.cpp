#include "workerd/kernels/nd_iter.h"

namespace gt::worker {

std::array<int64_t, kMaxRank> row_major_strides(const Shape& s) {
  std::array<int64_t, kMaxRank> st{};
  int64_t acc = 1;
  for (int d = s.rank() - 1; d >= 0; --d) {
    st[d] = s[d] == 1 ? 0 : acc;
    acc *= s[d];
  }
  return st;
}

std::array<int64_t, kMaxRank> broadcast_strides(const Shape& in, const Shape& out) {
  std::array<int64_t, kMaxRank> st{};
  std::array<int64_t, kMaxRank> own = row_major_strides(in);
  int shift = out.rank() - in.rank();
  for (int d = 0; d < in.rank(); ++d) {
    int od = d + shift;
    if (od < 0) continue;  // cannot happen for shapes that broadcast
    st[od] = (in[d] == out[od]) ? own[d] : 0;
  }
  return st;
}

}  // namespace gt::worker
