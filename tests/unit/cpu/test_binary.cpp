// Binary elementwise ops and comparisons against a naive double-precision reference that walks
// every output multi-index and finds each operand's element by numpy broadcasting.
#include <climits>
#include <cmath>
#include <limits>

#include "tests/unit/cpu/cpu_test_util.h"
#include "require_ok.h"

namespace gt::test {
namespace {

GT_TESTS_OPS("add", "sub", "mul", "div", "pow", "maximum", "minimum", "floor_divide", "remainder",
             "eq", "ne", "lt", "le", "gt", "ge");

const std::vector<OpId> kArith = {OpId::k_add, OpId::k_sub, OpId::k_mul, OpId::k_div,
                                  OpId::k_pow, OpId::k_maximum, OpId::k_minimum,
                                  OpId::k_floor_divide, OpId::k_remainder};
const std::vector<OpId> kCompare = {OpId::k_eq, OpId::k_ne, OpId::k_lt,
                                    OpId::k_le, OpId::k_gt, OpId::k_ge};
const double kNaN = std::numeric_limits<double>::quiet_NaN();

bool is_compare(OpId op) {
  for (OpId c : kCompare)
    if (c == op) return true;
  return false;
}

// Integer power by repeated multiplication; negative exponents: 1 -> 1, -1 -> +-1, else 0.
double ref_ipow(double base, double e) {
  auto b = static_cast<int64_t>(base), ex = static_cast<int64_t>(e);
  if (ex < 0) return b == 1 ? 1 : b == -1 ? (ex % 2 ? -1 : 1) : 0;
  int64_t r = 1;
  for (int64_t i = 0; i < ex; ++i) r *= b;
  return static_cast<double>(r);
}

// The mathematically exact result (in double) of `a op b` computed in dtype `dt`.
double ref_binary(OpId op, double a, double b, DType dt) {
  switch (op) {
    case OpId::k_add: return a + b;
    case OpId::k_sub: return a - b;
    case OpId::k_mul: return a * b;
    case OpId::k_div: return a / b;
    case OpId::k_pow: return is_floating(dt) ? std::pow(a, b) : ref_ipow(a, b);
    case OpId::k_maximum: return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
    case OpId::k_minimum: return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
    // By definition (Python's // and %): the quotient rounded toward -inf, a - b * that.
    case OpId::k_floor_divide: return std::floor(a / b);
    case OpId::k_remainder: return a - b * std::floor(a / b);
    case OpId::k_eq: return a == b;
    case OpId::k_ne: return a != b;
    case OpId::k_lt: return a < b;
    case OpId::k_le: return a <= b;
    case OpId::k_gt: return a > b;
    case OpId::k_ge: return a >= b;
    default: FAIL("not a binary op"); return 0;
  }
}

double finish(double r, DType out) { return out == DType::kBool ? (r != 0 ? 1 : 0) : r; }

// Operand values that keep every op finite and exactly representable where it matters.
std::vector<double> operand_values(std::mt19937& rng, OpId op, int64_t n, DType dt, bool second) {
  if (is_compare(op)) return random_values(rng, n, dt, -2, 2);  // many equal pairs
  if (op == OpId::k_pow) {
    if (second) return random_values(rng, n, dt, is_floating(dt) ? -2 : -1, 3);
    return random_values(rng, n, dt, is_floating(dt) ? 0.25 : -3, 3);
  }
  auto v = random_values(rng, n, dt, -4, 4);
  if (op == OpId::k_div && second && is_floating(dt))  // keep float quotients finite
    for (auto& x : v)
      if (std::fabs(x) < 0.25) x = 0.5;
  if ((op == OpId::k_floor_divide || op == OpId::k_remainder) && second)  // no zero divisors
    for (auto& x : v)
      if (std::fabs(x) < 0.25) x = is_floating(dt) ? 0.5 : dt == DType::kBool ? 1 : -3;
  return v;
}

void check_tensor_tensor(CpuBackend& be, std::mt19937& rng, OpId op, const Shape& sa, DType da,
                         const Shape& sb, DType db) {
  auto va = operand_values(rng, op, sa.numel(), da, false);
  auto vb = operand_values(rng, op, sb.numel(), db, true);
  Tensor a = make_tensor(be, sa, da, va), b = make_tensor(be, sb, db, vb);
  std::vector<TensorMeta> metas = {a.meta, b.meta};
  if (!infer_meta(op, metas, {}).is_ok()) return;  // e.g. bool sub: rejected by the rule
  Tensor out = run_op(be, op, {&a, &b});
  const Shape& so = out.meta.shape;
  const DType dt = out.meta.dtype;
  std::vector<double> want(static_cast<size_t>(so.numel()));
  for (int64_t i = 0; i < so.numel(); ++i) {
    auto idx = unravel(i, so);
    double x = va[broadcast_source(idx, sa)], y = vb[broadcast_source(idx, sb)];
    want[i] = finish(ref_binary(op, x, y, dt), dt);
  }
  check_close(to_doubles(be, out), want, dt,
              std::string(op_name(op)) + " " + sa.str() + " " + dtype_name(da) + " with " +
                  sb.str() + " " + dtype_name(db));
}

TEST_CASE("cpu binary ops: same shape, every dtype", "[cpu][binary]") {
  CpuBackend be;
  std::mt19937 rng(1);
  std::vector<OpId> ops = kArith;
  ops.insert(ops.end(), kCompare.begin(), kCompare.end());
  for (OpId op : ops)
    for (DType dt : all_dtypes()) {
      check_tensor_tensor(be, rng, op, Shape{3, 4}, dt, Shape{3, 4}, dt);
      check_tensor_tensor(be, rng, op, Shape{1000}, dt, Shape{1000}, dt);
    }
}

TEST_CASE("cpu binary ops: broadcasting shapes", "[cpu][binary]") {
  CpuBackend be;
  std::mt19937 rng(2);
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {Shape{2, 3, 4}, Shape{4}},       {Shape{4}, Shape{2, 3, 4}},
      {Shape{3, 1}, Shape{1, 4}},       {Shape{2, 1, 4}, Shape{3, 1}},
      {Shape{}, Shape{3, 2}},           {Shape{3, 2}, Shape{}},
      {Shape{}, Shape{}},               {Shape{1}, Shape{5, 5}},
      {Shape{5, 5}, Shape{1, 1}},       {Shape{17, 33}, Shape{33}},
      {Shape{4, 1}, Shape{4, 5}},       {Shape{5, 1, 7}, Shape{1, 6, 1}},
      {Shape{2, 1, 3, 1}, Shape{1, 4, 1, 5}}, {Shape{0, 3}, Shape{1, 3}},
      {Shape{2, 0}, Shape{2, 1}},       {Shape{1, 1, 1}, Shape{1}},
  };
  std::vector<OpId> ops = kArith;
  ops.insert(ops.end(), kCompare.begin(), kCompare.end());
  for (const auto& [sa, sb] : shapes)
    for (OpId op : ops)
      for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kInt64, DType::kBool})
        check_tensor_tensor(be, rng, op, sa, dt, sb, dt);
}

