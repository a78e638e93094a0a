// Public dtype names (libtorch spelling). gt::DType itself is libgtcore's wire enum; these are
// aliases of its values, so gt::kFloat32 == gt::DType::kFloat32.
#pragma once

#include "gt/core/dtype.h"
#include "gt/core/half.h"

namespace gt {

inline constexpr DType kFloat32 = DType::kFloat32;
inline constexpr DType kFloat16 = DType::kFloat16;
inline constexpr DType kBFloat16 = DType::kBFloat16;
inline constexpr DType kInt32 = DType::kInt32;
inline constexpr DType kInt64 = DType::kInt64;
inline constexpr DType kBool = DType::kBool;
inline constexpr DType kFloat64 = DType::kFloat64;
inline constexpr DType kInt8 = DType::kInt8;
inline constexpr DType kUInt8 = DType::kUInt8;

// libtorch's short names.
inline constexpr DType kFloat = kFloat32;
inline constexpr DType kHalf = kFloat16;
inline constexpr DType kInt = kInt32;
inline constexpr DType kLong = kInt64;
inline constexpr DType kDouble = kFloat64;
inline constexpr DType kChar = kInt8;
inline constexpr DType kByte = kUInt8;

// Host element types for float16 / bfloat16 data (libtorch: c10::Half, c10::BFloat16).
using Half = half;
using BFloat16 = bfloat16;

}  // namespace gt
