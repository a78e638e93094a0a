// The autograd methods of gt::Tensor (requires_grad_, grad, backward, detach, ...) and its
// in-place arithmetic (computed out of place, written back with copy_).
#include <string>

#include "gt/autograd.h"
#include "libgtclient/autograd_node.h"
#include "libgtclient/run_op.h"
#include "libgtclient/view.h"
#include "libgtcore/shape_rules.h"

namespace gt {
namespace {

namespace ad = autograd::detail;

void check_in_place_named(const Tensor& t, const char* what) {
  detail::check_view_write(t, what);
  if (!is_grad_enabled()) return;
  const TensorImpl& impl = *t.impl();
  if (impl.requires_grad && !impl.grad_fn)
    throw Error(std::string(what) +
                ": a leaf tensor that requires grad is being used in an in-place operation; " +
                ad::kLeafInPlaceRemedy);
}

// PyTorch refuses an in-place op whose result cannot be written back into self's dtype
// (int64 a /= 2, a += 2.7: "result type Float can't be cast to the desired output type Long")
// rather than truncating it. The result's dtype comes from the op's shape rule, before anything
// is queued; an operand the rule refuses is left to the op itself, which throws its own error.
void check_cast_back(const Tensor& self, OpId op, std::span<const TensorMeta> in,
                     const OpAttrs& attrs, const char* what) {
  Result<TensorMeta> r = infer_meta(op, in, attrs);
  if (!r.is_ok() || can_cast(r->dtype, self.dtype())) return;
  throw Error(std::string(what) + ": result type " + dtype_name(r->dtype) +
              " can't be cast to the desired output type " + dtype_name(self.dtype()));
}
// self op= o (o scaled by alpha first, for add_/sub_).
void check_cast_back(const Tensor& self, OpId op, const Tensor& o, const char* what,
                     std::optional<Scalar> alpha = std::nullopt) {
  // torch converts alpha to the result's dtype (promote(self, o): alpha does not promote),
  // checked: a bool alpha needs a bool result, a floating one a floating result, an integer
  // one must fit (alpha=2**31 on int32 raises).
  if (alpha) {
    if (op == OpId::k_sub && (self.dtype() == kBool || o.dtype() == kBool))
      throw Error(std::string(what) + ": subtraction, the `-` operator, with a bool tensor is "
                  "not supported. If you are trying to invert a mask, use the `~` or "
                  "`logical_not()` operator instead.");
    const DType r = promote_ranked(self.dtype(), self.dim() == 0, o.dtype(), o.dim() == 0);
    if (alpha->is_bool() && r != kBool)
      throw Error(std::string(what) + ": a boolean alpha is only supported for boolean results");
    if (!alpha->is_integral() && !is_floating(r))
      throw Error(std::string(what) + ": for integral input tensors, alpha must not be a "
                  "floating point number");
    if (r != kBool && !scalar_fits(r, alpha->to_double(), alpha->exact_int())) {
      const auto exact = alpha->exact_int();
      throw Error(std::string(what) + ": alpha " +
                  (exact ? std::to_string(*exact) : std::to_string(alpha->to_double())) +
                  " cannot be converted to " + dtype_name(r) + " without overflow");
    }
  }
  const TensorMeta in[2] = {self.meta(), o.meta()};
  check_cast_back(self, op, in, OpAttrs{}, what);
}
void check_cast_back(const Tensor& self, OpId op, Scalar o, const char* what) {
  const TensorMeta in[1] = {self.meta()};
  check_cast_back(self, op, in,
                  make_binary_scalar(ScalarSide::kRight, o.to_double(), detail::scalar_kind(o),
                                     o.exact_int()),
                  what);
}

// self +- alpha * o (alpha != 1) computed as torch's fused kernel does: in the promoted dtype,
// float32 for float16/bfloat16 (its opmath), so alpha * o does not overflow the narrow type.
Tensor plus_scaled(const Tensor& self, const Tensor& o, Scalar alpha, bool subtract) {
  DType r = promote_ranked(self.dtype(), self.dim() == 0, o.dtype(), o.dim() == 0);
  if (r == kBool) alpha = Scalar(alpha.to_double() != 0);  // torch converts alpha to bool
  if (r == kFloat16 || r == kBFloat16) r = kFloat32;
  const Tensor scaled = o.to(r) * alpha;
  return subtract ? self.to(r) - scaled : self.to(r) + scaled;
}

// For in-place ops whose gradient rule saves `self` (mul_, div_ by a tensor that requires grad):
// the rule must see the old value, so compute from a copy.
Tensor self_for_rule(const Tensor& self, const Tensor& o) {
  if (is_grad_enabled() && ad::requires_grad(*o.impl())) return self.clone();
  return self;
}

}  // namespace

// ---- in-place arithmetic ------------------------------------------------------------------------
const Tensor& Tensor::add_(const Tensor& o, Scalar alpha) const {
  check_in_place_named(*this, "add_");
  check_cast_back(*this, OpId::k_add, o, "add_", alpha);
  return copy_(alpha.to_double() == 1 ? *this + o : plus_scaled(*this, o, alpha, false));
}
const Tensor& Tensor::add_(Scalar o) const {
  check_in_place_named(*this, "add_");
  check_cast_back(*this, OpId::k_add, o, "add_");
  return copy_(*this + o);
}
const Tensor& Tensor::sub_(const Tensor& o, Scalar alpha) const {
  check_in_place_named(*this, "sub_");
  check_cast_back(*this, OpId::k_sub, o, "sub_", alpha);
  return copy_(alpha.to_double() == 1 ? *this - o : plus_scaled(*this, o, alpha, true));
}
const Tensor& Tensor::sub_(Scalar o) const {
  check_in_place_named(*this, "sub_");
  check_cast_back(*this, OpId::k_sub, o, "sub_");
  return copy_(*this - o);
}
const Tensor& Tensor::mul_(const Tensor& o) const {
  check_in_place_named(*this, "mul_");
  check_cast_back(*this, OpId::k_mul, o, "mul_");
  return copy_(self_for_rule(*this, o) * o);
}
const Tensor& Tensor::mul_(Scalar o) const {
  check_in_place_named(*this, "mul_");
  check_cast_back(*this, OpId::k_mul, o, "mul_");
  return copy_(*this * o);
}
const Tensor& Tensor::div_(const Tensor& o) const {
  check_in_place_named(*this, "div_");
  check_cast_back(*this, OpId::k_div, o, "div_");
  return copy_(self_for_rule(*this, o) / o);
}
const Tensor& Tensor::div_(Scalar o) const {
  check_in_place_named(*this, "div_");
  check_cast_back(*this, OpId::k_div, o, "div_");
  return copy_(*this / o);
}
namespace {
// self = compute(self), for in-place forms of out-of-place ops: when a gradient will flow
// through self or `other` (the op's other operand), compute reads a copy of self (the op's rule
// may save the input the write-back overwrites).
template <typename F>
const Tensor& assign_result(const Tensor& self, const char* what, F&& compute,
                            const Tensor* other = nullptr) {
  check_in_place_named(self, what);
  const bool keep_old = is_grad_enabled() && (ad::requires_grad(*self.impl()) ||
                                              (other && ad::requires_grad(*other->impl())));
  Tensor r = compute(keep_old ? self.clone() : self);
  if (!can_cast(r.dtype(), self.dtype()))
    throw Error(std::string(what) + ": result type " + dtype_name(r.dtype()) +
                " can't be cast to the desired output type " + dtype_name(self.dtype()));
  return self.copy_(r);
}
}  // namespace

#define GT_API_UNARY(name, functional)                                                 \
  const Tensor& Tensor::name##_() const {                                              \
    return assign_result(*this, #name "_", [](const Tensor& x) { return x.name(); }); \
  }
#include "gt/tensor_api.def"

const Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return assign_result(*this, "clamp_", [&](const Tensor& x) { return x.clamp(min, max); });
}
const Tensor& Tensor::masked_fill_(const Tensor& mask, Scalar value) const {
  return assign_result(*this, "masked_fill_",
                       [&](const Tensor& x) { return x.masked_fill(mask, value); });
}
const Tensor& Tensor::pow_(const Tensor& e) const {
  return assign_result(*this, "pow_", [&](const Tensor& x) { return x.pow(e); }, &e);
}
const Tensor& Tensor::pow_(Scalar e) const {
  return assign_result(*this, "pow_", [&](const Tensor& x) { return x.pow(e); });
}

