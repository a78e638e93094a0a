// Shared shorthand of the shape/dtype rule tests (test_shape_rules.cpp, test_dtype_rules.cpp):
// dtype names, a TensorMeta maker and infer_meta with default attributes.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "libgtcore/shape_rules.h"

namespace gt::rule_test {

inline constexpr DType F32 = DType::kFloat32;
inline constexpr DType F16 = DType::kFloat16;
inline constexpr DType BF16 = DType::kBFloat16;
inline constexpr DType I32 = DType::kInt32;
inline constexpr DType I64 = DType::kInt64;
inline constexpr DType BOOL = DType::kBool;
inline constexpr DType F64 = DType::kFloat64;
inline constexpr DType I8 = DType::kInt8;
inline constexpr DType U8 = DType::kUInt8;
inline constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

inline TensorMeta M(Shape s, DType d = F32) { return TensorMeta{s, d}; }

inline Result<TensorMeta> infer(OpId op, const std::vector<TensorMeta>& in,
                                const OpAttrs& a = {}) {
  return infer_meta(op, in, a);
}

}  // namespace gt::rule_test
