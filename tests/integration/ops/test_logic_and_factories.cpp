// The composites PyTorch users type first (issue 13): any / all / isclose / allclose / equal / std
// and the factories randint / empty / eye / linspace / *_like, through real daemons, against
// closed forms and host references.
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "gt/autograd.h"
#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double host_any(const std::vector<double>& v) {
  for (double x : v)
    if (x != 0) return 1;  // NaN != 0
  return 0;
}
double host_all(const std::vector<double>& v) {
  for (double x : v)
    if (x == 0) return 0;
  return 1;
}
double host_std(const std::vector<double>& v, double correction) {
  const double m = ref_mean(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / std::max(0.0, static_cast<double>(v.size()) - correction));
}
}  // namespace

TEST_CASE("any / all over everything and along a dim, with NaN, empty, int and bool inputs",
          "[ops][logic]") {
  daemons();
  Ref a = ref_of({2, 3, 2}, {0, 1, 0, 0, 0, 0, kNaN, 2, -1, 3, 0.5, 4});
  Tensor t = up(a, gt::kFloat32);
  CHECK_TENSOR(t.any(), reduce_ref(a, std::nullopt, false, host_any), gt::kBool);
  CHECK_TENSOR(t.all(), reduce_ref(a, std::nullopt, false, host_all), gt::kBool);
  for (int64_t d : {0, 1, 2, -1}) {
    for (bool keep : {false, true}) {
      INFO("dim " << d << " keepdim " << keep);
      CHECK_TENSOR(t.any(d, keep), reduce_ref(a, d, keep, host_any), gt::kBool);
      CHECK_TENSOR(t.all(d, keep), reduce_ref(a, d, keep, host_all), gt::kBool);
    }
  }
  // Integer and bool inputs, and the empty reductions (any: false, all: true).
  Ref ints = ref_of({2, 2}, {0, 5, 0, 0});
  CHECK_TENSOR(up(ints, gt::kInt64).any(1), ref_of({2}, {1, 0}), gt::kBool);
  CHECK_TENSOR(up(ints, gt::kInt32).all(0), ref_of({2}, {0, 0}), gt::kBool);
  Tensor b = up(ints, gt::kInt64).ne(0);
  CHECK_TENSOR(b.any(0), ref_of({2}, {0, 1}), gt::kBool);
  CHECK_TENSOR(b.all(), ref_of({}, {0}), gt::kBool);
  CHECK_TENSOR(gt::ones({2, 2}, gt::kBool).all(), ref_of({}, {1}), gt::kBool);
  CHECK_TENSOR(gt::zeros({0, 3}).any(), ref_of({}, {0}), gt::kBool);
  CHECK_TENSOR(gt::zeros({0, 3}).all(), ref_of({}, {1}), gt::kBool);
  CHECK_TENSOR(gt::zeros({0, 3}).all(0), ref_of({3}, {1, 1, 1}), gt::kBool);
  CHECK_THROWS_WITH(t.any(3), Catch::Contains("dim"));
}

TEST_CASE("std: sqrt of the variance, its corrections, dims and gradient", "[ops][logic]") {
  daemons();
  Ref a = rnd({3, 5}, -40, 40, 8, 11);
  Tensor t = up(a, gt::kFloat32);
  for (double corr : {1.0, 0.0}) {
    auto f = [corr](const std::vector<double>& v) { return host_std(v, corr); };
    CHECK_TENSOR(t.std(std::nullopt, corr), reduce_ref(a, std::nullopt, false, f), gt::kFloat32);
    CHECK_TENSOR(t.std(1, corr, true), reduce_ref(a, 1, true, f), gt::kFloat32);
    CHECK_TENSOR(t.std(0, corr), reduce_ref(a, 0, false, f), gt::kFloat32);
  }
  // d std / d x_i = (x_i - mean) / ((n - 1) std), the closed form.
  Tensor x = up(a, gt::kFloat32).requires_grad_(true);
  x.std().backward();
  const double s = host_std(a.v, 1), m = ref_mean(a.v);
  Ref want = map1(a, [&](double v) { return (v - m) / ((a.v.size() - 1) * s); });
  CHECK_TENSOR(x.grad(), want, gt::kFloat32);
  CHECK_THROWS(gt::ones({2}, gt::kInt64).std());  // floating only, as var
}

