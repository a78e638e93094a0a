// OpAttrs: the attributes of one instruction, in a fixed-capacity form (no heap on the hot path).
// The client builds them with the make_* helpers; shape rules and kernels read them through the
// typed accessors. Everything here is data that crossed a process boundary: rules validate it.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

#include "gt/core/dtype.h"
#include "libgtcore/shape.h"

namespace gt {

// Room for a slice (2 per dim) or a collective over kMaxGroup workers (group + extents).
inline constexpr int kMaxInts = 40;
inline constexpr int kMaxReals = 4;
inline constexpr int64_t kAllDims = std::numeric_limits<int64_t>::min();

// Where a binary op's scalar operand sits, if it has one.
enum class ScalarSide : int64_t { kNone = 0, kRight = 1, kLeft = 2 };

// How a float32 matmul may compute (torch.set_float32_matmul_precision): kHighest exactly in
// float32, kHigh may use TF32 tensor cores, kMedium bfloat16 ones. A per-session choice that
// every matmul instruction carries; CPU workers always compute kHighest.
enum class MatmulPrecision : int64_t { kHighest = 0, kHigh = 1, kMedium = 2 };

struct OpAttrs {
  Shape shape;
  bool has_shape = false;
  DType dtype = DType::kFloat32;
  std::array<int64_t, kMaxInts> ints{};
  int n_ints = 0;
  std::array<double, kMaxReals> reals{};
  int n_reals = 0;
  std::string_view data;  // host bytes for from_host / host_chunk (not owned)

  // Capacity is fixed (no heap): extra values are dropped, and the shape rules then reject the
  // instruction for its wrong attribute count.
  void push_int(int64_t v) {
    if (n_ints < kMaxInts) ints[n_ints++] = v;
  }
  void push_real(double v) {
    if (n_reals < kMaxReals) reals[n_reals++] = v;
  }
  int64_t int_at(int i, int64_t dflt = 0) const { return i < n_ints ? ints[i] : dflt; }
  double real_at(int i, double dflt = 0) const { return i < n_reals ? reals[i] : dflt; }

