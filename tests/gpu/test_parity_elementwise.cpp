// CUDA vs CPU parity: creation, unary, binary/compare (same shape, broadcast, scalar, mixed
// dtypes), where, masked_fill, clamp, cast, copy_.
#include <fmt/format.h>

#include <array>

#include "tests/gpu/parity_harness.h"
#include "tests/reference/unary_reference.h"
#include "require_ok.h"

namespace gt::gpu_test {
namespace {

TEST_CASE("cuda parity: creation ops", "[.gpu]") {
  GT_REQUIRE_GPU();
  for (int64_t n : sizes()) {
    for (DType dt : dtypes()) {
      const Shape s{n};
      check_op(OpId::k_zeros, make_shape_dtype(s, dt), {}, "zeros " + describe(s, dt));
      check_op(OpId::k_ones, make_shape_dtype(s, dt), {}, "ones " + describe(s, dt));
      check_op(OpId::k_full, make_full(s, dt, -3.75), {}, "full " + describe(s, dt));
      check_op(OpId::k_arange, make_arange(-5.0, -5.0 + 0.5 * static_cast<double>(n), 0.5, dt), {},
               "arange " + describe(s, dt));
      for (uint64_t counter : {0ull, 7ull, 1ull << 33}) {
        const OpAttrs r = make_random(Shape{n, 3}, dt, 0x1234567890abcdefull, counter);
        // Box-Muller in double on both sides: float rounding only (default tolerances).
        check_op(OpId::k_rand, r, {}, "rand " + describe(s, dt));
        check_op(OpId::k_randn, r, {}, "randn " + describe(s, dt));
      }
    }
  }
  // A shard of a random tensor (ints {seed, counter, axis, offset, global}).
  OpAttrs shard = make_random(Shape{4, 5, 6}, DType::kFloat32, 42, 3);
  shard.push_int(1);
  shard.push_int(2);
  shard.push_int(9);
  check_op(OpId::k_randn, shard, {}, "randn shard");
  check_op(OpId::k_rand, shard, {}, "rand shard");
}

TEST_CASE("cuda parity: unary ops", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(1);
  const std::vector<OpId> ops = gt::reference::unary_ops();  // the family, from the op table
  for (int64_t n : sizes()) {
    for (DType dt : dtypes()) {
      const Shape s{n};
      const Pair x = random_pair(s, dt, rng, -6, 6);
      const Pair pos = random_pair(s, dt, rng, 0.01, 9);
      for (OpId op : ops) {
        auto ref = gt::reference::unary_reference(op);
        const bool needs_pos = ref && ref->lo > 0;
        // Float32 transcendental functions: CUDA's expf/logf/tanhf are within 2 ulp.
        Tol tol = default_tol(is_floating(dt) ? dt : DType::kFloat32);
        if (tol.rtol < 4e-6) tol = {4e-6, 1e-6};
        check_op(op, OpAttrs{}, {needs_pos ? &pos : &x},
                 fmt::format("{} {}", op_name(op), describe(s, dt)), tol);
      }
    }
  }
}

const std::array<OpId, 13> kBinary{OpId::k_add, OpId::k_sub, OpId::k_mul, OpId::k_div,
                                   OpId::k_pow, OpId::k_maximum, OpId::k_minimum, OpId::k_eq,
                                   OpId::k_ne, OpId::k_lt, OpId::k_le, OpId::k_gt, OpId::k_ge};

Tol binary_tol(OpId op, DType dt) {
  Tol t = default_tol(is_floating(dt) ? dt : DType::kFloat32);
  if (op == OpId::k_pow) t = {std::max(t.rtol, 1e-5), std::max(t.atol, 1e-5)};
  return t;
}

TEST_CASE("cuda parity: binary ops, same shape and scalars", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(2);
  for (int64_t n : sizes()) {
    for (DType dt : dtypes()) {
      const Shape s{n};
      const Pair a = random_pair(s, dt, rng, -4, 4);
      const Pair b = random_pair(s, dt, rng, 0.25, 3);  // positive: pow and div stay tame
      for (OpId op : kBinary) {
        const std::string w = fmt::format("{} {}", op_name(op), describe(s, dt));
        check_op(op, OpAttrs{}, {&a, &b}, w, binary_tol(op, dt));
        check_op(op, make_binary_scalar(ScalarSide::kRight, 2.0, true), {&a}, w + " scalar right",
                 binary_tol(op, dt));
        check_op(op, make_binary_scalar(ScalarSide::kLeft, 1.5, false), {&b}, w + " scalar left",
                 binary_tol(op, dt));
      }
    }
  }
}

// Python's // and %: the divisor kept away from 0 (the CPU refuses an integer zero divisor;
// the CUDA kernel defines that result as 0).
TEST_CASE("cuda parity: floor_divide and remainder", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(7);
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32,
                   DType::kInt64}) {
    const Shape s{1025};
    const Pair a = random_pair(s, dt, rng, -40, 40);
    const Pair b = random_pair(s, dt, rng, 1, 7);
    for (OpId op : {OpId::k_floor_divide, OpId::k_remainder}) {
      const std::string w = fmt::format("{} {}", op_name(op), describe(s, dt));
      check_op(op, OpAttrs{}, {&a, &b}, w, binary_tol(op, dt));
      check_op(op, make_binary_scalar(ScalarSide::kRight, -3.0, true), {&a}, w + " scalar right",
               binary_tol(op, dt));
      check_op(op, make_binary_scalar(ScalarSide::kLeft, 5.5, false), {&b}, w + " scalar left",
               binary_tol(op, dt));
    }
  }
}

