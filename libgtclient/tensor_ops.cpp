// Elementwise, comparison, matmul, where and reduction ops: methods, operators and free forms.
#include "gt/tensor.h"

namespace gt {
namespace {

using detail::run_op;

Tensor unary(OpId op, const Tensor& x) { return run_op(op, OpAttrs{}, {&x}); }

Tensor binary(OpId op, const Tensor& a, const Tensor& b) {
  return run_op(op, OpAttrs{}, {&a, &b});
}

// `t op s` (side kRight) or `s op t` (side kLeft): one tensor input, the scalar in the attrs.
Tensor binary_scalar(OpId op, const Tensor& t, Scalar s, ScalarSide side) {
  return run_op(op, make_binary_scalar(side, s.to_double(), s.is_integral(), s.exact_int()), {&t});
}

Tensor reduce(OpId op, const Tensor& x, int64_t dim, bool keepdim) {
  if (dim != kAllDims) dim = detail::normalize_dim_or_throw(dim, x.dim(), op_name(op));
  return run_op(op, make_reduce(dim, keepdim), {&x});
}

// A scalar operand of where() as a 0-d tensor whose dtype does not change the result's dtype
// beyond what a Python scalar would.
Tensor scalar_operand(Scalar s, const Tensor* other) {
  DType dt;
  if (other != nullptr) {
    DType o = other->dtype();
    dt = (s.is_bool() && o == DType::kBool) ? DType::kBool
                                            : promote_with_scalar(o, s.is_integral());
  } else {
    dt = s.is_bool() ? DType::kBool : s.is_integral() ? DType::kInt64 : DType::kFloat32;
  }
  return full({}, s, dt);
}

}  // namespace

// ---- unary ------------------------------------------------------------------------------------
Tensor Tensor::neg() const { return unary(OpId::k_neg, *this); }
Tensor Tensor::exp() const { return unary(OpId::k_exp, *this); }
Tensor Tensor::log() const { return unary(OpId::k_log, *this); }
Tensor Tensor::sqrt() const { return unary(OpId::k_sqrt, *this); }
Tensor Tensor::abs() const { return unary(OpId::k_abs, *this); }
Tensor Tensor::relu() const { return unary(OpId::k_relu, *this); }
Tensor Tensor::sigmoid() const { return unary(OpId::k_sigmoid, *this); }
Tensor Tensor::tanh() const { return unary(OpId::k_tanh, *this); }

Tensor neg(const Tensor& x) { return x.neg(); }
Tensor exp(const Tensor& x) { return x.exp(); }
Tensor log(const Tensor& x) { return x.log(); }
Tensor sqrt(const Tensor& x) { return x.sqrt(); }
Tensor abs(const Tensor& x) { return x.abs(); }
Tensor relu(const Tensor& x) { return x.relu(); }
Tensor sigmoid(const Tensor& x) { return x.sigmoid(); }
Tensor tanh(const Tensor& x) { return x.tanh(); }
Tensor operator-(const Tensor& a) { return a.neg(); }

// ---- binary -----------------------------------------------------------------------------------
#define GT_BINARY_METHODS(method, op)                                                   \
  Tensor Tensor::method(const Tensor& o) const { return binary(OpId::op, *this, o); }   \
  Tensor Tensor::method(Scalar o) const {                                               \
    return binary_scalar(OpId::op, *this, o, ScalarSide::kRight);                       \
  }
GT_BINARY_METHODS(add, k_add)
GT_BINARY_METHODS(sub, k_sub)
GT_BINARY_METHODS(mul, k_mul)
GT_BINARY_METHODS(div, k_div)
GT_BINARY_METHODS(pow, k_pow)
GT_BINARY_METHODS(eq, k_eq)
GT_BINARY_METHODS(ne, k_ne)
GT_BINARY_METHODS(lt, k_lt)
GT_BINARY_METHODS(le, k_le)
GT_BINARY_METHODS(gt, k_gt)
GT_BINARY_METHODS(ge, k_ge)
#undef GT_BINARY_METHODS

Tensor Tensor::maximum(const Tensor& o) const { return binary(OpId::k_maximum, *this, o); }
Tensor Tensor::minimum(const Tensor& o) const { return binary(OpId::k_minimum, *this, o); }
Tensor Tensor::matmul(const Tensor& o) const { return binary(OpId::k_matmul, *this, o); }

#define GT_BINARY_OPERATOR(sym, op)                                          \
  Tensor operator sym(const Tensor& a, const Tensor& b) {                    \
    return binary(OpId::op, a, b);                                           \
  }                                                                          \
  Tensor operator sym(const Tensor& a, Scalar b) {                           \
    return binary_scalar(OpId::op, a, b, ScalarSide::kRight);                \
  }                                                                          \
  Tensor operator sym(Scalar a, const Tensor& b) {                           \
    return binary_scalar(OpId::op, b, a, ScalarSide::kLeft);                 \
  }
GT_BINARY_OPERATOR(+, k_add)
GT_BINARY_OPERATOR(-, k_sub)
GT_BINARY_OPERATOR(*, k_mul)
GT_BINARY_OPERATOR(/, k_div)
GT_BINARY_OPERATOR(==, k_eq)
GT_BINARY_OPERATOR(!=, k_ne)
GT_BINARY_OPERATOR(<, k_lt)
GT_BINARY_OPERATOR(<=, k_le)
GT_BINARY_OPERATOR(>, k_gt)
GT_BINARY_OPERATOR(>=, k_ge)
#undef GT_BINARY_OPERATOR

Tensor eq(const Tensor& a, const Tensor& b) { return binary(OpId::k_eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary(OpId::k_ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary(OpId::k_lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary(OpId::k_le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary(OpId::k_gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary(OpId::k_ge, a, b); }

Tensor pow(const Tensor& a, const Tensor& b) { return binary(OpId::k_pow, a, b); }
Tensor pow(const Tensor& a, Scalar b) {
  return binary_scalar(OpId::k_pow, a, b, ScalarSide::kRight);
}
Tensor pow(Scalar a, const Tensor& b) {
  return binary_scalar(OpId::k_pow, b, a, ScalarSide::kLeft);
}
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(OpId::k_maximum, a, b); }
Tensor maximum(const Tensor& a, Scalar b) {
  return binary_scalar(OpId::k_maximum, a, b, ScalarSide::kRight);
}
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(OpId::k_minimum, a, b); }
Tensor minimum(const Tensor& a, Scalar b) {
  return binary_scalar(OpId::k_minimum, a, b, ScalarSide::kRight);
}
Tensor matmul(const Tensor& a, const Tensor& b) { return binary(OpId::k_matmul, a, b); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return run_op(OpId::k_where, OpAttrs{}, {&cond, &a, &b});
}
Tensor where(const Tensor& cond, Scalar a, const Tensor& b) {
  return where(cond, scalar_operand(a, &b), b);
}
Tensor where(const Tensor& cond, const Tensor& a, Scalar b) {
  return where(cond, a, scalar_operand(b, &a));
}
Tensor where(const Tensor& cond, Scalar a, Scalar b) {
  // Both scalars: the result takes the promoted scalar dtype (int64 only if both are integers).
  Tensor ta = scalar_operand(a, nullptr);
  Tensor tb = scalar_operand(b, &ta);
  return where(cond, ta, tb);
}

// ---- reductions -------------------------------------------------------------------------------
#define GT_REDUCTION(method, op)                                                     \
  Tensor Tensor::method() const { return reduce(OpId::op, *this, kAllDims, false); } \
  Tensor Tensor::method(int64_t dim, bool keepdim) const {                           \
    return reduce(OpId::op, *this, dim, keepdim);                                    \
  }
GT_REDUCTION(sum, k_sum)
GT_REDUCTION(mean, k_mean)
GT_REDUCTION(max, k_max)
GT_REDUCTION(min, k_min)
GT_REDUCTION(argmax, k_argmax)
GT_REDUCTION(argmin, k_argmin)
#undef GT_REDUCTION

Tensor sum(const Tensor& x) { return x.sum(); }
Tensor sum(const Tensor& x, int64_t dim, bool keepdim) { return x.sum(dim, keepdim); }
Tensor mean(const Tensor& x) { return x.mean(); }
Tensor mean(const Tensor& x, int64_t dim, bool keepdim) { return x.mean(dim, keepdim); }
Tensor argmax(const Tensor& x) { return x.argmax(); }
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) { return x.argmax(dim, keepdim); }
Tensor argmin(const Tensor& x) { return x.argmin(); }
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) { return x.argmin(dim, keepdim); }

}  // namespace gt
