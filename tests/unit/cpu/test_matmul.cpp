// matmul against a naive double triple loop over the broadcast batch multi-index.
#include <cmath>

#include "tests/unit/cpu/cpu_test_util.h"
#include "workerd/cpu/kernels.h"
#include "workerd/fusion.h"

namespace gt::test {
namespace {

GT_TESTS_OPS("matmul");

struct RefMatmul {
  Shape out;
  std::vector<double> val, scale;  // scale: sum |a||b| per element, for the tolerance
};

RefMatmul ref_matmul(const std::vector<double>& va, const Shape& sa0, const std::vector<double>& vb,
                     const Shape& sb0) {
  // Promote vectors the PyTorch way, then drop the added dims from the result.
  Shape sa = sa0.rank() == 1 ? Shape{1, sa0[0]} : sa0;
  Shape sb = sb0.rank() == 1 ? Shape{sb0[0], 1} : sb0;
  const int64_t m = sa[sa.rank() - 2], k = sa[sa.rank() - 1], n = sb[sb.rank() - 1];
  REQUIRE(sb[sb.rank() - 2] == k);
  Shape ba, bb;
  for (int i = 0; i < sa.rank() - 2; ++i) ba.push_back(sa[i]);
  for (int i = 0; i < sb.rank() - 2; ++i) bb.push_back(sb[i]);
  Shape batch;
  int r = std::max(ba.rank(), bb.rank());
  for (int i = 0; i < r; ++i) {
    int ia = i - (r - ba.rank()), ib = i - (r - bb.rank());
    int64_t da = ia >= 0 ? ba[ia] : 1, db = ib >= 0 ? bb[ib] : 1;
    batch.push_back(da == 1 ? db : da);
  }
  RefMatmul res;
  res.out = batch;
  if (sa0.rank() != 1) res.out.push_back(m);
  if (sb0.rank() != 1) res.out.push_back(n);
  for (int64_t bi = 0; bi < batch.numel(); ++bi) {
    auto idx = unravel(bi, batch);
    int64_t oa = broadcast_source(idx, ba) * m * k, ob = broadcast_source(idx, bb) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, sc = 0;
        for (int64_t p = 0; p < k; ++p) {
          s += va[oa + i * k + p] * vb[ob + p * n + j];
          sc += std::fabs(va[oa + i * k + p] * vb[ob + p * n + j]);
        }
        res.val.push_back(s);
        res.scale.push_back(sc);
      }
  }
  return res;
}

void check_matmul(CpuBackend& be, std::mt19937& rng, const Shape& sa, DType da, const Shape& sb,
                  DType db) {
  auto va = random_values(rng, sa.numel(), da, -3, 3);
  auto vb = random_values(rng, sb.numel(), db, -3, 3);
  Tensor a = make_tensor(be, sa, da, va), b = make_tensor(be, sb, db, vb);
  Tensor out = run_op(be, OpId::k_matmul, {&a, &b});
  const DType odt = da;  // both operands have one dtype (matmul does not promote)
  REQUIRE(out.meta.dtype == odt);
  RefMatmul ref = ref_matmul(va, sa, vb, sb);
  INFO("matmul " << sa.str() << " " << dtype_name(da) << " x " << sb.str() << " "
                 << dtype_name(db));
  REQUIRE(out.meta.shape == ref.out);
  auto got = to_doubles(be, out);
  REQUIRE(got.size() == ref.val.size());
  // Error bound: the output's rounding plus float32 accumulation over k terms.
  Tol t = tol_for(odt);
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double allowed = is_floating(odt) ? t.rtol * std::fabs(ref.val[i]) + 1e-5 * ref.scale[i] + 1e-6
                                      : 0.0;
    if (std::fabs(got[i] - ref.val[i]) > allowed) {
      if (bad < 5) UNSCOPED_INFO("[" << i << "] got " << got[i] << " want " << ref.val[i]);
      ++bad;
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("cpu matmul: shapes incl. vectors, batches, broadcasting", "[cpu][matmul]") {
  CpuBackend be;
  std::mt19937 rng(41);
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {Shape{3, 4}, Shape{4, 5}},          {Shape{4}, Shape{4, 5}},
      {Shape{3, 4}, Shape{4}},             {Shape{4}, Shape{4}},
      {Shape{2, 3, 4}, Shape{4, 5}},       {Shape{4}, Shape{2, 4, 5}},
      {Shape{2, 3, 4}, Shape{4}},          {Shape{2, 1, 3, 4}, Shape{3, 4, 2}},
      {Shape{1, 3, 4}, Shape{2, 4, 5}},    {Shape{3, 4}, Shape{2, 4, 5}},
      {Shape{2, 3, 4}, Shape{2, 4, 5}},    {Shape{1, 1}, Shape{1, 1}},
      {Shape{64, 100}, Shape{100, 70}},    {Shape{3, 1}, Shape{1, 6}},
  };
  for (const auto& [sa, sb] : shapes)
    for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32,
                     DType::kInt64})
      check_matmul(be, rng, sa, dt, sb, dt);
}