TEST_CASE("cpu binary ops: mixed dtypes promote", "[cpu][binary]") {
  CpuBackend be;
  std::mt19937 rng(3);
  const std::vector<std::pair<DType, DType>> pairs = {
      {DType::kInt32, DType::kFloat32}, {DType::kFloat16, DType::kBFloat16},
      {DType::kBool, DType::kInt64},    {DType::kInt32, DType::kInt64},
      {DType::kFloat16, DType::kFloat32}, {DType::kBool, DType::kFloat16},
      {DType::kBFloat16, DType::kInt32},
  };
  std::vector<OpId> ops = kArith;
  ops.insert(ops.end(), kCompare.begin(), kCompare.end());
  for (const auto& [da, db] : pairs)
    for (OpId op : ops) {
      check_tensor_tensor(be, rng, op, Shape{3, 4}, da, Shape{3, 4}, db);
      check_tensor_tensor(be, rng, op, Shape{2, 3, 4}, db, Shape{3, 1}, da);
    }
}

TEST_CASE("cpu binary ops: scalar operand on either side", "[cpu][binary]") {
  CpuBackend be;
  std::mt19937 rng(4);
  std::vector<OpId> ops = kArith;
  ops.insert(ops.end(), kCompare.begin(), kCompare.end());
  for (OpId op : ops)
    for (DType dt : all_dtypes())
      for (ScalarSide side : {ScalarSide::kRight, ScalarSide::kLeft})
        for (bool integral : {true, false}) {
          double s = integral ? 2.0 : (op == OpId::k_pow ? 0.5 : 1.25);
          if (is_compare(op)) s = integral ? 1.0 : 0.5;
          OpAttrs attrs = make_binary_scalar(side, s, integral);
          Shape shape{2, 7};
          auto v = operand_values(rng, op, shape.numel(), dt, side == ScalarSide::kLeft);
          Tensor a = make_tensor(be, shape, dt, v);
          std::vector<TensorMeta> metas = {a.meta};
          auto m = infer_meta(op, metas, attrs);
          if (!m.is_ok()) continue;
          Tensor out = run_op(be, op, {&a}, attrs);
          const DType odt = out.meta.dtype;
          REQUIRE(out.meta.shape == shape);
          std::vector<double> want(v.size());
          // The operand dtype: the output's for arithmetic, the promoted one for comparisons.
          DType pd = is_compare(op) ? promote_with_scalar(dt, integral) : odt;
          for (size_t i = 0; i < v.size(); ++i) {
            double x = side == ScalarSide::kRight ? v[i] : s;
            double y = side == ScalarSide::kRight ? s : v[i];
            want[i] = finish(ref_binary(op, x, y, pd), odt);
          }
          check_close(to_doubles(be, out), want, odt,
                      std::string(op_name(op)) +
                          (side == ScalarSide::kLeft ? " scalar-left " : " scalar-right ") +
                          (integral ? "int " : "float ") + dtype_name(dt));
        }
}

