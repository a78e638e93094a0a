// argsort against a reference that sorts (rank key, position) tuples: a NaN ranks above every
// number (ascending: last; descending: first), equal values keep their positions' order. Random
// inputs with many ties check stability; every dim, dtype, 0-d and empty.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "tests/unit/cpu/cpu_test_util.h"

namespace gt::test {
namespace {

GT_TESTS_OPS("argsort");

std::vector<double> ref_argsort(const std::vector<double>& v, const Shape& s, int64_t dim,
                                bool descending) {
  std::vector<double> out(v.size());
  if (s.rank() == 0) return {0.0};
  const int d = static_cast<int>(dim < 0 ? dim + s.rank() : dim);
  for (int64_t i = 0; i < s.numel(); ++i) {
    std::vector<int64_t> idx = unravel(i, s);
    if (idx[d] != 0) continue;  // one line per start
    std::vector<std::tuple<int, double, int64_t>> line;
    for (int64_t k = 0; k < s[d]; ++k) {
      idx[d] = k;
      const double x = v[static_cast<size_t>(ravel(idx, s))];
      const bool nan = std::isnan(x);
      // Ascending: numbers (0) before NaN (1); descending: NaN (0) before numbers (1), larger first.
      line.emplace_back(descending ? (nan ? 0 : 1) : (nan ? 1 : 0),
                        nan ? 0.0 : (descending ? -x : x), k);
    }
    std::sort(line.begin(), line.end());
    for (int64_t k = 0; k < s[d]; ++k) {
      idx[d] = k;
      out[static_cast<size_t>(ravel(idx, s))] = static_cast<double>(std::get<2>(line[k]));
    }
  }
  return out;
}

void check_argsort(CpuBackend& be, const Tensor& x, const std::vector<double>& v, int64_t dim,
                   bool descending) {
  Tensor out = run_op(be, OpId::k_argsort, {&x}, make_sort(dim, descending));
  REQUIRE(out.meta.dtype == DType::kInt64);
  REQUIRE(out.meta.shape == x.meta.shape);
  INFO("argsort of " << str(x.meta.shape) << " " << dtype_name(x.meta.dtype) << " dim " << dim
                     << (descending ? " descending" : ""));
  CHECK(to_doubles(be, out) == ref_argsort(v, x.meta.shape, dim, descending));
}

TEST_CASE("cpu argsort: every dim, dtype, direction, 0-d and empty, stable on ties",
          "[cpu][sort]") {
  CpuBackend be;
  std::mt19937 rng(77);
  const std::vector<Shape> shapes = {Shape{3, 5, 4}, Shape{17}, Shape{2, 1, 6}, Shape{},
                                     Shape{0, 3},    Shape{3, 0}};
  for (DType dt : all_dtypes())
    for (const Shape& s : shapes) {
      auto v = random_values(rng, s.numel(), dt, -3, 3);
      for (auto& x : v) x = std::round(x);  // few distinct values: many ties
      Tensor x = make_tensor(be, s, dt, v);
      for (int64_t d = -std::max(s.rank(), 1); d < std::max(s.rank(), 1); ++d)
        for (bool desc : {false, true}) check_argsort(be, x, v, d, desc);
    }
}

TEST_CASE("cpu argsort: NaN above infinity, -0.0 equal to 0.0, long lines over threads",
          "[cpu][sort]") {
  CpuBackend be;
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = INFINITY;
  const std::vector<double> v = {nan, 1, -inf, 0.0, inf, -0.0, nan, -1};
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    Tensor x = make_tensor(be, Shape{8}, dt, v);
    CHECK(to_doubles(be, run_op(be, OpId::k_argsort, {&x}, make_sort(0, false))) ==
          std::vector<double>{2, 7, 3, 5, 1, 4, 0, 6});
    CHECK(to_doubles(be, run_op(be, OpId::k_argsort, {&x}, make_sort(0, true))) ==
          std::vector<double>{0, 6, 4, 1, 3, 5, 7, 2});
  }
  std::mt19937 rng(5);
  const Shape big{64, 3000};  // enough work for parallel_for to split the lines
  auto w = random_values(rng, big.numel(), DType::kFloat32, -100, 100);
  Tensor x = make_tensor(be, big, DType::kFloat32, w);
  check_argsort(be, x, w, 1, false);
  check_argsort(be, x, w, 0, true);
}

TEST_CASE("cpu argsort: a bad dim or flag is refused", "[cpu][sort]") {
  CpuBackend be;
  Tensor x = make_tensor(be, Shape{2, 3}, DType::kFloat32, {1, 2, 3, 4, 5, 6});
  CHECK(try_run(be, OpId::k_argsort, {&x}, make_sort(2, false)).status().code() ==
        Code::kInvalidArgument);
  CHECK_FALSE(try_run(be, OpId::k_argsort, {&x}, make_axis(0)).is_ok());
}

}  // namespace
}  // namespace gt::test
