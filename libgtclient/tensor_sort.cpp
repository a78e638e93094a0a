// Sorting: argsort is one op (stable, NaN above every number, as torch.sort); sort, topk and
// msort take its positions and gather the values, so their gradients are gather's (each value's
// gradient goes back to the position it came from).
#include <string>

#include "gt/tensor.h"
#include "libgtclient/run_op.h"

namespace gt {

Tensor Tensor::argsort(int64_t dim, bool descending) const {
  const int64_t d = detail::normalize_dim_or_throw(dim, this->dim(), "argsort");
  return detail::run_op(OpId::k_argsort, make_sort(d, descending), {this});
}

std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  Tensor order = argsort(dim, descending);
  return {gather(dim, order), order};
}

std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  (void)sorted;  // the k come in sorted order either way (torch leaves sorted=False's order open)
  const int64_t d = detail::normalize_dim_or_throw(dim, this->dim(), "topk");
  const int64_t size = this->dim() == 0 ? 1 : shape()[d];
  if (k < 0 || k > size)
    throw Error(Code::kInvalidArgument, "topk: k (" + std::to_string(k) +
                                            ") is out of range for a dim of size " +
                                            std::to_string(size));
  Tensor order = argsort(d, largest);
  if (this->dim() > 0 && k < size) order = order.slice(d, 0, k).contiguous();
  return {gather(d, order), order};
}

Tensor Tensor::msort() const { return std::get<0>(sort(0)); }

Tensor argsort(const Tensor& x, int64_t dim, bool descending) { return x.argsort(dim, descending); }
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending) {
  return x.sort(dim, descending);
}
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest,
                                bool sorted) {
  return x.topk(k, dim, largest, sorted);
}
Tensor msort(const Tensor& x) { return x.msort(); }

}  // namespace gt