const Tensor& Tensor::zero_() const { return fill_(0); }
const Tensor& Tensor::fill_(Scalar value) const {
  detail::UniformWriteScope uniform;  // one value everywhere: an expanded view may take it
  check_in_place_named(*this, "fill_");
  return copy_(full({}, value, dtype()));
}

// ---- autograd -----------------------------------------------------------------------------------
bool Tensor::requires_grad() const { return ad::requires_grad(checked()); }

const Tensor& Tensor::requires_grad_(bool on) const {
  checked();
  TensorImpl& impl = *impl_;
  if (impl.grad_fn) {
    if (!on)
      throw Error(
          "requires_grad_: you can only change the requires_grad flag of a leaf tensor; use "
          "detach() to get a tensor without history");
    return *this;
  }
  if (on && !is_floating(impl.meta.dtype))
    throw Error(std::string("requires_grad_: only tensors of floating point dtype can require "
                            "gradients, got ") +
                dtype_name(impl.meta.dtype));
  impl.requires_grad = on;
  return *this;
}

bool Tensor::is_leaf() const { return checked().grad_fn == nullptr; }

Tensor Tensor::grad() const {
  const TensorImpl& impl = checked();
  return impl.grad ? Tensor(impl.grad) : Tensor();
}

void Tensor::set_grad(const Tensor& g) const {
  checked();
  if (g.defined() && (g.shape() != shape() || g.dtype() != dtype()))
    throw Error("set_grad: the gradient must have the tensor's shape " + shape().str() +
                " and dtype " + dtype_name(dtype()) + ", got " + g.shape().str() + " " +
                dtype_name(g.dtype()));
  impl_->grad = g.impl();
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  checked();
  ad::run_backward({*this}, {gradient}, retain_graph, nullptr);
}

