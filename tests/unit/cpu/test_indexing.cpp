// The indexing primitives (index_select gather scatter_add index_add one_hot), masked_fill,
// clamp, expand and the floating reductions var / logsumexp against naive references written
// with multi-index loops here. Out-of-range index values must be an OutOfRange status on the
// op (the kernels see them only at run time), never an out-of-bounds access.
#include <cmath>
#include <random>
#include <limits>

#include "tests/unit/cpu/cpu_test_util.h"
#include "require_ok.h"

namespace gt::test {
namespace {

GT_TESTS_OPS("index_select", "gather", "scatter_add", "index_add", "one_hot", "masked_fill",
             "clamp", "expand", "var", "logsumexp");

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

OpAttrs axis(int64_t d) { return make_axis(d); }

// Random in-range indices in [0, n) (n > 0).
std::vector<double> random_indices(std::mt19937& rng, int64_t count, int64_t n) {
  std::uniform_int_distribution<int64_t> d(0, n - 1);
  std::vector<double> v(static_cast<size_t>(count));
  for (auto& x : v) x = static_cast<double>(d(rng));
  return v;
}

void expect_out_of_range(const Result<Tensor>& r, const std::string& what) {
  INFO(what << ": " << r.status().to_string());
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == Code::kOutOfRange);
  CHECK(r.status().message().find("out of") != std::string::npos);
}

// The values of `v` (shape s) grouped by output position of a reduction over `dim`
// (kAllDims: one group), in output order.
std::vector<std::vector<double>> groups(const std::vector<double>& v, const Shape& s, int64_t dim) {
  if (dim == kAllDims || s.rank() == 0) return {v};
  const int d = static_cast<int>(dim < 0 ? dim + s.rank() : dim);
  Shape os;
  for (int i = 0; i < s.rank(); ++i)
    if (i != d) os.push_back(s[i]);
  std::vector<std::vector<double>> g(static_cast<size_t>(os.numel()));
  for (int64_t i = 0; i < s.numel(); ++i) {
    auto idx = unravel(i, s);
    std::vector<int64_t> oi;
    for (int k = 0; k < s.rank(); ++k)
      if (k != d) oi.push_back(idx[k]);
    g[ravel(oi, os)].push_back(v[i]);
  }
  return g;
}

TEST_CASE("cpu index_select: every dim, dtypes, int32/int64 indices, repeats", "[cpu][indexing]") {
  CpuBackend be;
  std::mt19937 rng(31);
  const Shape xs{3, 4, 5};
  for (DType dt : all_dtypes()) {
    auto xv = random_values(rng, xs.numel(), dt, -9, 9);
    Tensor x = make_tensor(be, xs, dt, xv);
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      const int d = static_cast<int>(dim < 0 ? dim + 3 : dim);
      for (DType it : {DType::kInt64, DType::kInt32}) {
        auto iv = random_indices(rng, 6, xs[d]);
        Tensor index = make_tensor(be, Shape{6}, it, iv);
        Tensor out = run_op(be, OpId::k_index_select, {&x, &index}, axis(dim));
        Shape want_shape = xs;
        want_shape[d] = 6;
        REQUIRE(out.meta.shape == want_shape);
        REQUIRE(out.meta.dtype == dt);
        std::vector<double> want;
        for (int64_t i = 0; i < want_shape.numel(); ++i) {
          auto idx = unravel(i, want_shape);
          idx[d] = static_cast<int64_t>(iv[idx[d]]);
          want.push_back(xv[ravel(idx, xs)]);
        }
        check_close(to_doubles(be, out), want, dt, "index_select dim " + std::to_string(dim));
      }
    }
  }
  // A 0-d index keeps the dim with extent 1; an empty index gives an empty result.
  Tensor x = make_tensor(be, Shape{2, 3}, DType::kFloat32, {1, 2, 3, 4, 5, 6});
  Tensor i0 = make_tensor(be, Shape{}, DType::kInt64, {2});
  Tensor o0 = run_op(be, OpId::k_index_select, {&x, &i0}, axis(1));
  CHECK(o0.meta.shape == Shape{2, 1});
  CHECK(to_doubles(be, o0) == std::vector<double>{3, 6});
  Tensor ie = make_tensor(be, Shape{0}, DType::kInt64, {});
  CHECK(run_op(be, OpId::k_index_select, {&x, &ie}, axis(0)).meta.shape == Shape{0, 3});
  // Out of range, both ends.
  for (double bad : {2.0, -1.0, 1e15}) {
    Tensor ib = make_tensor(be, Shape{3}, DType::kInt64, {0, bad, 1});
    expect_out_of_range(try_run(be, OpId::k_index_select, {&x, &ib}, axis(0)), "index_select");
  }
  Tensor ib32 = make_tensor(be, Shape{1}, DType::kInt32, {3});
  expect_out_of_range(try_run(be, OpId::k_index_select, {&x, &ib32}, axis(1)), "int32 index");
}