// Exact int64 scalars (ints after the double, sent by clients for integers beyond 2^53).
TEST_CASE("cuda parity: exact int64 scalars in full and binary ops", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(6);
  const int64_t big = (int64_t{1} << 60) + 12345;
  OpAttrs f = make_full(Shape{1023}, DType::kInt64, static_cast<double>(big));
  f.push_int(big);
  check_op(OpId::k_full, f, {}, "full int64 exact");
  const Pair a = random_pair(Shape{4097}, DType::kInt64, rng, -1e6, 1e6);
  for (OpId op : {OpId::k_add, OpId::k_sub, OpId::k_mul, OpId::k_maximum, OpId::k_eq, OpId::k_lt}) {
    for (ScalarSide side : {ScalarSide::kRight, ScalarSide::kLeft}) {
      OpAttrs b = make_binary_scalar(side, static_cast<double>(big), true);
      b.push_int(big);
      check_op(op, b, {&a}, fmt::format("{} int64 exact scalar", op_name(op)));
    }
  }
  // Scalars are converted to the operand dtype first (issue 18): int32 wraps 2^40 + 7 to 7,
  // float16 rounds 70000. to inf; masked_fill and clamp take exact int64 values.
  const Pair i32 = random_pair(Shape{1023}, DType::kInt32, rng, -1e6, 1e6);
  const Pair f16 = random_pair(Shape{1023}, DType::kFloat16, rng, -4, 4);
  const int64_t wraps = (int64_t{1} << 40) + 7;
  for (OpId op : {OpId::k_add, OpId::k_mul, OpId::k_eq, OpId::k_lt}) {
    check_op(op, make_binary_scalar(ScalarSide::kRight, static_cast<double>(wraps), true, wraps),
             {&i32}, fmt::format("{} int32 with a wrapping scalar", op_name(op)));
    check_op(op, make_binary_scalar(ScalarSide::kLeft, 70000.0, false), {&f16},
             fmt::format("{} float16 with 70000.", op_name(op)));
  }
  const Pair mask = random_pair(Shape{4097}, DType::kBool, rng);
  check_op(OpId::k_masked_fill, make_fill_value(static_cast<double>(big), big), {&a, &mask},
           "masked_fill int64 exact");
  check_op(OpId::k_clamp,
           make_clamp(ClampBound{static_cast<double>(-big), ScalarKind::kInt, -big},
                      ClampBound{static_cast<double>(big), ScalarKind::kInt, big}),
           {&a}, "clamp int64 exact");
  check_op(OpId::k_clamp, make_clamp(ClampBound{static_cast<double>(big), ScalarKind::kInt, big}, std::nullopt),
           {&a}, "clamp int64 exact min");
}