TEST_CASE("cpu binary ops: result dtypes follow promotion", "[cpu][binary]") {
  CpuBackend be;
  Tensor i32 = make_tensor(be, Shape{2}, DType::kInt32, {7, -7});
  Tensor i64 = make_tensor(be, Shape{2}, DType::kInt64, {2, 2});
  Tensor out = run_op(be, OpId::k_div, {&i32, &i64});
  CHECK(out.meta.dtype == DType::kFloat32);  // true division
  check_close(to_doubles(be, out), {3.5, -3.5}, DType::kFloat32, "int / int");
  Tensor sum = run_op(be, OpId::k_add, {&i32, &i64});
  CHECK(sum.meta.dtype == DType::kInt64);
  check_close(to_doubles(be, sum), {9, -5}, DType::kInt64, "int32 + int64");
  Tensor half_s =
      run_op(be, OpId::k_mul, {&i32}, make_binary_scalar(ScalarSide::kRight, 0.5, false));
  CHECK(half_s.meta.dtype == DType::kFloat32);
  check_close(to_doubles(be, half_s), {3.5, -3.5}, DType::kFloat32, "int * 0.5");
}

// PyTorch converts a scalar operand to the op's dtype before computing (issue 18 item 5): an
// int32 op wraps a Python int, a float16 op rounds a Python float (70000. is inf there), and
// comparisons convert to their promoted dtype too. Expectations from torch.
TEST_CASE("cpu binary ops: scalar operands are converted to the operand dtype first",
          "[cpu][binary][promote]") {
  CpuBackend be;
  const int64_t big = (int64_t{1} << 40) + 7;
  auto scalar = [](ScalarSide side, int64_t v) {
    return make_binary_scalar(side, static_cast<double>(v), true, v);
  };
  Tensor i32 = make_tensor(be, Shape{2}, DType::kInt32, {-10, 7});
  CHECK(to_doubles(be, run_op(be, OpId::k_add, {&i32}, scalar(ScalarSide::kRight, big))) ==
        std::vector<double>{-3, 14});  // 2^40 + 7 wraps to 7
  CHECK(to_doubles(be, run_op(be, OpId::k_mul, {&i32}, scalar(ScalarSide::kLeft, int64_t{1} << 40))) ==
        std::vector<double>{0, 0});
  CHECK(to_doubles(be, run_op(be, OpId::k_eq, {&i32}, scalar(ScalarSide::kRight, big))) ==
        std::vector<double>{0, 1});
  CHECK(to_doubles(be, run_op(be, OpId::k_sub, {&i32}, scalar(ScalarSide::kLeft, big))) ==
        std::vector<double>{17, 0});

  Tensor f16 = make_tensor(be, Shape{2}, DType::kFloat16, {0.5, 65504});
  auto f = [](ScalarSide side, double v) { return make_binary_scalar(side, v, false); };
  auto r = to_doubles(be, run_op(be, OpId::k_mul, {&f16}, f(ScalarSide::kRight, 70000.0)));
  CHECK(std::isinf(r[0]));  // not 35008: 70000. rounds to inf in float16 first
  r = to_doubles(be, run_op(be, OpId::k_eq, {&f16}, f(ScalarSide::kRight, 65520.0)));
  CHECK(r == std::vector<double>{0, 0});  // 65520. is inf in float16
  r = to_doubles(be, run_op(be, OpId::k_lt, {&f16}, f(ScalarSide::kLeft, 65519.0)));
  CHECK(r == std::vector<double>{0, 0});  // 65519. is 65504 in float16: not < 65504
  Tensor bf = make_tensor(be, Shape{1}, DType::kBFloat16, {1e38});
  CHECK(std::isinf(to_doubles(be, run_op(be, OpId::k_mul, {&bf}, f(ScalarSide::kRight, 1e39)))[0]));

  // bool with a bool scalar stays bool (kind 2 on the wire)
  Tensor b = make_tensor(be, Shape{2}, DType::kBool, {1, 0});
  Tensor bs = run_op(be, OpId::k_add, {&b}, make_binary_scalar(ScalarSide::kRight, 1, ScalarKind::kBool, 1));
  CHECK(bs.meta.dtype == DType::kBool);
  CHECK(to_doubles(be, bs) == std::vector<double>{1, 1});

  // int64: exact beyond 2^53
  Tensor i64 = make_tensor(be, Shape{1}, DType::kInt64, {1});
  Tensor sum = run_op(be, OpId::k_add, {&i64}, scalar(ScalarSide::kRight, (int64_t{1} << 62) + 1));
  int64_t got = 0;
  GT_REQUIRE_OK(be.copy_to_host(sum, 0, &got, 8, 0));
  CHECK(got == (int64_t{1} << 62) + 2);
}