TEST_CASE("cpu gather: index smaller than the input, every dim, 0-d", "[cpu][indexing]") {
  CpuBackend be;
  std::mt19937 rng(32);
  const Shape xs{3, 4, 5};
  for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kInt64, DType::kBool}) {
    auto xv = random_values(rng, xs.numel(), dt, -9, 9);
    Tensor x = make_tensor(be, xs, dt, xv);
    for (int64_t dim : {0, 1, 2, -2}) {
      const int d = static_cast<int>(dim < 0 ? dim + 3 : dim);
      Shape is{2, 3, 4};
      is[d] = 7;  // along dim the index may be longer than x (repeats)
      auto iv = random_indices(rng, is.numel(), xs[d]);
      Tensor index = make_tensor(be, is, DType::kInt64, iv);
      Tensor out = run_op(be, OpId::k_gather, {&x, &index}, axis(dim));
      REQUIRE(out.meta.shape == is);
      std::vector<double> want;
      for (int64_t i = 0; i < is.numel(); ++i) {
        auto idx = unravel(i, is);
        idx[d] = static_cast<int64_t>(iv[i]);
        want.push_back(xv[ravel(idx, xs)]);
      }
      check_close(to_doubles(be, out), want, dt, "gather dim " + std::to_string(dim));
    }
  }
  Tensor s = make_tensor(be, Shape{}, DType::kFloat32, {7});
  Tensor i0 = make_tensor(be, Shape{}, DType::kInt32, {0});
  CHECK(to_doubles(be, run_op(be, OpId::k_gather, {&s, &i0}, axis(0))) == std::vector<double>{7});
  Tensor x = make_tensor(be, Shape{2, 3}, DType::kFloat32, {1, 2, 3, 4, 5, 6});
  Tensor bad = make_tensor(be, Shape{2, 1}, DType::kInt64, {0, 3});
  expect_out_of_range(try_run(be, OpId::k_gather, {&x, &bad}, axis(1)), "gather");
  Tensor neg = make_tensor(be, Shape{1, 2}, DType::kInt64, {-1, 0});
  expect_out_of_range(try_run(be, OpId::k_gather, {&x, &neg}, axis(0)), "gather negative");
}

