// Logical reductions and comparisons (any, all, isclose, allclose, equal) and std: composites of
// the op table's comparisons, where and reductions, so every backend and sharding rule serves
// them. The comparisons run without recording (their results are bool: nothing to differentiate,
// and a float operand that requires grad must not put their arithmetic on its tape).
#include <cmath>
#include <string>

#include "gt/autograd.h"
#include "gt/tensor.h"
#include "libgtclient/autograd_node.h"

namespace gt {
namespace {

// true where x is nonzero (NaN included), as a bool tensor.
Tensor nonzero(const Tensor& x) { return x.dtype() == kBool ? x : x.ne(0); }

// The count of nonzero elements compared with what any/all need, over everything or along dim.
Tensor count_is(const Tensor& x, bool want_all, std::optional<int64_t> dim, bool keepdim) {
  NoGradGuard no_grad;
  // all: no zero element; any: at least one nonzero element.
  Tensor hits = want_all ? nonzero(x).bitwise_not() : nonzero(x);
  Tensor count = dim ? hits.sum(*dim, keepdim) : hits.sum();
  return want_all ? count.eq(0) : count.gt(0);
}

}  // namespace

namespace {
// sqrt(var) along `dim` (all elements without one), computed on x / max|x|: the variance of
// values beyond ~1.8e19 overflows float32 where their deviation does not (torch accumulates in
// double). std does not depend on the scale. Not recorded (std records its own gradient).
Tensor scaled_std(const Tensor& x, std::optional<int64_t> dim, double correction, bool keepdim) {
  NoGradGuard no_grad;
  const Tensor m = x.abs();
  Tensor scale = dim ? std::get<0>(m.max(*dim, true)) : m.max();
  scale = where(scale.eq(0), 1.0, scale);
  const Tensor s = (x / scale).var(dim, correction, keepdim).sqrt();
  return s * (dim && !keepdim ? scale.squeeze(*dim) : scale);
}
}  // namespace

Tensor Tensor::std(std::optional<int64_t> dim, double correction, bool keepdim) const {
  const int64_t d = dim ? (*dim < 0 ? *dim + this->dim() : *dim) : 0;
  if (!is_floating(dtype()) || this->dim() == 0 || d < 0 || d >= this->dim() ||
      (dim ? size(d) : numel()) == 0)
    return var(dim, correction, keepdim).sqrt();  // var's errors; nothing to overflow
  const std::optional<int64_t> nd = dim ? std::optional<int64_t>(d) : std::nullopt;
  const Tensor out = scaled_std(*this, nd, correction, keepdim);
  // torch's gradient, g / std * (x - mean) / (n - correction): the derivative of the scaled
  // form would multiply g by the scale first and overflow.
  const double dof = static_cast<double>(dim ? size(d) : numel()) - correction;
  const Tensor* ins[] = {this};
  return autograd::detail::record_function(
      "StdBackward", out, ins, 0b1, [nd, keepdim, correction, dof](autograd::detail::GradCtx& c) {
        const Tensor x = c.node.saved_input(0);
        const Tensor g = nd && !keepdim ? c.grad.unsqueeze(*nd) : c.grad;
        const Tensor mean = nd ? x.mean(*nd, true) : x.mean();
        c.in_grads[0] = g / scaled_std(x, nd, correction, true) * (x - mean) / dof;
      });
}

// any / all give bool, except for a uint8 input: uint8, as torch's (its legacy mask dtype).
namespace {
Tensor logic_result(const Tensor& x, Tensor r) { return x.dtype() == kUInt8 ? r.to(kUInt8) : r; }
}  // namespace
Tensor Tensor::any() const { return logic_result(*this, count_is(*this, false, std::nullopt, false)); }
Tensor Tensor::any(int64_t dim, bool keepdim) const {
  return logic_result(*this, count_is(*this, false, dim, keepdim));
}
Tensor Tensor::all() const { return logic_result(*this, count_is(*this, true, std::nullopt, false)); }
Tensor Tensor::all(int64_t dim, bool keepdim) const {
  return logic_result(*this, count_is(*this, true, dim, keepdim));
}

Tensor Tensor::isclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  if (dtype() != other.dtype())
    throw Error(std::string("isclose: both operands must have one dtype (as torch), got ") +
                dtype_name(dtype()) + " and " + dtype_name(other.dtype()));
  if (!(rtol >= 0) || !(atol >= 0))
    throw Error("isclose: rtol and atol must be non-negative, got rtol=" + std::to_string(rtol) +
                " atol=" + std::to_string(atol));
  NoGradGuard no_grad;
  // torch computes the tolerance of bool operands in float32; integers promote with rtol.
  const Tensor a = dtype() == kBool ? to(kFloat32) : *this;
  const Tensor b = dtype() == kBool ? other.to(kFloat32) : other;
  const Tensor actual = (a - b).abs();
  const Tensor allowed = (b * rtol).abs() + atol;
  // Equal values (infinities included) are close; otherwise the error must be finite.
  Tensor close = where(a.eq(b), true, where(actual.lt(INFINITY), actual.le(allowed), false));
  if (equal_nan && is_floating(dtype())) close = where(a.ne(a), b.ne(b), close);
  return close;
}

bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return isclose(other, rtol, atol, equal_nan).all().item<bool>();
}

bool Tensor::equal(const Tensor& other) const {
  if (shape() != other.shape()) return false;
  NoGradGuard no_grad;
  return eq(other).all().item<bool>();
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  return a.allclose(b, rtol, atol, equal_nan);
}

bool equal(const Tensor& a, const Tensor& b) { return a.equal(b); }

}  // namespace gt