TEST_CASE("cuda parity: binary ops, broadcasting and mixed dtypes", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(3);
  // The vectorized N-d loop (elementwise_loop.cuh) takes shapes whose innermost extent is a
  // multiple of the vector width, with each input's innermost stride 1 or 0: [64, 8] with
  // [64, 1] (a repeated value per vector), [5, 16] with [16]; the rest fall back to one element.
  const std::array<std::pair<Shape, Shape>, 9> shapes{{
      {Shape{64, 8}, Shape{64, 1}},
      {Shape{5, 16}, Shape{16}},
      {Shape{3, 1, 32}, Shape{1, 4, 32}},
      {Shape{7, 1}, Shape{1, 5}},
      {Shape{1023, 3}, Shape{3}},
      {Shape{2, 1, 4097}, Shape{3, 1}},
      {Shape{}, Shape{4, 7}},
      {Shape{0, 3}, Shape{1, 3}},
      {Shape{5, 1, 1}, Shape{1, 6, 7}},
  }};
  const std::array<std::pair<DType, DType>, 5> types{{
      {DType::kFloat32, DType::kFloat32},
      {DType::kBFloat16, DType::kBFloat16},
      {DType::kFloat16, DType::kFloat32},
      {DType::kInt64, DType::kFloat16},
      {DType::kBool, DType::kInt64},
  }};
  for (const auto& [sa, sb] : shapes) {
    for (const auto& [ta, tb] : types) {
      const Pair a = random_pair(sa, ta, rng, -4, 4);
      const Pair b = random_pair(sb, tb, rng, 0.25, 3);
      for (OpId op : kBinary) {
        const std::string w = fmt::format("{} {} with {}", op_name(op), describe(sa, ta),
                                          describe(sb, tb));
        check_op(op, OpAttrs{}, {&a, &b}, w, binary_tol(op, promote(ta, tb)));
      }
    }
  }
}

TEST_CASE("cuda parity: where, masked_fill, clamp", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(4);
  for (int64_t n : sizes()) {
    for (DType dt : dtypes()) {
      const Shape s{n, 3};
      const Pair cond = random_pair(s, DType::kBool, rng);
      const Pair cond_row = random_pair(Shape{1, 3}, DType::kBool, rng);
      const Pair a = random_pair(s, dt, rng, -4, 4);
      const Pair b = random_pair(Shape{3}, DType::kFloat32, rng, -4, 4);
      const std::string w = describe(s, dt);
      check_op(OpId::k_where, OpAttrs{}, {&cond, &a, &b}, "where " + w);
      check_op(OpId::k_where, OpAttrs{}, {&cond_row, &a, &a}, "where row cond " + w);
      check_op(OpId::k_masked_fill, make_fill_value(-1.5), {&a, &cond}, "masked_fill " + w);
      check_op(OpId::k_masked_fill, make_fill_value(7), {&a, &cond_row}, "masked_fill row " + w);
      check_op(OpId::k_clamp, make_clamp(-1.0, 2.0, true), {&a}, "clamp int bounds " + w);
      check_op(OpId::k_clamp, make_clamp(-0.5, std::nullopt, false), {&a}, "clamp min " + w);
      check_op(OpId::k_clamp, make_clamp(std::nullopt, 0.75, false), {&a}, "clamp max " + w);
      check_op(OpId::k_clamp, make_clamp(3.0, -3.0, true), {&a}, "clamp lo > hi " + w);
    }
  }
}

TEST_CASE("cuda parity: cast and copy_", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(5);
  const std::vector<DType> all{DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                               DType::kInt32, DType::kInt64, DType::kBool};
  for (int64_t n : sizes()) {
    for (DType from : all) {
      const Shape s{n};
      // Out-of-range and fractional values exercise truncation and saturation.
      std::vector<double> v = random_values(n, from, rng, -3e9, 3e9);
      if (n > 0) v[0] = is_floating(from) ? 2.5 : 1;
      const Pair x = upload(s, from, v);
      for (DType to : all)
        check_op(OpId::k_cast, make_cast(to), {&x},
                 fmt::format("cast {} -> {}", describe(s, from), dtype_name(to)));
    }
  }
  for (DType dt : dtypes()) {
    for (DType src_dt : {DType::kFloat32, DType::kInt64}) {
      Pair dst = random_pair(Shape{4, 1023}, dt, rng);
      const Pair row = random_pair(Shape{1023}, src_dt, rng);
      // In place: the kernel writes `dst` itself.
      Backends* b = backends();
      std::vector<const Tensor*> ci{&dst.c, &row.c}, gi{&dst.g, &row.g};
      GT_REQUIRE_OK(b->cpu.run(KernelArgs{OpId::k_copy_, OpAttrs{}, ci, dst.c, 1}));
      GT_REQUIRE_OK(b->gpu->run(KernelArgs{OpId::k_copy_, OpAttrs{}, gi, dst.g, 1}));
      expect_close(dst, default_tol(dt), "copy_ broadcast row " + describe(Shape{4, 1023}, dt));
    }
  }
}

}  // namespace
}  // namespace gt::gpu_test