TEST_CASE("cpu scatter_add and index_add: accumulation of repeats, dtypes", "[cpu][indexing]") {
  CpuBackend be;
  std::mt19937 rng(33);
  const Shape xs{3, 4};
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kInt32, DType::kInt64}) {
    // float16 rounds after every add (the reference once): allow a few half ulps.
    const Tol tol = dt == DType::kFloat16 ? Tol{2e-3, 2e-2} : tol_for(dt);
    auto xv = random_values(rng, xs.numel(), dt, -5, 5);
    Tensor x = make_tensor(be, xs, dt, xv);
    for (int64_t dim : {0, 1, -1}) {
      const int d = static_cast<int>(dim < 0 ? dim + 2 : dim);
      // scatter_add: index [2, 3] (smaller than x and src), src [3, 4].
      const Shape is{2, 3}, ss{3, 4};
      auto iv = random_indices(rng, is.numel(), xs[d]);
      auto sv = random_values(rng, ss.numel(), dt, -5, 5);
      Tensor index = make_tensor(be, is, DType::kInt64, iv), src = make_tensor(be, ss, dt, sv);
      Tensor out = run_op(be, OpId::k_scatter_add, {&x, &index, &src}, axis(dim));
      REQUIRE(out.meta.shape == xs);
      std::vector<double> want = xv;
      for (int64_t i = 0; i < is.numel(); ++i) {
        auto idx = unravel(i, is);
        const double s = sv[ravel(idx, ss)];
        idx[d] = static_cast<int64_t>(iv[i]);
        want[ravel(idx, xs)] += s;
      }
      for (auto& w : want) w = quantize(w, dt);
      check_close(to_doubles(be, out), want, tol, "scatter_add dim " + std::to_string(dim));

      // index_add: a 1-D index of 5 (repeats) and src with extent 5 along dim.
      auto jv = random_indices(rng, 5, xs[d]);
      Shape as = xs;
      as[d] = 5;
      auto av = random_values(rng, as.numel(), dt, -5, 5);
      Tensor j = make_tensor(be, Shape{5}, DType::kInt32, jv), a = make_tensor(be, as, dt, av);
      Tensor out2 = run_op(be, OpId::k_index_add, {&x, &j, &a}, axis(dim));
      std::vector<double> want2 = xv;
      for (int64_t i = 0; i < as.numel(); ++i) {
        auto idx = unravel(i, as);
        idx[d] = static_cast<int64_t>(jv[idx[d]]);
        want2[ravel(idx, xs)] += av[i];
      }
      for (auto& w : want2) w = quantize(w, dt);
      check_close(to_doubles(be, out2), want2, tol, "index_add dim " + std::to_string(dim));
    }
  }
  // bool adds are or; the input is not modified.
  Tensor b = make_tensor(be, Shape{3}, DType::kBool, {0, 1, 0});
  Tensor bi = make_tensor(be, Shape{2}, DType::kInt64, {2, 2});
  Tensor bs = make_tensor(be, Shape{2}, DType::kBool, {1, 1});
  CHECK(to_doubles(be, run_op(be, OpId::k_scatter_add, {&b, &bi, &bs}, axis(0))) ==
        std::vector<double>{0, 1, 1});
  CHECK(to_doubles(be, b) == std::vector<double>{0, 1, 0});
  // Out of range.
  Tensor x = make_tensor(be, Shape{2, 2}, DType::kFloat32, {1, 2, 3, 4});
  Tensor src = make_tensor(be, Shape{2, 2}, DType::kFloat32, {1, 1, 1, 1});
  Tensor bad = make_tensor(be, Shape{2, 2}, DType::kInt64, {0, 1, 2, 0});
  expect_out_of_range(try_run(be, OpId::k_scatter_add, {&x, &bad, &src}, axis(0)), "scatter_add");
  Tensor bad1 = make_tensor(be, Shape{2}, DType::kInt64, {1, -2});
  expect_out_of_range(try_run(be, OpId::k_index_add, {&x, &bad1, &src}, axis(1)), "index_add");
}

TEST_CASE("cpu one_hot: int64/int32 labels, out-of-range labels are an error", "[cpu][indexing]") {
  CpuBackend be;
  OpAttrs five = make_num_classes(5);
  for (DType lt : {DType::kInt64, DType::kInt32}) {
    Tensor l = make_tensor(be, Shape{2, 3}, lt, {0, 4, 2, 2, 1, 3});
    Tensor out = run_op(be, OpId::k_one_hot, {&l}, five);
    REQUIRE(out.meta.shape == Shape{2, 3, 5});
    REQUIRE(out.meta.dtype == DType::kInt64);
    std::vector<double> want(30, 0);
    const int labels[] = {0, 4, 2, 2, 1, 3};
    for (int i = 0; i < 6; ++i) want[i * 5 + labels[i]] = 1;
    CHECK(to_doubles(be, out) == want);
  }
  Tensor e = make_tensor(be, Shape{0}, DType::kInt64, {});
  CHECK(run_op(be, OpId::k_one_hot, {&e}, five).meta.shape == Shape{0, 5});
  Tensor s = make_tensor(be, Shape{}, DType::kInt64, {1});
  CHECK(to_doubles(be, run_op(be, OpId::k_one_hot, {&s}, make_num_classes(2))) ==
        std::vector<double>{0, 1});
  for (double bad : {5.0, -1.0}) {
    Tensor l = make_tensor(be, Shape{2}, DType::kInt64, {0, bad});
    auto r = try_run(be, OpId::k_one_hot, {&l}, five);
    expect_out_of_range(r, "one_hot");
    CHECK(r.status().message().find("num_classes = 5") != std::string::npos);
  }
}