// A 0-d operand converts to the dimensioned one's dtype (torch.result_type), for comparisons
// too: int32[n] == int64[] compares in int32 (2^32 + 1 wraps to 1).
TEST_CASE("cpu binary ops: a 0-d tensor operand promotes below a tensor with dims",
          "[cpu][binary][promote]") {
  CpuBackend be;
  Tensor i32 = make_tensor(be, Shape{2}, DType::kInt32, {1, 2});
  Tensor z = make_tensor(be, Shape{}, DType::kInt64, {4294967297.0});
  Tensor eq = run_op(be, OpId::k_eq, {&i32, &z});
  CHECK(to_doubles(be, eq) == std::vector<double>{1, 0});
  Tensor add = run_op(be, OpId::k_add, {&z, &i32});
  CHECK(add.meta.dtype == DType::kInt32);
  CHECK(to_doubles(be, add) == std::vector<double>{2, 3});
  Tensor f16 = make_tensor(be, Shape{2}, DType::kFloat16, {0.5, 1});
  Tensor zf = make_tensor(be, Shape{}, DType::kFloat32, {1e5});
  Tensor mul = run_op(be, OpId::k_mul, {&f16, &zf});
  CHECK(mul.meta.dtype == DType::kFloat16);
  CHECK(std::isinf(to_doubles(be, mul)[0]));
  Tensor lt = run_op(be, OpId::k_lt, {&zf, &f16});  // compared in float16: inf < 0.5 is false
  CHECK(to_doubles(be, lt) == std::vector<double>{0, 0});
}

TEST_CASE("cpu binary ops: integer pow conventions", "[cpu][binary]") {
  CpuBackend be;
  for (DType dt : {DType::kInt32, DType::kInt64}) {
    Tensor base = make_tensor(be, Shape{10}, dt, {2, 3, -2, 0, 1, -1, -1, 5, 2, 0});
    Tensor ex = make_tensor(be, Shape{10}, dt, {10, 3, 3, 0, -5, -3, -2, -1, 0, 5});
    Tensor out = run_op(be, OpId::k_pow, {&base, &ex});
    CHECK(out.meta.dtype == dt);
    check_close(to_doubles(be, out), {1024, 27, -8, 1, 1, -1, 1, 0, 1, 0}, dt, "int pow");
  }
  // Large exponents wrap like two's complement multiplication: 3^40 mod 2^64.
  Tensor b = make_tensor(be, Shape{1}, DType::kInt64, {3});
  Tensor out = run_op(be, OpId::k_pow, {&b}, make_binary_scalar(ScalarSide::kRight, 40, true));
  uint64_t want = 1;
  for (int i = 0; i < 40; ++i) want *= 3;
  int64_t got = 0;
  GT_REQUIRE_OK(be.copy_to_host(out, 0, &got, 8, 0));
  CHECK(got == static_cast<int64_t>(want));
}

