#include "libgtcore/op_attrs.h"

namespace gt {

OpAttrs make_shape_dtype(const Shape& s, DType dt) {
  OpAttrs a;
  a.shape = s;
  a.has_shape = true;
  a.dtype = dt;
  return a;
}

OpAttrs make_full(const Shape& s, DType dt, double value, std::optional<int64_t> exact) {
  OpAttrs a = make_shape_dtype(s, dt);
  a.push_real(value);
  if (exact) a.push_int(*exact);
  return a;
}

OpAttrs make_arange(double start, double stop, double step, DType dt) {
  OpAttrs a;
  a.dtype = dt;
  a.push_real(start);
  a.push_real(stop);
  a.push_real(step);
  return a;
}

OpAttrs make_random(const Shape& s, DType dt, uint64_t seed, uint64_t counter) {
  OpAttrs a = make_shape_dtype(s, dt);
  a.push_int(static_cast<int64_t>(seed));
  a.push_int(static_cast<int64_t>(counter));
  return a;
}

OpAttrs make_binary_scalar(ScalarSide side, double scalar, ScalarKind kind,
                           std::optional<int64_t> exact) {
  OpAttrs a;
  a.push_int(static_cast<int64_t>(side));
  a.push_int(static_cast<int64_t>(kind));
  a.push_real(scalar);
  if (exact) a.push_int(*exact);
  return a;
}

OpAttrs make_binary_scalar(ScalarSide side, double scalar, bool scalar_is_integral,
                           std::optional<int64_t> exact) {
  return make_binary_scalar(side, scalar, scalar_is_integral ? ScalarKind::kInt : ScalarKind::kFloat,
                            exact);
}

OpAttrs make_reduce(int64_t dim, bool keepdim) {
  OpAttrs a;
  a.push_int(dim);
  a.push_int(keepdim ? 1 : 0);
  return a;
}

OpAttrs make_reshape(const Shape& s) {
  OpAttrs a;
  a.shape = s;
  a.has_shape = true;
  return a;
}

OpAttrs make_permute(std::span<const int64_t> perm) {
  OpAttrs a;
  for (int64_t p : perm) a.push_int(p);
  return a;
}

OpAttrs make_axis(int64_t axis) {
  OpAttrs a;
  a.push_int(axis);
  return a;
}

OpAttrs make_cast(DType dt) {
  OpAttrs a;
  a.dtype = dt;
  return a;
}

OpAttrs make_fill_value(double value, std::optional<int64_t> exact) {
  OpAttrs a;
  a.push_real(value);
  if (exact) a.push_int(*exact);
  return a;
}

OpAttrs make_clamp(std::optional<double> min, std::optional<double> max, bool bounds_integral) {
  OpAttrs a;
  a.push_int(min ? 1 : 0);
  a.push_int(max ? 1 : 0);
  a.push_int(bounds_integral ? 1 : 0);
  a.push_real(min.value_or(0.0));
  a.push_real(max.value_or(0.0));
  return a;
}

OpAttrs make_clamp(std::optional<ClampBound> min, std::optional<ClampBound> max) {
  ScalarKind kind = ScalarKind::kBool;
  if (min) kind = max_kind(kind, min->kind);
  if (max) kind = max_kind(kind, max->kind);
  OpAttrs a;
  a.push_int(min ? 1 : 0);
  a.push_int(max ? 1 : 0);
  a.push_int(static_cast<int64_t>(kind));
  a.push_real(min ? min->value : 0.0);
  a.push_real(max ? max->value : 0.0);
  if (kind != ScalarKind::kFloat && (!min || min->exact) && (!max || max->exact)) {
    a.push_int(min ? *min->exact : 0);
    a.push_int(max ? *max->exact : 0);
  }
  return a;
}

OpAttrs make_var(int64_t dim, bool keepdim, double correction) {
  OpAttrs a = make_reduce(dim, keepdim);
  a.push_real(correction);
  return a;
}

OpAttrs make_matmul(MatmulPrecision precision) {
  OpAttrs a;
  if (precision != MatmulPrecision::kHighest) a.push_int(static_cast<int64_t>(precision));
  return a;
}

OpAttrs make_num_classes(int64_t num_classes) {
  OpAttrs a;
  a.push_int(num_classes);
  return a;
}

OpAttrs make_sort(int64_t dim, bool descending) {
  OpAttrs a;
  a.push_int(dim);
  a.push_int(descending ? 1 : 0);
  return a;
}

OpAttrs make_strided(const Shape& sizes, std::span<const int64_t> strides, int64_t offset) {
  OpAttrs a;
  a.shape = sizes;
  a.has_shape = true;
  a.push_int(offset);
  for (int64_t s : strides) a.push_int(s);
  return a;
}

Result<SliceSpec> resolve_slice(int64_t n, std::optional<int64_t> start_o,
                                std::optional<int64_t> stop_o, int64_t step) {
  if (step == 0) return invalid_argument("slice step cannot be zero");
  SliceSpec s;
  s.step = step;
  auto clamp = [](int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; };
  int64_t start, stop;
  if (step > 0) {
    start = start_o ? (*start_o < 0 ? *start_o + n : *start_o) : 0;
    stop = stop_o ? (*stop_o < 0 ? *stop_o + n : *stop_o) : n;
    start = clamp(start, 0, n);
    stop = clamp(stop, 0, n);
    // 128-bit: a huge step must not overflow (Python allows any step).
    s.count = stop > start ? static_cast<int64_t>((static_cast<__int128>(stop) - start + step - 1) / step) : 0;
  } else {
    start = start_o ? (*start_o < 0 ? *start_o + n : *start_o) : n - 1;
    stop = stop_o ? (*stop_o < 0 ? *stop_o + n : *stop_o) : -1;
    start = clamp(start, -1, n - 1);
    stop = clamp(stop, -1, n - 1);
    __int128 mag = -static_cast<__int128>(step);
    s.count = start > stop ? static_cast<int64_t>((static_cast<__int128>(start) - stop + mag - 1) / mag) : 0;
  }
  s.start = s.count > 0 ? start : 0;
  return s;
}

}  // namespace gt
