// Reductions over several dims at once (sum({0, 1}), mean, var, std, logsumexp): the reduced
// dims are moved last and merged into one, which the one-dim op reduces. torch reduces them
// together too: a mean of means would round twice, and an overflow part way through a sum
// would depend on the order. The Python binding's tuple dims use the same function.
#include <algorithm>
#include <string>

#include "gt/tensor.h"

namespace gt {

Tensor detail::reduce_merged(const Tensor& t, std::vector<int64_t> dims, bool keepdim,
                             const std::function<Tensor(const Tensor&, int64_t, bool)>& one,
                             const char* what) {
  for (int64_t& d : dims) d = wrap_dim(d, t.dim(), what);
  std::vector<int64_t> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    throw Error(Code::kInvalidArgument, std::string(what) + ": an axis is repeated");
  if (sorted.empty())
    throw Error(Code::kInvalidArgument, std::string(what) + ": no dims to reduce");
  if (sorted.size() == 1) return one(t, sorted[0], keepdim);
  std::vector<int64_t> perm, kept_shape, keep_shape;
  int64_t merged = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    const bool reduced = std::binary_search(sorted.begin(), sorted.end(), d);
    keep_shape.push_back(reduced ? 1 : t.size(d));
    if (reduced) {
      merged *= t.size(d);
    } else {
      perm.push_back(d);
      kept_shape.push_back(t.size(d));
    }
  }
  perm.insert(perm.end(), sorted.begin(), sorted.end());
  std::vector<int64_t> flat = kept_shape;
  flat.push_back(merged);
  Tensor r = one(t.permute(perm).reshape(flat), static_cast<int64_t>(kept_shape.size()), false);
  return keepdim ? r.reshape(keep_shape) : r;
}

Tensor Tensor::sum(Dims dims, bool keepdim) const {
  return detail::reduce_merged(*this, dims.vec(), keepdim,
                               [](const Tensor& x, int64_t d, bool k) { return x.sum(d, k); }, "sum");
}

Tensor Tensor::mean(Dims dims, bool keepdim) const {
  return detail::reduce_merged(*this, dims.vec(), keepdim,
                               [](const Tensor& x, int64_t d, bool k) { return x.mean(d, k); },
                               "mean");
}

Tensor Tensor::var(Dims dims, double correction, bool keepdim) const {
  return detail::reduce_merged(
      *this, dims.vec(), keepdim,
      [correction](const Tensor& x, int64_t d, bool k) { return x.var(d, correction, k); }, "var");
}

Tensor Tensor::std(Dims dims, double correction, bool keepdim) const {
  return detail::reduce_merged(
      *this, dims.vec(), keepdim,
      [correction](const Tensor& x, int64_t d, bool k) { return x.std(d, correction, k); }, "std");
}

Tensor Tensor::logsumexp(Dims dims, bool keepdim) const {
  return detail::reduce_merged(
      *this, dims.vec(), keepdim,
      [](const Tensor& x, int64_t d, bool k) { return x.logsumexp(d, k); }, "logsumexp");
}

}  // namespace gt