TEST_CASE("isclose / allclose / equal: tolerances, infinities, NaN, dtypes, shapes",
          "[ops][logic]") {
  daemons();
  Ref a = ref_of({7}, {1, 1, 0, kInf, kInf, kNaN, 1});
  Ref b = ref_of({7}, {1 + 5e-6, 1 + 2e-5, 1e-9, kInf, -kInf, kNaN, kInf});
  Tensor ta = up(a, gt::kFloat32), tb = up(b, gt::kFloat32);
  // |a - b| <= 1e-8 + 1e-5 |b| (finite), or a == b.
  CHECK_TENSOR(ta.isclose(tb), ref_of({7}, {1, 0, 1, 1, 0, 0, 0}), gt::kBool);
  CHECK_TENSOR(ta.isclose(tb, 1e-5, 1e-8, true), ref_of({7}, {1, 0, 1, 1, 0, 1, 0}), gt::kBool);
  CHECK_TENSOR(ta.isclose(tb, 1e-4), ref_of({7}, {1, 1, 1, 1, 0, 0, 0}), gt::kBool);
  CHECK_TENSOR(ta.isclose(tb, 0, 0), ref_of({7}, {0, 0, 0, 1, 0, 0, 0}), gt::kBool);
  // Broadcast, integer operands (the tolerance promotes), bool operands.
  CHECK_TENSOR(gt::arange(4).isclose(gt::full({1}, int64_t{2})), ref_of({4}, {0, 0, 1, 0}), gt::kBool);
  CHECK_TENSOR(up(ref_of({2}, {1, 0}), gt::kBool).isclose(up(ref_of({2}, {1, 1}), gt::kBool)),
               ref_of({2}, {1, 0}), gt::kBool);
  CHECK_THROWS_WITH(ta.isclose(tb.to(gt::kFloat16)), Catch::Contains("one dtype"));
  CHECK_THROWS_WITH(ta.isclose(tb, -1), Catch::Contains("non-negative"));

  CHECK(gt::allclose(ta.slice(0, 0, 1), tb.slice(0, 0, 1)));
  CHECK_FALSE(gt::allclose(ta, tb));
  CHECK_FALSE(ta.allclose(ta));  // NaN
  CHECK(ta.allclose(ta, 1e-5, 1e-8, true));
  CHECK(gt::allclose(gt::zeros({0}), gt::zeros({0})));

  CHECK(gt::equal(gt::arange(5), gt::arange(5)));
  CHECK(gt::equal(gt::arange(5), gt::arange(5).to(gt::kFloat32)));  // after promotion, as torch
  CHECK_FALSE(gt::equal(gt::arange(5), gt::arange(4)));               // shapes differ
  CHECK_FALSE(gt::equal(gt::arange(4).reshape({2, 2}), gt::arange(4)));
  CHECK_FALSE(gt::equal(ta, ta));  // NaN is not equal to itself
  CHECK_FALSE(gt::equal(gt::ones({2, 2}), gt::ones({1, 2})));  // no broadcasting
  CHECK(gt::equal(gt::zeros({0, 2}), gt::zeros({0, 2})));
}

