// cumsum against a naive double-precision reference: every output element is the sum of the
// input elements before it (inclusive) along the dim, found by walking multi-indices.
#include <cmath>
#include <limits>

#include "tests/unit/cpu/cpu_test_util.h"

namespace gt::test {
namespace {

GT_TESTS_OPS("cumsum");

// The running sums of `v` (shape s) along dim `dim` (negative counts from the end; a 0-d input
// is its own sum), in double.
std::vector<double> ref_cumsum(const std::vector<double>& v, const Shape& s, int64_t dim) {
  std::vector<double> out(v.size());
  if (s.rank() == 0) return v;
  const int d = static_cast<int>(dim < 0 ? dim + s.rank() : dim);
  for (int64_t i = 0; i < s.numel(); ++i) {
    std::vector<int64_t> idx = unravel(i, s);
    const int64_t last = idx[d];
    double acc = 0;
    for (int64_t k = 0; k <= last; ++k) {
      idx[d] = k;
      acc += v[static_cast<size_t>(ravel(idx, s))];
    }
    out[static_cast<size_t>(i)] = acc;
  }
  return out;
}

DType ref_dtype(DType in) { return is_floating(in) ? in : DType::kInt64; }

void check_cumsum(CpuBackend& be, const Tensor& x, const std::vector<double>& v, int64_t dim) {
  Tensor out = run_op(be, OpId::k_cumsum, {&x}, make_axis(dim));
  const DType odt = ref_dtype(x.meta.dtype);
  REQUIRE(out.meta.dtype == odt);
  REQUIRE(out.meta.shape == x.meta.shape);
  // Each output is the exact running sum rounded once to its dtype: one rounding's tolerance.
  check_close(to_doubles(be, out), ref_cumsum(v, x.meta.shape, dim), odt,
              "cumsum of " + x.meta.shape.str() + " " + dtype_name(x.meta.dtype) + " dim " +
                  std::to_string(dim));
}

TEST_CASE("cpu cumsum: every dim, dtype, 0-d and empty", "[cpu][cumsum]") {
  CpuBackend be;
  std::mt19937 rng(41);
  const std::vector<Shape> shapes = {Shape{2, 3, 4}, Shape{5, 1, 7, 3}, Shape{9}, Shape{1, 1},
                                     Shape{},        Shape{0, 3},        Shape{3, 0, 2}};
  for (DType dt : all_dtypes())
    for (const Shape& s : shapes) {
      auto v = random_values(rng, s.numel(), dt, -3, 3);
      if (is_floating(dt))
        for (auto& x : v) x = std::round(x);  // exact sums in every float dtype
      Tensor x = make_tensor(be, s, dt, v);
      for (int64_t d = -std::max(s.rank(), 1); d < std::max(s.rank(), 1); ++d)
        check_cumsum(be, x, v, d);
    }
}

TEST_CASE("cpu cumsum: non-integer floats round once from a wide running sum",
          "[cpu][cumsum]") {
  CpuBackend be;
  std::mt19937 rng(42);
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    Shape s{6, 50, 7};
    auto v = random_values(rng, s.numel(), dt, -1, 1);
    Tensor x = make_tensor(be, s, dt, v);
    for (int64_t d : {0, 1, -1}) check_cumsum(be, x, v, d);
  }
}

TEST_CASE("cpu cumsum: integer sums in int64, NaN and inf propagate", "[cpu][cumsum]") {
  CpuBackend be;
  // int32 running sums pass 2^31 without wrapping (the result is int64).
  Tensor i = make_tensor(be, Shape{3}, DType::kInt32, {2147483647, 2147483647, -5});
  CHECK(to_doubles(be, run_op(be, OpId::k_cumsum, {&i}, make_axis(0))) ==
        std::vector<double>{2147483647.0, 4294967294.0, 4294967289.0});
  Tensor b = make_tensor(be, Shape{2, 3}, DType::kBool, {1, 0, 1, 1, 1, 1});
  Tensor bs = run_op(be, OpId::k_cumsum, {&b}, make_axis(1));
  CHECK(bs.meta.dtype == DType::kInt64);
  CHECK(to_doubles(be, bs) == std::vector<double>{1, 1, 2, 1, 2, 3});
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = INFINITY;
  Tensor f = make_tensor(be, Shape{5}, DType::kFloat32, {1, nan, 2, inf, 3});
  auto r = to_doubles(be, run_op(be, OpId::k_cumsum, {&f}, make_axis(0)));
  CHECK(r[0] == 1);
  for (int k = 1; k < 5; ++k) CHECK(std::isnan(r[k]));
  Tensor g = make_tensor(be, Shape{3}, DType::kFloat32, {1, inf, -2});
  CHECK(to_doubles(be, run_op(be, OpId::k_cumsum, {&g}, make_axis(0))) ==
        std::vector<double>{1, inf, inf});
}

TEST_CASE("cpu cumsum: a long float32 scan stays accurate", "[cpu][cumsum]") {
  CpuBackend be;
  const int64_t n = int64_t{1} << 20;
  std::vector<double> v(static_cast<size_t>(n), static_cast<double>(0.1f));
  Tensor x = make_tensor(be, Shape{n}, DType::kFloat32, v);
  auto r = to_doubles(be, run_op(be, OpId::k_cumsum, {&x}, make_axis(0)));
  const double want = static_cast<double>(0.1f) * static_cast<double>(n);
  CHECK(std::fabs(r.back() - want) / want < 1e-6);  // a float accumulator drifts by percents
  CHECK(std::fabs(r[n / 2 - 1] - want / 2) / (want / 2) < 1e-6);
}

TEST_CASE("cpu cumsum: a dim out of range is refused", "[cpu][cumsum]") {
  CpuBackend be;
  Tensor x = make_tensor(be, Shape{2, 3}, DType::kFloat32, {1, 2, 3, 4, 5, 6});
  CHECK(try_run(be, OpId::k_cumsum, {&x}, make_axis(2)).status().code() ==
        Code::kInvalidArgument);
  CHECK_FALSE(try_run(be, OpId::k_cumsum, {&x}, make_axis(-3)).is_ok());
}

}  // namespace
}  // namespace gt::test