TEST_CASE("cpu masked_fill: broadcast mask, value conversion", "[cpu][masked_fill]") {
  CpuBackend be;
  std::mt19937 rng(34);
  struct Case {
    Shape x, m;
  };
  const std::vector<Case> cases = {{Shape{3, 4}, Shape{3, 4}}, {Shape{3, 4}, Shape{4}},
                                   {Shape{3, 1}, Shape{2, 1, 4}}, {Shape{}, Shape{5}},
                                   {Shape{0, 2}, Shape{2}}};
  for (DType dt : all_dtypes()) {
    for (const Case& k : cases) {
      auto xv = random_values(rng, k.x.numel(), dt, -9, 9);
      auto mv = random_values(rng, k.m.numel(), DType::kBool);
      Tensor x = make_tensor(be, k.x, dt, xv), m = make_tensor(be, k.m, DType::kBool, mv);
      const double value = -2.75;
      Tensor out = run_op(be, OpId::k_masked_fill, {&x, &m}, make_fill_value(value));
      REQUIRE(out.meta.dtype == dt);
      const Shape& so = out.meta.shape;
      const double fill = is_integral(dt) ? -2.0 : quantize(value, dt);
      std::vector<double> want;
      for (int64_t i = 0; i < so.numel(); ++i) {
        auto idx = unravel(i, so);
        want.push_back(mv[broadcast_source(idx, k.m)] != 0 ? fill : xv[broadcast_source(idx, k.x)]);
      }
      check_close(to_doubles(be, out), want, dt, "masked_fill " + k.x.str() + " / " + k.m.str());
    }
  }
  Tensor x = make_tensor(be, Shape{2}, DType::kFloat32, {1, 2});
  Tensor m = make_tensor(be, Shape{2}, DType::kBool, {1, 0});
  CHECK(std::isinf(to_doubles(be, run_op(be, OpId::k_masked_fill, {&x, &m}, make_fill_value(-kInf)))[0]));
}

// torch.clamp on CPU: with both bounds a NaN one gives NaN everywhere; a lone NaN bound changes
// nothing (x.clamp(min=nan) == x; this used to expect NaN everywhere).
double ref_clamp(double v, std::optional<double> lo, std::optional<double> hi) {
  if (lo && hi && (std::isnan(*lo) || std::isnan(*hi))) return kNaN;
  if (lo && v < *lo) v = *lo;
  if (hi && v > *hi) v = *hi;
  return v;
}

TEST_CASE("cpu clamp: optional bounds, NaN, lo > hi, dtype lifting", "[cpu][clamp]") {
  CpuBackend be;
  std::mt19937 rng(35);
  struct Case {
    std::optional<double> lo, hi;
  };
  const std::vector<Case> cases = {{-1.5, 2.25}, {0.5, std::nullopt}, {std::nullopt, -0.75},
                                   {2.0, -1.0}, {kNaN, 1.0}, {-kInf, kInf},
                                   {kNaN, std::nullopt}, {std::nullopt, kNaN}, {0.5, kNaN}};
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    auto xv = random_values(rng, 40, dt, -3, 3);
    xv[0] = kNaN;
    Tensor x = make_tensor(be, Shape{5, 8}, dt, xv);
    for (const Case& c : cases) {
      Tensor out = run_op(be, OpId::k_clamp, {&x}, make_clamp(c.lo, c.hi, false));
      REQUIRE(out.meta.dtype == dt);
      std::vector<double> want;
      for (double v : xv) want.push_back(quantize(ref_clamp(v, c.lo, c.hi), dt));
      check_close(to_doubles(be, out), want, dt, "clamp");
    }
  }
  // Integer input: integral bounds keep the dtype; a float bound gives float32. (A bound beyond
  // int32 is refused by the shape rule, as torch.clamp refuses it: it used to saturate.)
  Tensor xi = make_tensor(be, Shape{6}, DType::kInt32, {-7, -2, 0, 3, 9, 2147483647});
  Tensor oi = run_op(be, OpId::k_clamp, {&xi}, make_clamp(-2.0, 2147483647.0, true));
  CHECK(oi.meta.dtype == DType::kInt32);
  CHECK(to_doubles(be, oi) == std::vector<double>{-2, -2, 0, 3, 9, 2147483647});
  Tensor of = run_op(be, OpId::k_clamp, {&xi}, make_clamp(-1.5, 2.5, false));
  CHECK(of.meta.dtype == DType::kFloat32);
  CHECK(to_doubles(be, of) == std::vector<double>{-1.5, -1.5, 0, 2.5, 2.5, 2.5});
  Tensor xl = make_tensor(be, Shape{3}, DType::kInt64, {-5, 5, 50});
  CHECK(to_doubles(be, run_op(be, OpId::k_clamp, {&xl}, make_clamp(std::nullopt, 10.0, true))) ==
        std::vector<double>{-5, 5, 10});
}

