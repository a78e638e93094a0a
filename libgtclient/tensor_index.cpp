// Indexing and related primitives: index_select, gather, scatter_add, index_add, masked_fill,
// clamp, expand, var, logsumexp and cumsum (methods and free forms). Dims are normalized here,
// so the instruction (and the autograd node) always carries a non-negative dim.
#include <string>

#include "gt/tensor.h"
#include "libgtclient/run_op.h"
#include "libgtclient/view.h"

namespace gt {
namespace {

using detail::run_op;

int64_t dim_for(const Tensor& x, int64_t dim, OpId op) {
  return detail::normalize_dim_or_throw(dim, x.dim(), op_name(op));
}

}  // namespace

// ---- indexing -----------------------------------------------------------------------------------
// A 0-d input is indexed as the one-element vector it holds (PyTorch accepts dim 0 or -1 there):
// reshaped to [1], indexed along 0, and reshaped back, so the ops (and their gradients) are the
// 1-d ones.
namespace {
bool zero_dim_input(const Tensor& x, int64_t dim, OpId op) {
  if (x.dim() != 0) return false;
  if (dim != 0 && dim != -1)
    throw Error(Code::kInvalidArgument, std::string(op_name(op)) + ": dim " +
                                            std::to_string(dim) + " out of range for a 0-d tensor");
  return true;
}
Tensor as_vector(const Tensor& x) { return x.reshape({-1}); }
}  // namespace

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  if (zero_dim_input(*this, dim, OpId::k_index_select)) {
    // PyTorch gives a 0-d result whatever the index's length (every entry, checked on the
    // worker, can only pick the one value); an empty index has no value to give.
    if (index.numel() == 0)
      throw Error(Code::kInvalidArgument, "index_select: an empty index selects no value of a 0-d tensor");
    Tensor r = as_vector(*this).index_select(0, as_vector(index));
    return index.numel() == 1 ? r.reshape({}) : r.slice(0, 0, 1).reshape({});
  }
  return run_op(OpId::k_index_select, make_axis(dim_for(*this, dim, OpId::k_index_select)),
                {this, &index});
}

Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  if (zero_dim_input(*this, dim, OpId::k_gather))
    return as_vector(*this).gather(0, as_vector(index)).reshape(index.shape());
  return run_op(OpId::k_gather, make_axis(dim_for(*this, dim, OpId::k_gather)), {this, &index});
}

Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  if (zero_dim_input(*this, dim, OpId::k_scatter_add))
    return as_vector(*this).scatter_add(0, as_vector(index), as_vector(src)).reshape({});
  return run_op(OpId::k_scatter_add, make_axis(dim_for(*this, dim, OpId::k_scatter_add)),
                {this, &index, &src});
}

Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  if (zero_dim_input(*this, dim, OpId::k_index_add))
    return as_vector(*this).index_add(0, as_vector(index), as_vector(src)).reshape({});
  return run_op(OpId::k_index_add, make_axis(dim_for(*this, dim, OpId::k_index_add)),
                {this, &index, &src});
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  return x.index_select(dim, index);
}
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) { return x.gather(dim, index); }
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return x.scatter_add(dim, index, src);
}
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return x.index_add(dim, index, src);
}

// ---- masked_fill, clamp, expand -----------------------------------------------------------------
// The value travels with its exact integer (int64 masked_fill beyond 2^53); the shape rule
// checks that it fits x's dtype, as torch.masked_fill does.
Tensor Tensor::masked_fill(const Tensor& mask, Scalar value) const {
  const std::optional<int64_t> exact = detail::checked_exact(value, "masked_fill");
  return run_op(OpId::k_masked_fill, make_fill_value(value.to_double(), exact), {this, &mask});
}

// The bounds promote with x as scalar operands (torch.clamp: an int tensor with int bounds
// stays int, a float bound makes it float32) and travel with their exact integers.
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  if (!min && !max) throw Error("clamp: at least one of min and max must be given");
  auto bound = [](const std::optional<Scalar>& s) -> std::optional<ClampBound> {
    if (!s) return std::nullopt;
    return ClampBound{s->to_double(), detail::scalar_kind(*s), detail::checked_exact(*s, "clamp")};
  };
  return run_op(OpId::k_clamp, make_clamp(bound(min), bound(max)), {this});
}

Tensor Tensor::clamp_min(Scalar min) const { return clamp(min, std::nullopt); }
Tensor Tensor::clamp_max(Scalar max) const { return clamp(std::nullopt, max); }

Tensor Tensor::expand(Dims shape) const {
  Shape to = detail::to_shape(shape, "expand");
  const Shape& s = this->shape();
  const int shift = to.rank() - s.rank();
  if (shift < 0)
    throw Error("expand: the number of sizes provided (" + std::to_string(to.rank()) +
                ") must be greater or equal to the number of dimensions in the tensor (" +
                std::to_string(s.rank()) + ")");
  for (int i = 0; i < to.rank(); ++i) {
    if (to[i] != -1) continue;
    if (i < shift)
      throw Error("expand: -1 is not allowed in a leading, non-existing dimension");
    to[i] = s[i - shift];
  }
  Tensor r = run_op(OpId::k_expand, make_reshape(to), {this});  // the rule checks the sizes
  return detail::make_view(*this, std::move(r), [&](const detail::ViewGeometry& g) {
    return std::optional(detail::expanded(g, to));
  });
}

Tensor Tensor::expand_as(const Tensor& other) const { return expand(other.shape()); }

// ---- var, logsumexp, cumsum ---------------------------------------------------------------------
Tensor Tensor::var(std::optional<int64_t> dim, double correction, bool keepdim) const {
  const int64_t d = dim ? dim_for(*this, *dim, OpId::k_var) : kAllDims;
  return run_op(OpId::k_var, make_var(d, keepdim, correction), {this});
}

Tensor Tensor::logsumexp() const {
  return run_op(OpId::k_logsumexp, make_reduce(kAllDims, false), {this});
}

Tensor Tensor::logsumexp(int64_t dim, bool keepdim) const {
  return run_op(OpId::k_logsumexp, make_reduce(dim_for(*this, dim, OpId::k_logsumexp), keepdim),
                {this});
}

Tensor Tensor::cumsum(int64_t dim) const {
  return run_op(OpId::k_cumsum, make_axis(dim_for(*this, dim, OpId::k_cumsum)), {this});
}

Tensor cumsum(const Tensor& x, int64_t dim) { return x.cumsum(dim); }

}  // namespace gt
