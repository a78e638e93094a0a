// Element types. The numeric values are the wire values (proto gt.v1.DType) and never change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "gt/core/half.h"

namespace gt {

enum class DType : uint8_t {
  kFloat32 = 0,
  kFloat16 = 1,
  kBFloat16 = 2,
  kInt32 = 3,
  kInt64 = 4,
  kBool = 5,
  kFloat64 = 6,
  kInt8 = 7,
  kUInt8 = 8,
};
inline constexpr int kNumDTypes = 9;

inline bool is_valid_dtype(int v) { return v >= 0 && v < kNumDTypes; }
size_t dtype_size(DType d);
const char* dtype_name(DType d);                       // "float32", "int64", ...
std::optional<DType> dtype_from_name(std::string_view name);  // accepts "float32"/"float"/"f32", ...
inline bool is_floating(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16 || d == DType::kFloat64;
}
inline bool is_integral(DType d) {
  return d == DType::kInt32 || d == DType::kInt64 || d == DType::kInt8 || d == DType::kUInt8;
}

// Type promotion, PyTorch's (torch.result_type). Operands come in three priority classes:
// tensors with dims > zero-dim tensors > Python-style scalars ("wrapped numbers"), and dtypes in
// three categories: bool < integer < floating. The result is the promotion within the highest
// class present, unless a lower class holds a higher category: then that lower class's dtype
// joins the promotion (a float scalar lifts an int tensor to float32, a 0-d float16 lifts it to
// float16, but int32[n] + int64[] stays int32 and float16[n] * float32[] stays float16).
//
// promote: two operands of the same class (bool < integers < floats by category; within floats
// the wider wins and float16 with bfloat16 gives float32; within integers the wider wins, and
// int8 with uint8 gives int32 — torch's int16, which GT does not have).
DType promote(DType a, DType b);
// Two tensor operands, each with dims or zero-dim (PyTorch's dimensioned / zero-dim classes).
DType promote_ranked(DType a, bool a_zero_dim, DType b, bool b_zero_dim);

// A Python-style scalar operand's category. The values are the wire values of the kBinary
// scalar attribute (op_attrs.h): 0 and 1 kept their old meaning (float / integer) when bool
// was added as 2, so "nonzero = integral" still holds.
enum class ScalarKind : uint8_t { kFloat = 0, kInt = 1, kBool = 2 };
// The kind of a scalar of category max(a, b) (clamp's two bounds promote together).
inline ScalarKind max_kind(ScalarKind a, ScalarKind b) {
  auto rank = [](ScalarKind k) { return k == ScalarKind::kBool ? 0 : k == ScalarKind::kInt ? 1 : 2; };
  return rank(a) >= rank(b) ? a : b;
}
// A tensor (any rank) with a scalar operand: the tensor's dtype unless the scalar's category is
// higher: a float scalar gives float32 to bool/int tensors, an integer scalar int64 to bool
// tensors; a bool scalar never changes the dtype.
DType promote_with_scalar(DType tensor, ScalarKind scalar);
// The older form: `scalar_is_integral` means an integer scalar (bools included).
inline DType promote_with_scalar(DType tensor, bool scalar_is_integral) {
  return promote_with_scalar(tensor, scalar_is_integral ? ScalarKind::kInt : ScalarKind::kFloat);
}

// Whether a result of dtype `from` may be written into a tensor of dtype `to` by an in-place
// op (PyTorch's canCast): never floating into integer or bool, nor integer into bool.
bool can_cast(DType from, DType to);

// Whether `value` fits dtype `dt` when converted like PyTorch's checked scalar conversion (the
// value of torch.full, masked_fill, fill_, a clamp bound): bool takes anything; integers need
// a value inside their range (NaN and infinities do not fit); floating types take infinities and
// NaN but not a finite value beyond their largest (float16 70000. does not fit). `exact`: the
// value as an exact integer, when it is one.
bool scalar_fits(DType dt, double value, std::optional<int64_t> exact = std::nullopt);

// Compile-time mapping used by kernels.
template <DType D> struct dtype_traits;
template <> struct dtype_traits<DType::kFloat32> { using type = float; };
template <> struct dtype_traits<DType::kFloat16> { using type = half; };
template <> struct dtype_traits<DType::kBFloat16> { using type = bfloat16; };
template <> struct dtype_traits<DType::kInt32> { using type = int32_t; };
template <> struct dtype_traits<DType::kInt64> { using type = int64_t; };
template <> struct dtype_traits<DType::kBool> { using type = bool; };
template <> struct dtype_traits<DType::kFloat64> { using type = double; };
template <> struct dtype_traits<DType::kInt8> { using type = int8_t; };
template <> struct dtype_traits<DType::kUInt8> { using type = uint8_t; };
template <DType D> using ctype_t = typename dtype_traits<D>::type;

// GT_DISPATCH_DTYPE(dtype, T, body): runs `body` with `T` bound to the C++ element type.
#define GT_DISPATCH_DTYPE(dt, T, ...)                                          \
  [&] {                                                                        \
    switch (dt) {                                                              \
      case ::gt::DType::kFloat32: { using T = float; return __VA_ARGS__(); }   \
      case ::gt::DType::kFloat16: { using T = ::gt::half; return __VA_ARGS__(); } \
      case ::gt::DType::kBFloat16: { using T = ::gt::bfloat16; return __VA_ARGS__(); } \
      case ::gt::DType::kInt32: { using T = int32_t; return __VA_ARGS__(); }   \
      case ::gt::DType::kInt64: { using T = int64_t; return __VA_ARGS__(); }   \
      case ::gt::DType::kBool: { using T = bool; return __VA_ARGS__(); }       \
      case ::gt::DType::kFloat64: { using T = double; return __VA_ARGS__(); }  \
      case ::gt::DType::kInt8: { using T = int8_t; return __VA_ARGS__(); }     \
      case ::gt::DType::kUInt8: { using T = uint8_t; return __VA_ARGS__(); }   \
    }                                                                          \
    using T = float;                                                           \
    return __VA_ARGS__();                                                      \
  }()

}  // namespace gt