void Tensor::retain_grad() const {
  const TensorImpl& impl = checked();
  if (!impl.grad_fn) {
    if (!impl.requires_grad)
      throw Error("retain_grad: can't retain_grad on a tensor that does not require grad");
    return;  // leaves keep their gradient anyway
  }
  static_cast<ad::Node*>(impl.grad_fn.get())->retain_grad = true;
}

Tensor Tensor::detach() const {
  NoGradGuard no_grad;
  // A reshape to the same shape: a new id sharing the bytes on the worker (copied on the first
  // in-place write to either), no history; a view of this tensor's base here.
  Tensor r = detail::run_op(OpId::k_reshape, make_reshape(shape()), {this});
  return detail::make_view(
      *this, std::move(r), [](const detail::ViewGeometry& g) { return g; },
      detail::ViewKind::kDetached);
}

Tensor Tensor::clone() const { return cast(dtype()); }

std::string Tensor::grad_fn_name() const {
  const TensorImpl& impl = checked();
  if (!impl.grad_fn) return "";
  return static_cast<const ad::Node*>(impl.grad_fn.get())->name();
}

// ---- free functions -----------------------------------------------------------------------------
namespace autograd {

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
              bool retain_graph) {
  detail::run_backward(outputs, grad_outputs, retain_graph, nullptr);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph,
                         bool allow_unused_as_zeros) {
  std::vector<Tensor> g = detail::run_backward(outputs, grad_outputs, retain_graph, &inputs);
  if (allow_unused_as_zeros) {
    NoGradGuard no_grad;
    for (size_t i = 0; i < g.size(); ++i)
      if (!g[i].defined()) g[i] = zeros_like(inputs[i]);
  }
  return g;
}

}  // namespace autograd
}  // namespace gt