// Products large enough to be split over the compute pool (matmul.cpp: by C's rows or columns;
// the comments say which on 2 threads), float32 and float64, batched ones folded into rows; on a
// machine with one hardware thread they run whole.
TEST_CASE("cpu matmul: large products split over the compute pool", "[cpu][matmul]") {
  CpuBackend be;
  std::mt19937 rng(47);
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {Shape{64, 784}, Shape{784, 256}},   // by columns (the MLP's first layer)
      {Shape{256, 64}, Shape{64, 784}},    // by rows (128 a part)
      {Shape{300, 64}, Shape{64, 40}},     // by rows
      {Shape{517, 93}, Shape{93, 33}},     // by rows, not a multiple of the split alignment
      {Shape{70, 95}, Shape{95, 1001}},    // by columns, ditto
      {Shape{2, 70, 200}, Shape{200, 90}}, // a batch folded into 140 rows
      {Shape{3, 40, 90}, Shape{3, 90, 120}},  // one product per batch entry
  };
  for (const auto& [sa, sb] : shapes)
    for (DType dt : {DType::kFloat32, DType::kFloat64}) check_matmul(be, rng, sa, dt, sb, dt);
}

// The hot paths' GEMM with transposes folded in (run_transposed_matmul: the MLP's forward and
// weight-gradient products), split like the plain one, against the products of the transposed
// operands written out.
TEST_CASE("cpu matmul: transposed operands, split over the compute pool", "[cpu][matmul]") {
  CpuBackend be;
  std::mt19937 rng(53);
  struct Dims {
    int64_t m, k, n;
  };
  for (Dims d : {Dims{64, 784, 256}, Dims{256, 64, 784}, Dims{301, 64, 40}, Dims{5, 3, 4}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const Shape sa = ta ? Shape{d.k, d.m} : Shape{d.m, d.k};
        const Shape sb = tb ? Shape{d.n, d.k} : Shape{d.k, d.n};
        auto va = random_values(rng, sa.numel(), DType::kFloat32, -3, 3);
        auto vb = random_values(rng, sb.numel(), DType::kFloat32, -3, 3);
        Tensor a = make_tensor(be, sa, DType::kFloat32, va);
        Tensor b = make_tensor(be, sb, DType::kFloat32, vb);
        Tensor out = make_tensor(be, Shape{d.m, d.n}, DType::kFloat32,
                                 std::vector<double>(static_cast<size_t>(d.m * d.n), 0.0));
        REQUIRE(worker::cpu::run_transposed_matmul({a, ta, b, tb, out, 0}).is_ok());
        auto got = to_doubles(be, out);
        INFO("m " << d.m << " k " << d.k << " n " << d.n << " ta " << ta << " tb " << tb);
        int bad = 0;
        for (int64_t i = 0; i < d.m; ++i)
          for (int64_t j = 0; j < d.n; ++j) {
            double want = 0, scale = 0;
            for (int64_t p = 0; p < d.k; ++p) {
              const double x = va[static_cast<size_t>(ta ? p * d.m + i : i * d.k + p)];
              const double y = vb[static_cast<size_t>(tb ? j * d.k + p : p * d.n + j)];
              want += x * y;
              scale += std::fabs(x * y);
            }
            const double g = got[static_cast<size_t>(i * d.n + j)];
            if (std::fabs(g - want) > 1e-5 * scale + 1e-6) ++bad;
          }
        CHECK(bad == 0);
      }
    }
  }
}

// torch.matmul does not promote ("expected scalar type Float but found Half"): the shape rule
// refuses mixed dtypes (it used to promote them).
TEST_CASE("cpu matmul: mixed dtypes are refused", "[cpu][matmul]") {
  CpuBackend be;
  const std::vector<std::pair<DType, DType>> pairs = {{DType::kInt32, DType::kFloat32},
                                                      {DType::kFloat16, DType::kBFloat16},
                                                      {DType::kInt32, DType::kInt64},
                                                      {DType::kFloat16, DType::kFloat32}};
  for (auto [da, db] : pairs) {
    Tensor a = make_tensor(be, Shape{2, 2}, da, {1, 2, 3, 4});
    Tensor b = make_tensor(be, Shape{2, 2}, db, {1, 0, 0, 1});
    CHECK_FALSE(try_run(be, OpId::k_matmul, {&a, &b}, {}).is_ok());
  }
}

TEST_CASE("cpu matmul: zero-size dims", "[cpu][matmul]") {
  CpuBackend be;
  std::mt19937 rng(43);
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kInt64}) {
    // k == 0: a [5, 0] by [0, 3] matrix product is all zeros.
    Tensor a = make_tensor(be, Shape{5, 0}, dt, {});
    Tensor b = make_tensor(be, Shape{0, 3}, dt, {});
    Tensor out = run_op(be, OpId::k_matmul, {&a, &b});
    REQUIRE(out.meta.shape == Shape{5, 3});
    CHECK(to_doubles(be, out) == std::vector<double>(15, 0.0));
    check_matmul(be, rng, Shape{0, 3}, dt, Shape{3, 2}, dt);
    check_matmul(be, rng, Shape{2, 3}, dt, Shape{3, 0}, dt);
    check_matmul(be, rng, Shape{0, 2, 3}, dt, Shape{3, 4}, dt);
    Tensor v0 = make_tensor(be, Shape{0}, dt, {});
    Tensor dot = run_op(be, OpId::k_matmul, {&v0, &v0});
    CHECK(dot.meta.shape == Shape{});
    CHECK(to_doubles(be, dot) == std::vector<double>{0});
  }
}

TEST_CASE("cpu matmul: bool operands are rejected, not crashed", "[cpu][matmul]") {
  CpuBackend be;
  Tensor a = make_tensor(be, Shape{2, 2}, DType::kBool, {1, 0, 0, 1});
  CHECK_FALSE(try_run(be, OpId::k_matmul, {&a, &a}, {}).is_ok());
}

}  // namespace
}  // namespace gt::test
