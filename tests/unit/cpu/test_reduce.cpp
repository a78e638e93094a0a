// Reductions against a naive reference: every input element is visited by its multi-index and
// folded into the output element it maps to (the reduced dim dropped or kept as 1).
#include <cmath>
#include <limits>
#include <random>

#include "tests/unit/cpu/cpu_test_util.h"

namespace gt::test {
namespace {

GT_TESTS_OPS("sum", "mean", "max", "min", "argmax", "argmin");

const double kNaN = std::numeric_limits<double>::quiet_NaN();

struct RefAcc {
  double sum = 0;
  int64_t count = 0;
  double best = 0;
  int64_t best_idx = -1;
  bool nan = false;
};

// Reduces `v` (shape s) over dim `dim` (kAllDims: everything) the naive way.
std::vector<double> ref_reduce(OpId op, const std::vector<double>& v, const Shape& s,
                               int64_t dim) {
  const bool all = dim == kAllDims || s.rank() == 0;
  int d = all ? -1 : static_cast<int>(dim < 0 ? dim + s.rank() : dim);
  Shape os;
  for (int i = 0; i < s.rank(); ++i)
    if (i != d && !all) os.push_back(s[i]);
  std::vector<RefAcc> acc(static_cast<size_t>(all ? 1 : os.numel()));
  const bool is_max = op == OpId::k_max || op == OpId::k_argmax;
  for (int64_t i = 0; i < s.numel(); ++i) {
    auto idx = unravel(i, s);
    int64_t o = 0, pos = i;  // pos: index along the reduced dim (flat index for all)
    if (!all) {
      std::vector<int64_t> oi;
      for (int k = 0; k < s.rank(); ++k)
        if (k != d) oi.push_back(idx[k]);
      o = ravel(oi, os);
      pos = idx[d];
    }
    RefAcc& a = acc[o];
    double x = v[i];
    a.sum += x;
    a.count++;
    if (a.nan) continue;
    if (std::isnan(x)) {
      a.nan = true;
      a.best = x;
      a.best_idx = pos;
    } else if (a.best_idx < 0 || (is_max ? x > a.best : x < a.best)) {
      a.best = x;
      a.best_idx = pos;
    }
  }
  std::vector<double> out;
  for (const RefAcc& a : acc) {
    switch (op) {
      case OpId::k_sum: out.push_back(a.sum); break;
      case OpId::k_mean:
        out.push_back(a.count == 0 ? kNaN : a.sum / static_cast<double>(a.count));
        break;
      case OpId::k_max:
      case OpId::k_min: out.push_back(a.best); break;
      default: out.push_back(static_cast<double>(a.best_idx)); break;
    }
  }
  return out;
}

DType ref_dtype(OpId op, DType in) {
  if (op == OpId::k_argmax || op == OpId::k_argmin) return DType::kInt64;
  if (op == OpId::k_sum) return is_floating(in) ? in : DType::kInt64;
  if (op == OpId::k_mean) return is_floating(in) ? in : DType::kFloat32;
  return in;
}

Shape ref_shape(const Shape& s, int64_t dim, bool keepdim) {
  Shape out;
  if (dim == kAllDims) {
    if (keepdim)
      for (int i = 0; i < s.rank(); ++i) out.push_back(1);
    return out;
  }
  if (s.rank() == 0) return out;
  int d = static_cast<int>(dim < 0 ? dim + s.rank() : dim);
  for (int i = 0; i < s.rank(); ++i) {
    if (i != d) out.push_back(s[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

const std::vector<OpId> kReduceOps = {OpId::k_sum, OpId::k_mean,   OpId::k_max,
                                      OpId::k_min, OpId::k_argmax, OpId::k_argmin};

// What the shape rule refuses, as torch does: mean of integers or bools, argmax/argmin of bools.
bool refused(OpId op, DType dt) {
  if (op == OpId::k_mean) return !is_floating(dt);
  return (op == OpId::k_argmax || op == OpId::k_argmin) && dt == DType::kBool;
}

void check_reduce(CpuBackend& be, OpId op, const Tensor& x, const std::vector<double>& v,
                  int64_t dim, bool keepdim) {
  if (refused(op, x.meta.dtype)) {
    CHECK_FALSE(try_run(be, op, {&x}, make_reduce(dim, keepdim)).is_ok());
    return;
  }
  Tensor out = run_op(be, op, {&x}, make_reduce(dim, keepdim));
  DType odt = ref_dtype(op, x.meta.dtype);
  REQUIRE(out.meta.dtype == odt);
  REQUIRE(out.meta.shape == ref_shape(x.meta.shape, dim, keepdim));
  auto want = ref_reduce(op, v, x.meta.shape, dim);
  // Sums of n rounded values: the result's own rounding plus a little accumulation slack.
  Tol t = tol_for(odt);
  check_close(to_doubles(be, out), want, Tol{t.rtol, t.atol * 10},
              std::string(op_name(op)) + " of " + x.meta.shape.str() + " " +
                  dtype_name(x.meta.dtype) + " dim " +
                  (dim == kAllDims ? std::string("all") : std::to_string(dim)) +
                  (keepdim ? " keepdim" : ""));
}

TEST_CASE("cpu reductions: every dim, keepdim, dtype", "[cpu][reduce]") {
  CpuBackend be;
  std::mt19937 rng(31);
  const std::vector<Shape> shapes = {Shape{2, 3, 4}, Shape{5, 1, 7, 3}, Shape{9}, Shape{1, 1},
                                     Shape{}};
  for (OpId op : kReduceOps)
    for (DType dt : all_dtypes())
      for (const Shape& s : shapes) {
        // Small integers for ties (argmax must pick the first) and exact float sums.
        auto v = random_values(rng, s.numel(), dt, -3, 3);
        if (is_floating(dt))
          for (auto& x : v) x = std::round(x);
        Tensor x = make_tensor(be, s, dt, v);
        for (bool keepdim : {false, true}) {
          check_reduce(be, op, x, v, kAllDims, keepdim);
          for (int64_t d = -std::max(s.rank(), 1); d < std::max(s.rank(), 1); ++d)
            check_reduce(be, op, x, v, d, keepdim);
        }
      }
}

TEST_CASE("cpu reductions: non-integer floats", "[cpu][reduce]") {
  CpuBackend be;
  std::mt19937 rng(32);
  for (OpId op : kReduceOps)
    for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      Shape s{6, 50, 7};
      auto v = random_values(rng, s.numel(), dt, -1, 1);
      Tensor x = make_tensor(be, s, dt, v);
      for (int64_t d : {kAllDims, int64_t{0}, int64_t{1}, int64_t{-1}})
        check_reduce(be, op, x, v, d, false);
    }
}

TEST_CASE("cpu reductions: empty inputs", "[cpu][reduce]") {
  CpuBackend be;
  Tensor e = make_tensor(be, Shape{0, 3}, DType::kFloat32, {});
  auto sum_all = run_op(be, OpId::k_sum, {&e}, make_reduce(kAllDims, false));
  CHECK(to_doubles(be, sum_all) == std::vector<double>{0});
  auto mean_all = to_doubles(be, run_op(be, OpId::k_mean, {&e}, make_reduce(kAllDims, false)));
  REQUIRE(mean_all.size() == 1);
  CHECK(std::isnan(mean_all[0]));
  // Over the empty dim: 3 results; over the other: an empty result.
  CHECK(to_doubles(be, run_op(be, OpId::k_sum, {&e}, make_reduce(0, false))) ==
        std::vector<double>{0, 0, 0});
  auto m0 = to_doubles(be, run_op(be, OpId::k_mean, {&e}, make_reduce(0, true)));
  REQUIRE(m0.size() == 3);
  for (double m : m0) CHECK(std::isnan(m));
  CHECK(run_op(be, OpId::k_max, {&e}, make_reduce(1, false)).meta.shape == Shape{0});
  Tensor ei = make_tensor(be, Shape{0}, DType::kInt32, {});
  auto si = run_op(be, OpId::k_sum, {&ei}, make_reduce(kAllDims, false));
  CHECK(si.meta.dtype == DType::kInt64);
  CHECK(to_doubles(be, si) == std::vector<double>{0});
  // max of nothing is an error (from the rule), not a crash.
  CHECK_FALSE(try_run(be, OpId::k_max, {&e}, make_reduce(kAllDims, false)).is_ok());
  CHECK_FALSE(try_run(be, OpId::k_argmin, {&e}, make_reduce(0, false)).is_ok());
}

TEST_CASE("cpu reductions: NaN behaviour of max/min/argmax/argmin", "[cpu][reduce]") {
  CpuBackend be;
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    Tensor x = make_tensor(be, Shape{2, 4}, dt, {1, kNaN, 5, kNaN, 3, 2, 9, 9});
    auto r = [&](OpId op, int64_t dim) {
      return to_doubles(be, run_op(be, op, {&x}, make_reduce(dim, false)));
    };
    check_close(r(OpId::k_max, 1), {kNaN, 9}, dt, "max rows");
    check_close(r(OpId::k_min, 1), {kNaN, 2}, dt, "min rows");
    CHECK(r(OpId::k_argmax, 1) == std::vector<double>{1, 2});  // first NaN; first of the ties
    CHECK(r(OpId::k_argmin, 1) == std::vector<double>{1, 1});
    CHECK(r(OpId::k_argmax, kAllDims) == std::vector<double>{1});
    CHECK(r(OpId::k_argmax, 0) == std::vector<double>{1, 0, 1, 0});
    check_close(r(OpId::k_max, 0), {3, kNaN, 9, kNaN}, dt, "max cols");
    auto s = r(OpId::k_sum, 1);
    CHECK(std::isnan(s[0]));
    CHECK(s[1] == 23);
  }
}

TEST_CASE("cpu reductions: float32 max / min / argmax / argmin over long rows (the 16-lane path)",
          "[cpu][reduce]") {
  // Rows around and past the 16 lanes, the extreme in every position (lanes and tail), NaN and
  // infinities anywhere, against the naive reference.
  CpuBackend be;
  std::mt19937 rng(91);
  for (int64_t n : {1, 15, 16, 17, 33, 100, 1000}) {
    const int64_t rows = 40;
    std::vector<double> xv(static_cast<size_t>(rows * n));
    std::uniform_real_distribution<double> u(-100, 100);
    for (double& v : xv) v = static_cast<float>(u(rng));
    for (int64_t r = 0; r < rows; ++r) {
      const auto at = [&](int64_t k) -> double& { return xv[static_cast<size_t>(r * n + k % n)]; };
      switch (r % 7) {
        case 0: at(r) = 1e30; break;                 // a unique max somewhere
        case 1: at(r * 7) = -1e30; break;            // a unique min
        case 2: at(r * 3) = kNaN; at(r * 5 + 1) = kNaN; break;  // the first NaN wins
        case 3: at(r) = std::numeric_limits<double>::infinity(); at(r + 5) = -at(r); break;
        case 4: at(r) = 200; at(r + 16) = 200; at(r + 3) = 200; break;  // ties: the first
        case 5:                                      // every element equal: index 0
          for (int64_t k = 0; k < n; ++k) at(k) = -std::numeric_limits<double>::infinity();
          break;
        default: break;
      }
    }
    Tensor x = make_tensor(be, Shape{rows, n}, DType::kFloat32, xv);
    for (OpId op : {OpId::k_max, OpId::k_min}) {
      INFO(op_name(op) << " over rows of " << n);
      check_close(to_doubles(be, run_op(be, op, {&x}, make_reduce(1, false))),
                  ref_reduce(op, xv, Shape{rows, n}, 1), DType::kFloat32, "long rows");
    }
    for (OpId op : {OpId::k_argmax, OpId::k_argmin}) {
      INFO(op_name(op) << " over rows of " << n);
      CHECK(to_doubles(be, run_op(be, op, {&x}, make_reduce(1, false))) ==
            ref_reduce(op, xv, Shape{rows, n}, 1));
    }
  }
}

TEST_CASE("cpu reductions: large float32 sums stay accurate", "[cpu][reduce]") {
  CpuBackend be;
  const int64_t n = int64_t{1} << 22;
  std::vector<double> v(static_cast<size_t>(n), static_cast<double>(0.1f));
  Tensor x = make_tensor(be, Shape{n}, DType::kFloat32, v);
  double want = static_cast<double>(0.1f) * static_cast<double>(n);
  auto s = to_doubles(be, run_op(be, OpId::k_sum, {&x}, make_reduce(kAllDims, false)));
  CHECK(std::fabs(s[0] - want) / want < 1e-6);  // a float accumulator would be off by ~1e-2
  auto m = to_doubles(be, run_op(be, OpId::k_mean, {&x}, make_reduce(0, false)));
  CHECK(std::fabs(m[0] - 0.1) < 1e-6);
  // The same along a strided dim: [n/64, 64] summed over dim 0.
  Tensor y{TensorMeta{Shape{n / 64, 64}, DType::kFloat32}, x.storage, nullptr};
  auto cols = to_doubles(be, run_op(be, OpId::k_sum, {&y}, make_reduce(0, false)));
  for (double c : cols) CHECK(std::fabs(c - want / 64) / (want / 64) < 1e-6);
}

// Floating sums accumulate in float32 in torch's CPU order, so a partial sum that overflows is
// inf as in torch, even when the exact sum (and a double accumulator's) is finite:
// torch.tensor([3e38, 3e38, -3e38]).mean() is inf (this used to give 1e38).
TEST_CASE("cpu reductions: float32 partial sums overflow like torch's", "[cpu][reduce]") {
  CpuBackend be;
  const double inf = std::numeric_limits<double>::infinity();
  auto reduce = [&](OpId op, const Tensor& x, int64_t dim) {
    return to_doubles(be, run_op(be, op, {&x}, make_reduce(dim, false)));
  };
  // A short row: summed in order.
  Tensor a = make_tensor(be, Shape{3}, DType::kFloat32, {3e38, 3e38, -3e38});
  CHECK(reduce(OpId::k_sum, a, kAllDims) == std::vector<double>{inf});
  CHECK(reduce(OpId::k_mean, a, kAllDims) == std::vector<double>{inf});
  // A long row: lane k of 8 sums elements k, k + 8, ...; the first 16 are 3e38, the last 16
  // -3e38, so lanes overflow before the negatives arrive.
  std::vector<double> v(32, 3e38);
  for (size_t i = 16; i < 32; ++i) v[i] = -3e38;
  Tensor b = make_tensor(be, Shape{32}, DType::kFloat32, v);
  CHECK(reduce(OpId::k_sum, b, kAllDims) == std::vector<double>{inf});
  // ... but [3e38, -3e38] * 16 cancels within each lane: 0.
  for (size_t i = 0; i < 32; ++i) v[i] = i % 16 < 8 ? 3e38 : -3e38;
  Tensor c = make_tensor(be, Shape{32}, DType::kFloat32, v);
  CHECK(reduce(OpId::k_sum, c, kAllDims) == std::vector<double>{0});
  // Over a strided dim, both column layouts (>= 8 columns and fewer).
  for (int64_t cols : {int64_t{2}, int64_t{40}}) {
    std::vector<double> m(static_cast<size_t>(3 * cols), 3e38);
    for (int64_t j = 0; j < cols; ++j) m[static_cast<size_t>(2 * cols + j)] = -3e38;
    Tensor x = make_tensor(be, Shape{3, cols}, DType::kFloat32, m);
    CHECK(reduce(OpId::k_sum, x, 0) == std::vector<double>(static_cast<size_t>(cols), inf));
    CHECK(reduce(OpId::k_mean, x, 0) == std::vector<double>(static_cast<size_t>(cols), inf));
  }
  // A 16-bit mean divides the float32 sum, rounding once (PyTorch 2.1+; torch 1.13 rounds the
  // sum to float16 first and gives inf here).
  Tensor h = make_tensor(be, Shape{2}, DType::kFloat16, {60000, 60000});
  CHECK(reduce(OpId::k_mean, h, kAllDims) == std::vector<double>{60000});
  CHECK(reduce(OpId::k_sum, h, kAllDims) == std::vector<double>{inf});
  // bfloat16 sums fold each 16-element load's halves first, as torch's: [3e38, -3e38] * 8
  // gives lanes of 3e38 + 3e38 = inf and -inf, so NaN (not the 0 of adjacent pairs).
  std::vector<double> alt(32, 0.0);
  for (size_t i = 0; i < 16; ++i) alt[i] = i % 2 == 0 ? 3e38 : -3e38;
  Tensor hb = make_tensor(be, Shape{32}, DType::kBFloat16, alt);
  CHECK(std::isnan(reduce(OpId::k_sum, hb, kAllDims)[0]));
}

TEST_CASE("cpu reductions: bool and integer sums", "[cpu][reduce]") {
  CpuBackend be;
  Tensor b = make_tensor(be, Shape{2, 3}, DType::kBool, {1, 0, 1, 1, 1, 1});
  auto s = run_op(be, OpId::k_sum, {&b}, make_reduce(1, false));
  CHECK(s.meta.dtype == DType::kInt64);
  CHECK(to_doubles(be, s) == std::vector<double>{2, 3});
  // mean(bool) is refused by the shape rule, as torch refuses it (it used to give float32)
  CHECK_FALSE(try_run(be, OpId::k_mean, {&b}, make_reduce(kAllDims, false)).is_ok());
  // int32 sums accumulate in int64: no overflow at 2^31.
  Tensor i = make_tensor(be, Shape{4}, DType::kInt32, {2147483647, 2147483647, 2, 3});
  CHECK(to_doubles(be, run_op(be, OpId::k_sum, {&i}, make_reduce(0, false))) ==
        std::vector<double>{4294967299.0});
  CHECK(to_doubles(be, run_op(be, OpId::k_max, {&b}, make_reduce(1, false))) ==
        std::vector<double>{1, 1});
  CHECK(to_doubles(be, run_op(be, OpId::k_min, {&b}, make_reduce(1, false))) ==
        std::vector<double>{0, 1});
}

TEST_CASE("cpu reductions: int8 / uint8 sums accumulate in int64", "[cpu][reduce]") {
  CpuBackend be;
  for (int64_t n : {3, 16, 33, 1000}) {
    std::vector<double> neg(static_cast<size_t>(n), -1.0), ramp;
    for (int64_t i = 0; i < n; ++i) ramp.push_back(static_cast<double>(i % 200));
    Tensor a = make_tensor(be, Shape{n}, DType::kInt8, neg);
    Tensor b = make_tensor(be, Shape{n}, DType::kUInt8, ramp);
    double want = 0;
    for (double v : ramp) want += v;
    INFO("n = " << n);
    CHECK(to_doubles(be, run_op(be, OpId::k_sum, {&a}, make_reduce(kAllDims, false))) ==
          std::vector<double>{static_cast<double>(-n)});
    CHECK(to_doubles(be, run_op(be, OpId::k_sum, {&b}, make_reduce(kAllDims, false))) ==
          std::vector<double>{want});
  }
}

}  // namespace
}  // namespace gt::test