// int64 fill values and clamp bounds beyond 2^53 are exact (issue 18 item 5: they went through
// a double, so 2^62 + 1 became ...904).
TEST_CASE("cpu masked_fill and clamp: exact int64 values", "[cpu][clamp][masked_fill]") {
  CpuBackend be;
  const int64_t big = (int64_t{1} << 62) + 1;
  auto values = [&](const Tensor& t) {
    std::vector<int64_t> v(static_cast<size_t>(t.meta.shape.numel()));
    GT_REQUIRE_OK(be.copy_to_host(t, 0, v.data(), v.size() * 8, 0));
    return v;
  };
  Tensor x = make_tensor(be, Shape{3}, DType::kInt64, {1, 2, 3});
  Tensor m = make_tensor(be, Shape{3}, DType::kBool, {1, 0, 1});
  Tensor mf = run_op(be, OpId::k_masked_fill, {&x, &m}, make_fill_value(static_cast<double>(big), big));
  CHECK(values(mf) == std::vector<int64_t>{big, 2, big});
  Tensor lo = run_op(be, OpId::k_clamp, {&x},
                     make_clamp(ClampBound{static_cast<double>(big), ScalarKind::kInt, big}, std::nullopt));
  CHECK(lo.meta.dtype == DType::kInt64);
  CHECK(values(lo) == std::vector<int64_t>{big, big, big});
  Tensor hi = run_op(be, OpId::k_clamp, {&x},
                     make_clamp(ClampBound{2, ScalarKind::kInt, 2},
                                ClampBound{static_cast<double>(-big), ScalarKind::kInt, -big}));
  CHECK(values(hi) == std::vector<int64_t>{-big, -big, -big});  // lo > hi: hi everywhere
  // A bool x with integer bounds: int64 (torch.clamp)
  Tensor b = make_tensor(be, Shape{2}, DType::kBool, {1, 0});
  Tensor cb = run_op(be, OpId::k_clamp, {&b},
                     make_clamp(std::nullopt, ClampBound{0, ScalarKind::kInt, 0}));
  CHECK(cb.meta.dtype == DType::kInt64);
  CHECK(values(cb) == std::vector<int64_t>{0, 0});
}

TEST_CASE("cpu expand: new leading dims, size-1 dims, 0-d", "[cpu][expand]") {
  CpuBackend be;
  std::mt19937 rng(36);
  struct Case {
    Shape x, to;
  };
  const std::vector<Case> cases = {{Shape{3, 1}, Shape{2, 3, 4}}, {Shape{}, Shape{2, 2}},
                                   {Shape{4}, Shape{4}}, {Shape{1, 4}, Shape{3, 0, 4}},
                                   {Shape{2, 1, 3}, Shape{2, 5, 3}}};
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kInt64, DType::kBool}) {
    for (const Case& c : cases) {
      auto xv = random_values(rng, c.x.numel(), dt, -9, 9);
      Tensor x = make_tensor(be, c.x, dt, xv);
      Tensor out = run_op(be, OpId::k_expand, {&x}, make_reshape(c.to));
      REQUIRE(out.meta.shape == c.to);
      std::vector<double> want;
      for (int64_t i = 0; i < c.to.numel(); ++i) want.push_back(xv[broadcast_source(unravel(i, c.to), c.x)]);
      check_close(to_doubles(be, out), want, dt, "expand " + c.x.str() + " -> " + c.to.str());
    }
  }
}

