#include "gt/core/dtype.h"

namespace gt {

size_t dtype_size(DType d) {
  switch (d) {
    case DType::kFloat32: return 4;
    case DType::kFloat16: return 2;
    case DType::kBFloat16: return 2;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kBool: return 1;
  }
  return 0;
}

const char* dtype_name(DType d) {
  switch (d) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kBool: return "bool";
  }
  return "invalid";
}

std::optional<DType> dtype_from_name(std::string_view n) {
  if (n == "float32" || n == "float" || n == "f32") return DType::kFloat32;
  if (n == "float16" || n == "half" || n == "f16") return DType::kFloat16;
  if (n == "bfloat16" || n == "bf16") return DType::kBFloat16;
  if (n == "int32" || n == "int" || n == "i32") return DType::kInt32;
  if (n == "int64" || n == "long" || n == "i64") return DType::kInt64;
  if (n == "bool") return DType::kBool;
  return std::nullopt;
}

namespace {
int category(DType d) { return d == DType::kBool ? 0 : is_integral(d) ? 1 : 2; }
}  // namespace

DType promote(DType a, DType b) {
  if (a == b) return a;
  int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 1) return DType::kInt64;  // int32 with int64
  // Both floating and different.
  if (a == DType::kFloat32 || b == DType::kFloat32) return DType::kFloat32;
  return DType::kFloat32;  // float16 with bfloat16
}

DType promote_with_scalar(DType t, bool scalar_is_integral) {
  if (scalar_is_integral) return t == DType::kBool ? DType::kInt64 : t;
  return is_floating(t) ? t : DType::kFloat32;
}

}  // namespace gt
