#include "libgtcore/shape.h"

#include <fmt/format.h>

namespace gt {

Shape::Shape(std::initializer_list<int64_t> dims) {
  for (int64_t v : dims) {
    if (rank_ < kMaxRank) d_[rank_++] = v;
  }
}

Result<Shape> Shape::from(std::span<const int64_t> dims) {
  if (dims.size() > static_cast<size_t>(kMaxRank))
    return invalid_argument("rank {} exceeds the maximum of {}", dims.size(), kMaxRank);
  Shape s;
  for (int64_t v : dims) {
    if (v < 0) return invalid_argument("negative dimension {}", v);
    s.push_back(v);
  }
  if (s.numel() > kMaxNumel || s.numel() < 0)
    return invalid_argument("shape {} has too many elements", s.str());
  return s;
}

int64_t Shape::numel() const {
  for (int i = 0; i < rank_; ++i)
    if (d_[i] < 0) return -1;
  for (int i = 0; i < rank_; ++i)
    if (d_[i] == 0) return 0;  // a zero anywhere wins over a huge prefix
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) {
    // No division on this hot path (every op computes sizes): overflow-checked multiply.
    if (__builtin_mul_overflow(n, d_[i], &n) || n > kMaxNumel) return kMaxNumel + 1;
  }
  return n;
}

bool Shape::operator==(const Shape& o) const {
  if (rank_ != o.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (d_[i] != o.d_[i]) return false;
  return true;
}

std::string Shape::str() const { return fmt::format("[{}]", fmt::join(dims(), ", ")); }

std::array<int64_t, kMaxRank> contiguous_strides(const Shape& s) {
  std::array<int64_t, kMaxRank> st{};
  // Unsigned: the strides of an empty tensor with huge dims ([0, 2^62, 4]) may wrap, which is
  // harmless (no element is ever addressed) but must not be signed overflow.
  uint64_t acc = 1;
  for (int i = s.rank() - 1; i >= 0; --i) {
    st[i] = static_cast<int64_t>(acc);
    acc *= static_cast<uint64_t>(s[i]);
  }
  return st;
}

Result<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  int r = std::max(a.rank(), b.rank());
  Shape out;
  out.resize(r);
  for (int i = 0; i < r; ++i) {
    int ia = i - (r - a.rank()), ib = i - (r - b.rank());
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return invalid_argument("shapes {} and {} cannot be broadcast together (dim {}: {} vs {})",
                              a.str(), b.str(), i, da, db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Result<int> normalize_dim(int64_t dim, int rank, const char* what) {
  int64_t r = rank == 0 ? 1 : rank;  // a 0-d tensor accepts dim 0 / -1 like PyTorch
  if (dim < -r || dim >= r)
    return invalid_argument("{}: dim {} is out of range for a tensor of rank {}", what, dim, rank);
  return static_cast<int>(dim < 0 ? dim + r : dim);
}

Status check_shape_size(const Shape& s, DType dt) {
  for (int64_t v : s)
    if (v < 0) return invalid_argument("negative dimension in shape {}", s.str());
  int64_t n = s.numel();
  if (n > kMaxNumel) return invalid_argument("shape {} has too many elements", s.str());
  return Status::ok();
}

}  // namespace gt