double ref_var(const std::vector<double>& v, double correction) {
  const double n = static_cast<double>(v.size());
  if (v.empty()) return kNaN;
  double mean = 0;
  for (double x : v) mean += x / n;
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return ss / std::max(0.0, n - correction);
}

double ref_logsumexp(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::exp(x);  // fine for the small test values
  return std::log(s);
}

TEST_CASE("cpu var and logsumexp: every dim, keepdim, dtypes", "[cpu][reduce]") {
  CpuBackend be;
  std::mt19937 rng(37);
  const Shape xs{3, 4, 5};
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kBool}) {
    auto xv = random_values(rng, xs.numel(), dt, -3, 3);
    Tensor x = make_tensor(be, xs, dt, xv);
    const DType odt = is_floating(dt) ? dt : DType::kFloat32;
    for (int64_t dim : {kAllDims, int64_t{0}, int64_t{1}, int64_t{2}, int64_t{-1}}) {
      for (bool keep : {false, true}) {
        const std::string what = std::string(dtype_name(dt)) + " dim " + std::to_string(dim) +
                                 (keep ? " keepdim" : "");
        for (double corr : {1.0, 0.0, 2.5}) {
          if (!is_floating(dt)) {  // torch.var refuses integers and bools (they used to give float32)
            CHECK_FALSE(try_run(be, OpId::k_var, {&x}, make_var(dim, keep, corr)).is_ok());
            continue;
          }
          Tensor out = run_op(be, OpId::k_var, {&x}, make_var(dim, keep, corr));
          REQUIRE(out.meta.dtype == odt);
          std::vector<double> want;
          for (const auto& g : groups(xv, xs, dim)) want.push_back(quantize(ref_var(g, corr), odt));
          check_close(to_doubles(be, out), want, odt, "var " + what);
        }
        Tensor out = run_op(be, OpId::k_logsumexp, {&x}, make_reduce(dim, keep));
        REQUIRE(out.meta.dtype == odt);
        std::vector<double> want;
        for (const auto& g : groups(xv, xs, dim)) want.push_back(quantize(ref_logsumexp(g), odt));
        check_close(to_doubles(be, out), want, odt, "logsumexp " + what);
      }
    }
  }
}

TEST_CASE("cpu var and logsumexp over many rows: split over threads, each row as on one",
          "[cpu][reduce]") {
  // [300, 2, 500]: 600 rows of 500 along dim 2 and 1,000 rows of 300 along dim 0 (strided),
  // enough to split the rows between threads (2^17 elements and more).
  CpuBackend be;
  std::mt19937 rng(38);
  const Shape xs{300, 2, 500};
  auto xv = random_values(rng, xs.numel(), DType::kFloat32, -3, 3);
  Tensor x = make_tensor(be, xs, DType::kFloat32, xv);
  for (int64_t dim : {int64_t{2}, int64_t{0}}) {
    std::vector<double> want_lse, want_var;
    for (const auto& g : groups(xv, xs, dim)) {
      want_lse.push_back(quantize(ref_logsumexp(g), DType::kFloat32));
      want_var.push_back(quantize(ref_var(g, 1.0), DType::kFloat32));
    }
    const std::string what = "dim " + std::to_string(dim);
    check_close(to_doubles(be, run_op(be, OpId::k_logsumexp, {&x}, make_reduce(dim, false))),
                want_lse, DType::kFloat32, "logsumexp " + what);
    check_close(to_doubles(be, run_op(be, OpId::k_var, {&x}, make_var(dim, false, 1.0))),
                want_var, DType::kFloat32, "var " + what);
  }
}

