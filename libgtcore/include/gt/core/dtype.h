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
};
inline constexpr int kNumDTypes = 6;

inline bool is_valid_dtype(int v) { return v >= 0 && v < kNumDTypes; }
size_t dtype_size(DType d);
const char* dtype_name(DType d);                       // "float32", "int64", ...
std::optional<DType> dtype_from_name(std::string_view name);  // accepts "float32"/"float"/"f32", ...
inline bool is_floating(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16;
}
inline bool is_integral(DType d) { return d == DType::kInt32 || d == DType::kInt64; }

// Type promotion for binary ops (PyTorch's category rules): bool < integers < floats; within
// floats the wider wins and float16 with bfloat16 gives float32.
DType promote(DType a, DType b);
// Promotion with a Python-style scalar operand: a float scalar lifts bool/int tensors to
// float32, an integer scalar lifts bool tensors to int64; otherwise the tensor's dtype wins.
DType promote_with_scalar(DType tensor, bool scalar_is_integral);

// Compile-time mapping used by kernels.
template <DType D> struct dtype_traits;
template <> struct dtype_traits<DType::kFloat32> { using type = float; };
template <> struct dtype_traits<DType::kFloat16> { using type = half; };
template <> struct dtype_traits<DType::kBFloat16> { using type = bfloat16; };
template <> struct dtype_traits<DType::kInt32> { using type = int32_t; };
template <> struct dtype_traits<DType::kInt64> { using type = int64_t; };
template <> struct dtype_traits<DType::kBool> { using type = bool; };
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
    }                                                                          \
    using T = float;                                                           \
    return __VA_ARGS__();                                                      \
  }()

}  // namespace gt