TEST_CASE("cpu binary ops: pow keeps an integer exponent float cannot hold exact",
          "[cpu][binary]") {
  // Rounded to float, 2^31 + 1 and 2^24 + 1 become even: (-1)^n would be 1, (-2)^n +inf.
  CpuBackend be;
  for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
    Tensor b = make_tensor(be, Shape{4}, dt, {-1, 1, -2, -0.5});
    for (int64_t n : {int64_t{2147483649}, int64_t{16777217}, -int64_t{2147483649}}) {
      INFO(dtype_name(dt) << " ** " << n);
      Tensor out = run_op(be, OpId::k_pow, {&b},
                          make_binary_scalar(ScalarSide::kRight, static_cast<double>(n), true, n));
      const double inf = std::numeric_limits<double>::infinity();
      std::vector<double> want = n > 0 ? std::vector<double>{-1, 1, -inf, -0.0}
                                       : std::vector<double>{-1, 1, -0.0, -inf};
      check_close(to_doubles(be, out), want, dt, "pow odd exponent");
      CHECK(std::signbit(to_doubles(be, out)[n > 0 ? 3 : 2]));
    }
    // A Python float holding such an integer is the same exponent.
    Tensor out = run_op(be, OpId::k_pow, {&b},
                        make_binary_scalar(ScalarSide::kRight, 2147483647.0, false));
    CHECK(to_doubles(be, out)[0] == -1.0);
  }
}

TEST_CASE("cpu binary ops: bool arithmetic is logical", "[cpu][binary]") {
  CpuBackend be;
  Tensor a = make_tensor(be, Shape{4}, DType::kBool, {0, 0, 1, 1});
  Tensor b = make_tensor(be, Shape{4}, DType::kBool, {0, 1, 0, 1});
  auto run = [&](OpId op) { return to_doubles(be, run_op(be, op, {&a, &b})); };
  CHECK(run(OpId::k_add) == std::vector<double>{0, 1, 1, 1});
  CHECK(run(OpId::k_mul) == std::vector<double>{0, 0, 0, 1});
  CHECK(run(OpId::k_maximum) == std::vector<double>{0, 1, 1, 1});
  CHECK(run(OpId::k_minimum) == std::vector<double>{0, 0, 0, 1});
  check_close(run(OpId::k_div), {kNaN, 0, std::numeric_limits<double>::infinity(), 1},
              DType::kFloat32, "bool / bool");
  CHECK(run(OpId::k_eq) == std::vector<double>{1, 0, 0, 1});
  CHECK(run(OpId::k_lt) == std::vector<double>{0, 1, 0, 0});
  CHECK_FALSE(try_run(be, OpId::k_sub, {&a, &b}, {}).is_ok());
  // bool + integer scalar gives int64
  Tensor plus = run_op(be, OpId::k_add, {&a}, make_binary_scalar(ScalarSide::kRight, 2, true));
  CHECK(plus.meta.dtype == DType::kInt64);
  CHECK(to_doubles(be, plus) == std::vector<double>{2, 2, 3, 3});
}

TEST_CASE("cpu binary ops: maximum/minimum propagate NaN", "[cpu][binary]") {
  CpuBackend be;
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    Tensor a = make_tensor(be, Shape{4}, dt, {1, kNaN, 3, kNaN});
    Tensor b = make_tensor(be, Shape{4}, dt, {kNaN, 2, 1, kNaN});
    check_close(to_doubles(be, run_op(be, OpId::k_maximum, {&a, &b})), {kNaN, kNaN, 3, kNaN}, dt,
                "maximum");
    check_close(to_doubles(be, run_op(be, OpId::k_minimum, {&a, &b})), {kNaN, kNaN, 1, kNaN}, dt,
                "minimum");
    // Comparisons with NaN are false except ne.
    CHECK(to_doubles(be, run_op(be, OpId::k_eq, {&a, &b})) == std::vector<double>{0, 0, 0, 0});
    CHECK(to_doubles(be, run_op(be, OpId::k_ne, {&a, &b})) == std::vector<double>{1, 1, 1, 1});
    CHECK(to_doubles(be, run_op(be, OpId::k_ge, {&a, &b})) == std::vector<double>{0, 0, 1, 0});
  }
}

TEST_CASE("cpu binary ops: integer arithmetic wraps around", "[cpu][binary]") {
  CpuBackend be;
  Tensor a = make_tensor(be, Shape{2}, DType::kInt32, {INT32_MAX, INT32_MIN});
  Tensor one = make_tensor(be, Shape{2}, DType::kInt32, {1, 1});
  CHECK(to_doubles(be, run_op(be, OpId::k_add, {&a, &one})) ==
        std::vector<double>{INT32_MIN, INT32_MIN + 1.0});
  CHECK(to_doubles(be, run_op(be, OpId::k_sub, {&a, &one})) ==
        std::vector<double>{INT32_MAX - 1.0, INT32_MAX});
}

