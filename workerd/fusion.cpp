#include "workerd/fusion.h"

namespace gt::worker {

OperandBroadcast operand_broadcast(const Shape& s, const Shape& out) {
  OperandBroadcast b;
  int64_t n = 1;
  for (int64_t d : s.dims()) n *= d;
  b.period = n;
  if (n == 1) return b;  // kOne
  if (s == out) {
    b.mode = OperandMode::kSame;
    return b;
  }
  int lead = 0;
  while (lead < s.rank() && s[lead] == 1) ++lead;
  bool repeats = true;  // s without its leading ones is out's trailing dims
  for (int d = lead; d < s.rank(); ++d)
    if (s[d] != out[out.rank() - s.rank() + d]) repeats = false;
  if (repeats) {
    b.mode = OperandMode::kRepeat;
    return b;
  }
  b.mode = OperandMode::kGather;
  b.rank = out.rank();
  const auto cs = contiguous_strides(s);
  for (int d = 0; d < out.rank(); ++d) {
    const int sd = d - (out.rank() - s.rank());  // the operand's dim lined up with d, if any
    b.dims[d] = out[d];
    b.strides[d] = sd >= 0 && s[sd] != 1 ? cs[sd] : 0;
  }
  return b;
}

}  // namespace gt::worker
