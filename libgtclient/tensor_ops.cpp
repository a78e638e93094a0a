// Elementwise, comparison, matmul, where and reduction ops: methods, operators and free forms.
// The table-shaped ones are generated from gt/tensor_api.def; where and matmul are written here.
#include "gt/tensor.h"

#include <atomic>
#include <string>
#include <utility>

#include "libgtclient/run_op.h"

namespace gt {
namespace {

using detail::run_op;

Tensor unary(OpId op, const Tensor& x) { return run_op(op, OpAttrs{}, {&x}); }

Tensor binary(OpId op, const Tensor& a, const Tensor& b) {
  return run_op(op, OpAttrs{}, {&a, &b});
}

// `t op s` (side kRight) or `s op t` (side kLeft): one tensor input, the scalar in the attrs
// with its category (bool / integer / float: type promotion follows it).
Tensor binary_scalar(OpId op, const Tensor& t, Scalar s, ScalarSide side) {
  const std::optional<int64_t> exact = detail::checked_exact(s, op_name(op));
  return run_op(op, make_binary_scalar(side, s.to_double(), detail::scalar_kind(s), exact), {&t});
}

Tensor reduce(OpId op, const Tensor& x, int64_t dim, bool keepdim) {
  if (dim != kAllDims) dim = detail::normalize_dim_or_throw(dim, x.dim(), op_name(op));
  return run_op(op, make_reduce(dim, keepdim), {&x});
}

// A scalar operand of where() as a 0-d tensor of the dtype where() gives it with `other`
// (torch.result_type(other, s)): as a 0-d tensor it then takes part in promotion no more than
// the Python scalar would. Like torch.where, the value must fit that dtype (full checks it).
Tensor scalar_operand(Scalar s, const Tensor* other) {
  detail::checked_exact(s, "where");
  const ScalarKind k = detail::scalar_kind(s);
  DType dt;
  if (other != nullptr) {
    dt = promote_with_scalar(other->dtype(), k);
  } else {
    dt = k == ScalarKind::kBool ? DType::kBool : k == ScalarKind::kInt ? DType::kInt64 : DType::kFloat32;
  }
  return full({}, s, dt);
}

// What the indices of max/min(dim) are computed on: a bool tensor (which argmax refuses, as
// torch does) as int32, whose maxima sit at the same places.
Tensor index_source(const Tensor& x) {
  return x.dtype() == DType::kBool ? x.cast(DType::kInt32) : x;
}

}  // namespace

// ---- the table-shaped ops of gt/tensor_api.def ---------------------------------------------------
#define GT_API_UNARY(name, functional)                                  \
  Tensor Tensor::name() const { return unary(OpId::k_##name, *this); } \
  Tensor name(const Tensor& x) { return x.name(); }
#define GT_API_BINARY(name, py_dunder)                                             \
  Tensor Tensor::name(const Tensor& o) const { return binary(OpId::k_##name, *this, o); } \
  Tensor Tensor::name(Scalar o) const {                                            \
    return binary_scalar(OpId::k_##name, *this, o, ScalarSide::kRight);            \
  }                                                                                \
  Tensor name(const Tensor& a, const Tensor& b) { return a.name(b); }              \
  Tensor name(const Tensor& a, Scalar b) { return a.name(b); }                     \
  Tensor name(Scalar a, const Tensor& b) {                                         \
    return binary_scalar(OpId::k_##name, b, a, ScalarSide::kLeft);                 \
  }
#define GT_API_COMPARE(name) GT_API_BINARY(name, none)
#define GT_API_REDUCE(name)                                                          \
  Tensor Tensor::name() const { return reduce(OpId::k_##name, *this, kAllDims, false); } \
  Tensor Tensor::name(int64_t dim, bool keepdim) const {                             \
    return reduce(OpId::k_##name, *this, dim, keepdim);                              \
  }                                                                                  \
  Tensor name(const Tensor& x) { return x.name(); }                                  \
  Tensor name(const Tensor& x, int64_t dim, bool keepdim) { return x.name(dim, keepdim); }
#define GT_API_REDUCE_INDEXED(name, index_op)                                            \
  Tensor Tensor::name() const { return reduce(OpId::k_##name, *this, kAllDims, false); }  \
  std::tuple<Tensor, Tensor> Tensor::name(int64_t dim, bool keepdim) const {            \
    return {reduce(OpId::k_##name, *this, dim, keepdim),                               \
            reduce(OpId::k_##index_op, index_source(*this), dim, keepdim)};            \
  }                                                                                     \
  Tensor name(const Tensor& x) { return x.name(); }                                     \
  std::tuple<Tensor, Tensor> name(const Tensor& x, int64_t dim, bool keepdim) {         \
    return x.name(dim, keepdim);                                                        \
  }
#define GT_API_OPERATOR(symbol, name)                                               \
  Tensor operator symbol(const Tensor& a, const Tensor& b) { return ::gt::name(a, b); } \
  Tensor operator symbol(const Tensor& a, Scalar b) { return ::gt::name(a, b); }        \
  Tensor operator symbol(Scalar a, const Tensor& b) { return ::gt::name(a, b); }
#include "gt/tensor_api.def"

Tensor operator-(const Tensor& a) { return a.neg(); }

// Bitwise not in two's complement is -x - 1 (with wrap-around: ~INT_MIN == INT_MAX), so no op
// of its own is needed; on bool it is logical not.
Tensor Tensor::bitwise_not() const {
  if (dtype() == DType::kBool) return eq(Scalar(false));
  if (is_floating(dtype()))
    throw Error(Code::kInvalidArgument, "bitwise_not: only integer and bool tensors, got " +
                                            std::string(dtype_name(dtype())));
  return neg().sub(Scalar(1));
}
Tensor bitwise_not(const Tensor& x) { return x.bitwise_not(); }
Tensor operator~(const Tensor& a) { return a.bitwise_not(); }

namespace {
std::atomic<MatmulPrecision> g_matmul_precision{MatmulPrecision::kHighest};
constexpr std::pair<MatmulPrecision, const char*> kPrecisions[] = {
    {MatmulPrecision::kHighest, "highest"},
    {MatmulPrecision::kHigh, "high"},
    {MatmulPrecision::kMedium, "medium"}};
Tensor matmul_op(const Tensor& a, const Tensor& b) {
  return run_op(OpId::k_matmul, make_matmul(g_matmul_precision.load(std::memory_order_relaxed)),
                {&a, &b});
}
}  // namespace

void set_float32_matmul_precision(std::string_view precision) {
  for (const auto& [p, name] : kPrecisions)
    if (precision == name) {
      g_matmul_precision.store(p);
      return;
    }
  throw Error(Code::kInvalidArgument,
              "set_float32_matmul_precision: '" + std::string(precision) +
                  "' is not one of 'highest', 'high', 'medium'");
}

std::string get_float32_matmul_precision() {
  const MatmulPrecision p = g_matmul_precision.load();
  for (const auto& [q, name] : kPrecisions)
    if (p == q) return name;
  return "highest";
}

Tensor Tensor::matmul(const Tensor& o) const { return matmul_op(*this, o); }

Tensor matmul(const Tensor& a, const Tensor& b) { return matmul_op(a, b); }

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

}  // namespace gt