TEST_CASE("cpu binary ops: many small same-shape adds (fast path)", "[cpu][binary]") {
  CpuBackend be;
  std::mt19937 rng(5);
  auto va = random_values(rng, 16, DType::kFloat32), vb = random_values(rng, 16, DType::kFloat32);
  Tensor a = make_tensor(be, Shape{4, 4}, DType::kFloat32, va);
  Tensor b = make_tensor(be, Shape{4, 4}, DType::kFloat32, vb);
  std::vector<double> want(16);
  for (int i = 0; i < 16; ++i) want[i] = static_cast<float>(va[i]) + static_cast<float>(vb[i]);
  auto before = be.stats();
  for (int i = 0; i < 2000; ++i) {
    Tensor c = run_op(be, OpId::k_add, {&a, &b});
    if (i % 500 == 0) check_close(to_doubles(be, c), want, DType::kFloat32, "4x4 add");
  }
  // The results were freed and reused: no growth in reserved memory.
  CHECK(be.stats().reserved_bytes <= before.reserved_bytes + 64);
}

}  // namespace
}  // namespace gt::test

namespace gt::test {
namespace {

// Python's // and %, PyTorch's values (probed with torch 1.13 on CPU): rounding toward -inf,
// the remainder with the divisor's sign, x // 0 = +-inf (NaN for 0 // 0), x % 0 = NaN, and an
// integer zero divisor refused (torch's ZeroDivisionError).
TEST_CASE("cpu floor_divide / remainder: signs, zeros and PyTorch's edge values", "[cpu][binary]") {
  CpuBackend be;
  const double inf = std::numeric_limits<double>::infinity();
  for (DType dt : {DType::kInt32, DType::kInt64}) {
    Tensor a = make_tensor(be, Shape{6}, dt, {7, -7, 7, -7, 0, 6});
    Tensor b = make_tensor(be, Shape{6}, dt, {2, 2, -2, -2, 3, -3});
    CHECK(to_doubles(be, run_op(be, OpId::k_floor_divide, {&a, &b})) ==
          std::vector<double>{3, -4, -4, 3, 0, -2});
    CHECK(to_doubles(be, run_op(be, OpId::k_remainder, {&a, &b})) ==
          std::vector<double>{1, 1, -1, -1, 0, 0});
    Tensor zero = make_tensor(be, Shape{6}, dt, {1, 1, 0, 1, 1, 1});
    CHECK(try_run(be, OpId::k_floor_divide, {&a, &zero}, {}).status().code() == Code::kInvalidArgument);
    CHECK(try_run(be, OpId::k_remainder, {&a, &zero}, {}).status().code() == Code::kInvalidArgument);
    CHECK_FALSE(try_run(be, OpId::k_remainder, {&a},
                        make_binary_scalar(ScalarSide::kRight, 0, true)).is_ok());
    CHECK_FALSE(try_run(be, OpId::k_floor_divide, {&zero},  // 5 // tensor with a zero
                        make_binary_scalar(ScalarSide::kLeft, 5, true)).is_ok());
  }
  // INT64_MIN // -1 overflows: it wraps (torch's CPU kernel traps on it).
  Tensor m = make_tensor(be, Shape{1}, DType::kInt64, {0});
  const int64_t lo = std::numeric_limits<int64_t>::min();
  GT_REQUIRE_OK(be.copy_from_host(m, 0, &lo, 8, 0));
  Tensor q = run_op(be, OpId::k_floor_divide, {&m}, make_binary_scalar(ScalarSide::kRight, -1, true));
  int64_t got = 0;
  GT_REQUIRE_OK(be.copy_to_host(q, 0, &got, 8, 0));
  CHECK(got == lo);
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    Tensor a = make_tensor(be, Shape{7}, dt, {7.5, -7.5, 5, -6, 0, -5, 5});
    Tensor b = make_tensor(be, Shape{7}, dt, {2, 2, 0, 3, 0, inf, inf});
    check_close(to_doubles(be, run_op(be, OpId::k_floor_divide, {&a, &b})),
                {3, -4, inf, -2, kNaN, -1, 0}, dt, "float floor_divide");
    check_close(to_doubles(be, run_op(be, OpId::k_remainder, {&a, &b})),
                {1.5, 0.5, kNaN, 0, kNaN, inf, 5}, dt, "float remainder");
  }
}

}  // namespace
}  // namespace gt::test