  // kBinary
  ScalarSide scalar_side() const { return static_cast<ScalarSide>(int_at(0)); }
  // ints[1]: a ScalarKind (0 float, 1 integer, 2 bool: nonzero is integral, as before bools
  // were told apart); other values are rejected by the shape rule.
  bool scalar_kind_valid() const { return int_at(1) >= 0 && int_at(1) <= 2; }
  ScalarKind scalar_kind() const { return static_cast<ScalarKind>(int_at(1)); }
  bool scalar_is_integral() const { return int_at(1) != 0; }
  double scalar() const { return real_at(0); }
  // The scalar as an exact integer (ints[2]), when the client sent one: int64 kernels use it,
  // since the double loses integers beyond 2^53.
  std::optional<int64_t> scalar_exact() const {
    return n_ints > 2 ? std::optional<int64_t>(ints[2]) : std::nullopt;
  }
  // kMatmul (checked by the shape rule: at most one int, a MatmulPrecision)
  MatmulPrecision matmul_precision() const {
    return static_cast<MatmulPrecision>(int_at(0, 0));
  }
  // kReduce
  bool reduce_all() const { return int_at(0, kAllDims) == kAllDims; }
  int64_t reduce_dim() const { return int_at(0, kAllDims); }
  bool keepdim() const { return int_at(1) != 0; }
  // kRandom
  uint64_t seed() const { return static_cast<uint64_t>(int_at(0)); }
  uint64_t counter() const { return static_cast<uint64_t>(int_at(1)); }
  // A shard of a bigger random tensor (ints {seed, counter, axis, offset, global extent}):
  // element i takes the value of its position in the whole tensor.
  struct RandomShard {
    int axis;
    int64_t offset, global;
  };
  std::optional<RandomShard> random_shard() const {
    if (n_ints < 5) return std::nullopt;
    return RandomShard{static_cast<int>(ints[2]), ints[3], ints[4]};
  }
  // kSlice: per dim d, start = ints[2d], step = ints[2d+1]; extents in shape
  int64_t slice_start(int d) const { return int_at(2 * d); }
  int64_t slice_step(int d) const { return int_at(2 * d + 1, 1); }
  // kAxis
  int64_t axis() const { return int_at(0); }
  // kHostChunk
  int64_t chunk_offset() const { return int_at(0); }
  // kFillValue (and full)
  double fill_value() const { return real_at(0); }
  // full, masked_fill: the fill value as an exact integer (ints[0]), when the client sent one:
  // int64 kernels use it, since the double loses integers beyond 2^53.
  std::optional<int64_t> fill_exact() const {
    return n_ints > 0 ? std::optional<int64_t>(ints[0]) : std::nullopt;
  }
  // kClamp
  bool has_min() const { return int_at(0) != 0; }
  bool has_max() const { return int_at(1) != 0; }
  // ints[2]: the given bounds' ScalarKind together (max_kind): 0 some bound is a float, 1
  // integers, 2 all bools (nonzero is integral, as before bools were told apart).
  bool bounds_integral() const { return int_at(2) != 0; }
  bool bounds_kind_valid() const { return int_at(2) >= 0 && int_at(2) <= 2; }
  ScalarKind bounds_kind() const { return static_cast<ScalarKind>(int_at(2)); }
  double clamp_min() const { return real_at(0); }
  double clamp_max() const { return real_at(1); }
  // Integral bounds as exact integers (ints[3], ints[4]), when the client sent them.
  std::optional<int64_t> clamp_min_exact() const {
    return n_ints > 4 ? std::optional<int64_t>(ints[3]) : std::nullopt;
  }
  std::optional<int64_t> clamp_max_exact() const {
    return n_ints > 4 ? std::optional<int64_t>(ints[4]) : std::nullopt;
  }
  // kVar (dim and keepdim as kReduce)
  double correction() const { return real_at(0, 1.0); }
  // kSort (the dim as kAxis)
  bool descending() const { return int_at(1) != 0; }
  // kNumClasses
  int64_t num_classes() const { return int_at(0); }
  // kStrided: sizes in shape; the first position, then one stride per dim (in elements)
  int64_t strided_offset() const { return int_at(0); }
  int64_t strided_stride(int d) const { return int_at(1 + d); }
};

// Builders (client side).
OpAttrs make_shape_dtype(const Shape& s, DType dt);
OpAttrs make_full(const Shape& s, DType dt, double value,
                  std::optional<int64_t> exact = std::nullopt);
OpAttrs make_arange(double start, double stop, double step, DType dt);
OpAttrs make_random(const Shape& s, DType dt, uint64_t seed, uint64_t counter);
OpAttrs make_binary_scalar(ScalarSide side, double scalar, ScalarKind kind,
                           std::optional<int64_t> exact = std::nullopt);
// `scalar_is_integral`: an integer scalar (kInt).
OpAttrs make_binary_scalar(ScalarSide side, double scalar, bool scalar_is_integral,
                           std::optional<int64_t> exact = std::nullopt);
OpAttrs make_reduce(int64_t dim, bool keepdim);  // dim = kAllDims for all elements
OpAttrs make_reshape(const Shape& s);
OpAttrs make_permute(std::span<const int64_t> perm);
OpAttrs make_axis(int64_t axis);
OpAttrs make_cast(DType dt);
OpAttrs make_fill_value(double value, std::optional<int64_t> exact = std::nullopt);
// Either bound may be absent; `bounds_integral`: every given bound is an integer scalar.
OpAttrs make_clamp(std::optional<double> min, std::optional<double> max, bool bounds_integral);
// A bound: its value, and its exact integer when it is one.
struct ClampBound {
  double value = 0;
  ScalarKind kind = ScalarKind::kFloat;
  std::optional<int64_t> exact;
};
OpAttrs make_clamp(std::optional<ClampBound> min, std::optional<ClampBound> max);
OpAttrs make_var(int64_t dim, bool keepdim, double correction);  // dim = kAllDims for all
OpAttrs make_num_classes(int64_t num_classes);
OpAttrs make_sort(int64_t dim, bool descending);
// matmul's attributes: its float32 precision (AttrKind::kMatmul); kHighest sends none.
OpAttrs make_matmul(MatmulPrecision precision);
// A strided view of a tensor's elements: `sizes`, one stride per dim, the first position.
OpAttrs make_strided(const Shape& sizes, std::span<const int64_t> strides, int64_t offset);

// Python-style slice of one dim, resolved against its extent (numpy semantics, any step sign).
struct SliceSpec {
  int64_t start = 0, count = 0, step = 1;
};
Result<SliceSpec> resolve_slice(int64_t extent, std::optional<int64_t> start,
                                std::optional<int64_t> stop, int64_t step);

}  // namespace gt
