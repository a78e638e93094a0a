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
    case DType::kFloat64: return 8;
    case DType::kInt8: return 1;
    case DType::kUInt8: return 1;
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
    case DType::kFloat64: return "float64";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
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
  if (n == "float64" || n == "double" || n == "f64") return DType::kFloat64;
  if (n == "int8" || n == "i8") return DType::kInt8;
  if (n == "uint8" || n == "u8") return DType::kUInt8;
  return std::nullopt;
}

namespace {
int category(DType d) { return d == DType::kBool ? 0 : is_integral(d) ? 1 : 2; }
}  // namespace

DType promote(DType a, DType b) {
  if (a == b) return a;
  int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 1) {
    // The wider wins; int8 with uint8 is torch's int16, which GT does not have: int32.
    if (a == DType::kInt64 || b == DType::kInt64) return DType::kInt64;
    return DType::kInt32;
  }
  // Both floating and different: the wider wins, and float16 with bfloat16 gives float32.
  if (a == DType::kFloat64 || b == DType::kFloat64) return DType::kFloat64;
  return DType::kFloat32;
}

// PyTorch's combine_categories(higher, lower) for real dtypes: the higher-priority class keeps
// its dtype unless it is bool or the lower class is floating (then they promote).
DType promote_ranked(DType a, bool a_zero_dim, DType b, bool b_zero_dim) {
  if (a_zero_dim == b_zero_dim) return promote(a, b);
  const DType dim = a_zero_dim ? b : a, zero = a_zero_dim ? a : b;
  if (is_floating(dim)) return dim;
  if (dim == DType::kBool || is_floating(zero)) return promote(dim, zero);
  return dim;
}

DType promote_with_scalar(DType t, ScalarKind k) {
  switch (k) {
    case ScalarKind::kBool: return t;
    case ScalarKind::kInt: return t == DType::kBool ? DType::kInt64 : t;
    case ScalarKind::kFloat: return is_floating(t) ? t : DType::kFloat32;
  }
  return t;
}

bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != DType::kBool && to == DType::kBool) return false;
  return true;
}

bool scalar_fits(DType dt, double value, std::optional<int64_t> exact) {
  switch (dt) {
    case DType::kBool: return true;
    case DType::kInt32:
      if (exact) return *exact >= INT32_MIN && *exact <= INT32_MAX;
      return value >= -2147483648.0 && value <= 2147483647.0;  // false for NaN
    case DType::kInt64:
      if (exact) return true;
      return value >= -9223372036854775808.0 && value < 9223372036854775808.0;
    case DType::kInt8:
      if (exact) return *exact >= -128 && *exact <= 127;
      return value >= -128.0 && value <= 127.0;
    case DType::kUInt8:  // c10's overflows(): negative integers down to -255 wrap (-1 is 255);
                         // a floating value must lie in [0, 255]
      if (exact) return *exact >= -255 && *exact <= 255;
      return value >= 0.0 && value <= 255.0;
    case DType::kFloat64: return true;
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16: {
      const double v = exact ? static_cast<double>(*exact) : value;
      if (!(v - v == 0)) return true;  // inf and NaN convert to themselves
      const double max = dt == DType::kFloat32   ? 3.4028234663852886e38
                         : dt == DType::kFloat16 ? 65504.0
                                                 : 3.3895313892515355e38;
      return v >= -max && v <= max;
    }
  }
  return false;
}

}  // namespace gt