TEST_CASE("cpu float32 logsumexp over long rows (the vectorized path) matches double math",
          "[cpu][reduce]") {
  // Rows around the 16 lanes and past the 256-element blocks, values spread over +-80 (so the
  // exps span many binades), one large value dominating some rows, NaN / +-inf in others.
  CpuBackend be;
  std::mt19937 rng(92);
  for (int64_t n : {1, 16, 17, 255, 256, 257, 3000}) {
    const int64_t rows = 12;
    std::vector<double> xv(static_cast<size_t>(rows * n));
    std::uniform_real_distribution<double> u(-80, 80);
    for (double& v : xv) v = static_cast<float>(u(rng));
    for (int64_t r = 0; r < rows; ++r) {
      double* row = xv.data() + r * n;
      if (r == 1) row[n / 2] = 1000;
      if (r == 2) row[n - 1] = kNaN;
      if (r == 3) row[0] = kInf;
      if (r == 4)
        for (int64_t k = 0; k < n; ++k) row[k] = -kInf;
    }
    Tensor x = make_tensor(be, Shape{rows, n}, DType::kFloat32, xv);
    auto got = to_doubles(be, run_op(be, OpId::k_logsumexp, {&x}, make_reduce(1, false)));
    REQUIRE(got.size() == static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      INFO("row " << r << " of " << n);
      const double* row = xv.data() + r * n;
      double m = -kInf;
      bool nan = false;
      for (int64_t k = 0; k < n; ++k) {
        nan = nan || std::isnan(row[k]);
        m = std::max(m, row[k]);
      }
      if (nan) {
        CHECK(std::isnan(got[static_cast<size_t>(r)]));
        continue;
      }
      if (std::isinf(m)) {
        CHECK(got[static_cast<size_t>(r)] == m);
        continue;
      }
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) sum += std::exp(row[k] - m);
      const double want = m + std::log(sum);
      // float rounding of the result and of x - m: a few float ulps of max(|m|, 1)
      CHECK(std::abs(got[static_cast<size_t>(r)] - want) <= 4e-7 * std::max(std::abs(m), 1.0));
    }
  }
}

TEST_CASE("cpu logsumexp is stable, var and logsumexp edge cases", "[cpu][reduce]") {
  CpuBackend be;
  Tensor x = make_tensor(be, Shape{5, 3}, DType::kFloat32,
                         {1000, 1000, 999, -kInf, -kInf, -kInf, -kInf, 2, -kInf, kInf, 1, 2, kNaN, 0, 1});
  auto got = to_doubles(be, run_op(be, OpId::k_logsumexp, {&x}, make_reduce(1, false)));
  REQUIRE(got.size() == 5);
  CHECK(got[0] == Approx(1000 + std::log(2 + std::exp(-1.0))));
  CHECK(got[1] == -kInf);
  CHECK(got[2] == Approx(2));
  CHECK(got[3] == kInf);
  CHECK(std::isnan(got[4]));
  // Empty reductions: logsumexp -inf, var NaN.
  Tensor e = make_tensor(be, Shape{0, 2}, DType::kFloat32, {});
  CHECK(to_doubles(be, run_op(be, OpId::k_logsumexp, {&e}, make_reduce(0, false))) ==
        std::vector<double>{-kInf, -kInf});
  auto ve = to_doubles(be, run_op(be, OpId::k_var, {&e}, make_var(kAllDims, false, 1)));
  CHECK(std::isnan(ve.at(0)));
  // One element with correction 1: 0 / 0 = NaN; n - correction < 0 with a spread: inf.
  Tensor one = make_tensor(be, Shape{1}, DType::kFloat32, {3});
  CHECK(std::isnan(to_doubles(be, run_op(be, OpId::k_var, {&one}, make_var(0, false, 1)))[0]));
  Tensor two = make_tensor(be, Shape{2}, DType::kFloat32, {1, 3});
  CHECK(to_doubles(be, run_op(be, OpId::k_var, {&two}, make_var(0, false, 3)))[0] == kInf);
  // A large offset does not cost precision (two-pass).
  Tensor off = make_tensor(be, Shape{4}, DType::kFloat32, {1e6 + 1, 1e6 + 2, 1e6 + 3, 1e6 + 4});
  CHECK(to_doubles(be, run_op(be, OpId::k_var, {&off}, make_var(0, false, 1)))[0] ==
        Approx(5.0 / 3.0));
}

}  // namespace
}  // namespace gt::test