TEST_CASE("eye, linspace, empty and the *_like factories", "[ops][creation]") {
  daemons();
  CHECK_TENSOR(gt::eye(3), ref_of({3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1}), gt::kFloat32);
  CHECK_TENSOR(gt::eye(2, 3, gt::kInt64), ref_of({2, 3}, {1, 0, 0, 0, 1, 0}), gt::kInt64);
  CHECK_TENSOR(gt::eye(0), ref_of({0, 0}, {}), gt::kFloat32);
  CHECK_TENSOR(gt::eye(2, 0, gt::kBool), ref_of({2, 0}, {}), gt::kBool);
  CHECK_THROWS_WITH(gt::eye(-1), Catch::Contains("non-negative"));

  struct Case { double start, end; int64_t steps; };
  for (Case c : {Case{0, 1, 7}, Case{-3.3, 5.1, 100}, Case{1e6, -2.5, 1001}, Case{2, 2, 4}}) {
    INFO("linspace(" << c.start << ", " << c.end << ", " << c.steps << ")");
    std::vector<double> want;
    for (int64_t i = 0; i < c.steps; ++i)
      want.push_back(c.start + (c.end - c.start) * static_cast<double>(i) / (c.steps - 1));
    std::vector<float> got = gt::linspace(c.start, c.end, c.steps).to_vector<float>();
    REQUIRE(got.size() == want.size());
    CHECK(got.front() == static_cast<float>(c.start));  // both ends exact
    CHECK(got.back() == static_cast<float>(c.end));
    const double scale = std::max(std::fabs(c.start), std::fabs(c.end));
    for (size_t i = 0; i < got.size(); ++i) CHECK(std::fabs(got[i] - want[i]) <= 2e-7 * scale + 1e-12);
  }
  CHECK_TENSOR(gt::linspace(-2, 3, 1), ref_of({1}, {-2}), gt::kFloat32);
  CHECK_TENSOR(gt::linspace(0, 1, 0), ref_of({0}, {}), gt::kFloat32);
  CHECK_TENSOR(gt::linspace(0, 10, 5, gt::kInt64), ref_of({5}, {0, 2, 5, 7, 10}), gt::kInt64);
  CHECK_THROWS_WITH(gt::linspace(0, 1, -1), Catch::Contains("non-negative"));

  CHECK_TENSOR(gt::empty({2, 3}, gt::kInt32), ref_of({2, 3}, {0, 0, 0, 0, 0, 0}), gt::kInt32);
  Tensor like = gt::ones({2, 2}, gt::kFloat16);
  CHECK_TENSOR(gt::zeros_like(like), ref_of({2, 2}, {0, 0, 0, 0}), gt::kFloat16);
  CHECK_TENSOR(gt::ones_like(like, gt::kInt64), ref_of({2, 2}, {1, 1, 1, 1}), gt::kInt64);
  CHECK_TENSOR(gt::full_like(like, 2.5), ref_of({2, 2}, {2.5, 2.5, 2.5, 2.5}), gt::kFloat16);
  CHECK_TENSOR(gt::empty_like(like), ref_of({2, 2}, {0, 0, 0, 0}), gt::kFloat16);
  CHECK(gt::rand_like(like).dtype() == gt::kFloat16);
  CHECK(gt::randn_like(like).shape() == like.shape());
}

TEST_CASE("randint: the range, uniformity, reproducibility, big ranges and bad bounds",
          "[ops][creation]") {
  daemons();
  gt::manual_seed(7);
  std::vector<int64_t> v = gt::randint(-3, 5, {20000}).to_vector<int64_t>();
  std::map<int64_t, int> counts;
  for (int64_t x : v) ++counts[x];
  REQUIRE(counts.size() == 8);  // every value of [-3, 5) and nothing else
  CHECK(counts.begin()->first == -3);
  CHECK(counts.rbegin()->first == 4);
  // Chi-square with 7 degrees of freedom: the 99.99% quantile is ~29.9.
  double chi2 = 0;
  for (auto [value, n] : counts) chi2 += (n - 2500.0) * (n - 2500.0) / 2500.0;
  CHECK(chi2 < 29.9);

  gt::manual_seed(7);
  CHECK(gt::randint(-3, 5, {20000}).to_vector<int64_t>() == v);  // reproducible
  CHECK(gt::randint(0, 1, {4}).to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0, 0});
  CHECK(gt::randint(0, 2, {3}, gt::kInt32).dtype() == gt::kInt32);

  // A range beyond 2^24 reaches its top half (48 random bits, not 24).
  const int64_t big = int64_t{1} << 40;
  std::vector<int64_t> w = gt::randint(0, big, {256}).to_vector<int64_t>();
  int top = 0;
  for (int64_t x : w) {
    CHECK((x >= 0 && x < big));
    top += x >= big / 2;
  }
  CHECK((top > 64 && top < 192));
  CHECK_THROWS_WITH(gt::randint(5, 5, {2}), Catch::Contains("greater than low"));
  CHECK_THROWS_WITH(gt::randint(0, int64_t{1} << 50, {2}), Catch::Contains("2^48"));
}
