// where, cast and copy_ against naive references.
#include <cmath>
#include <limits>

#include "tests/unit/cpu/cpu_test_util.h"

namespace gt::test {
namespace {

GT_TESTS_OPS("where", "cast", "copy_");

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST_CASE("cpu where: three-way broadcast and promotion", "[cpu][where]") {
  CpuBackend be;
  std::mt19937 rng(21);
  struct Case {
    Shape c, a, b;
    DType da, db;
  };
  const std::vector<Case> cases = {
      {Shape{3, 4}, Shape{3, 4}, Shape{3, 4}, DType::kFloat32, DType::kFloat32},
      {Shape{3, 1}, Shape{1, 4}, Shape{}, DType::kInt32, DType::kFloat16},
      {Shape{2, 1, 4}, Shape{3, 1}, Shape{4}, DType::kBFloat16, DType::kFloat16},
      {Shape{}, Shape{2, 3}, Shape{2, 3}, DType::kInt64, DType::kInt32},
      {Shape{5}, Shape{5}, Shape{1}, DType::kBool, DType::kBool},
      {Shape{0, 3}, Shape{3}, Shape{1, 3}, DType::kFloat32, DType::kInt64},
      {Shape{4, 1, 1}, Shape{1, 2, 1}, Shape{1, 1, 3}, DType::kBool, DType::kInt64},
      // the kernel's own loops: everything full, or one operand a single value (relu's
      // gradient: where(mask, 0.0, g)), for each element size
      {Shape{6, 5}, Shape{}, Shape{6, 5}, DType::kFloat32, DType::kFloat32},
      {Shape{6, 5}, Shape{6, 5}, Shape{1}, DType::kFloat64, DType::kFloat64},
      {Shape{37}, Shape{37}, Shape{37}, DType::kFloat16, DType::kFloat16},
      {Shape{9}, Shape{}, Shape{9}, DType::kInt64, DType::kInt64},
      {Shape{3, 300}, Shape{3, 300}, Shape{3, 300}, DType::kBool, DType::kBool},
  };
  for (const Case& k : cases) {
    auto vc = random_values(rng, k.c.numel(), DType::kBool);
    auto va = random_values(rng, k.a.numel(), k.da, -9, 9);
    auto vb = random_values(rng, k.b.numel(), k.db, -9, 9);
    Tensor c = make_tensor(be, k.c, DType::kBool, vc), a = make_tensor(be, k.a, k.da, va),
           b = make_tensor(be, k.b, k.db, vb);
    Tensor out = run_op(be, OpId::k_where, {&c, &a, &b});
    REQUIRE(out.meta.dtype == promote(k.da, k.db));
    const Shape& so = out.meta.shape;
    std::vector<double> want(static_cast<size_t>(so.numel()));
    for (int64_t i = 0; i < so.numel(); ++i) {
      auto idx = unravel(i, so);
      want[i] = vc[broadcast_source(idx, k.c)] != 0 ? va[broadcast_source(idx, k.a)]
                                                    : vb[broadcast_source(idx, k.b)];
      want[i] = quantize(want[i], out.meta.dtype);
    }
    check_close(to_doubles(be, out), want, out.meta.dtype, "where " + so.str());
  }
}

// The cast reference: floats -> ints truncate toward zero; NaN, +-inf and values whose
// truncation does not fit give the type's minimum, as torch's .to(int32/int64) on x86-64 CPUs
// (the conversion instruction's "integer indefinite"; this used to expect saturation and NaN ->
// 0, which torch never gives); -> bool is != 0.
double ref_cast(double v, DType to) {
  if (to == DType::kBool) return v != 0 ? 1 : 0;  // NaN != 0: true
  if (is_integral(to)) {
    const double lo = to == DType::kInt32 ? -2147483648.0 : -9223372036854775808.0;
    const double t = std::trunc(v);
    return t >= lo && t < -lo ? t : lo;  // false for NaN
  }
  return quantize(v, to);
}

TEST_CASE("cpu cast: every dtype pair", "[cpu][cast]") {
  CpuBackend be;
  std::mt19937 rng(22);
  for (DType from : all_dtypes())
    for (DType to : all_dtypes()) {
      auto v = random_values(rng, 50, from, -100, 100);
      if (is_floating(from)) {  // specials and truncation corners
        v[0] = quantize(kNaN, from);
        v[1] = -2.75;
        v[2] = 2.75;
        v[3] = -0.5;
        v[4] = 0;
        v[5] = quantize(kInf, from);
        v[6] = -v[5];
        v[7] = quantize(3e9, from);  // beyond int32 (float16: inf)
        v[8] = quantize(-2147483648.0, from);  // int32's minimum itself fits
        v[9] = quantize(2147483648.0, from);   // one past int32's maximum
        v[10] = quantize(1e20, from);          // beyond int64
        v[11] = quantize(-1e20, from);
      }
      Tensor a = make_tensor(be, Shape{5, 10}, from, v);
      Tensor out = run_op(be, OpId::k_cast, {&a}, make_cast(to));
      REQUIRE(out.meta.dtype == to);
      std::vector<double> want(v.size());
      for (size_t i = 0; i < v.size(); ++i) want[i] = ref_cast(v[i], to);
      check_close(to_doubles(be, out), want, to,
                  std::string("cast ") + dtype_name(from) + " -> " + dtype_name(to));
    }
  // empty and 0-d
  Tensor e = make_tensor(be, Shape{0, 2}, DType::kFloat32, {});
  CHECK(run_op(be, OpId::k_cast, {&e}, make_cast(DType::kInt64)).meta.shape == Shape{0, 2});
  Tensor s = make_tensor(be, Shape{}, DType::kFloat32, {-7.9});
  CHECK(to_doubles(be, run_op(be, OpId::k_cast, {&s}, make_cast(DType::kInt32))) ==
        std::vector<double>{-7});
}

TEST_CASE("cpu copy_: broadcast and convert into the destination", "[cpu][copy_]") {
  CpuBackend be;
  std::mt19937 rng(23);
  struct Case {
    Shape dst, src;
    DType ddt, sdt;
  };
  const std::vector<Case> cases = {
      {Shape{2, 3}, Shape{2, 3}, DType::kFloat32, DType::kFloat32},
      {Shape{2, 3}, Shape{3}, DType::kFloat32, DType::kFloat32},
      {Shape{4, 2, 3}, Shape{2, 1}, DType::kInt64, DType::kInt64},
      {Shape{2, 3}, Shape{}, DType::kFloat16, DType::kInt64},
      {Shape{3, 4}, Shape{3, 1}, DType::kBFloat16, DType::kBool},
      {Shape{5}, Shape{5}, DType::kInt32, DType::kFloat32},
      {Shape{2, 2}, Shape{1, 2}, DType::kBool, DType::kFloat32},
      {Shape{0, 3}, Shape{3}, DType::kFloat32, DType::kFloat32},
      {Shape{}, Shape{}, DType::kInt64, DType::kFloat16},
  };
  for (const Case& k : cases) {
    auto vd = random_values(rng, k.dst.numel(), k.ddt, -50, 50);
    auto vs = random_values(rng, k.src.numel(), k.sdt, -50, 50);
    Tensor dst = make_tensor(be, k.dst, k.ddt, vd), src = make_tensor(be, k.src, k.sdt, vs);
    run_in_place(be, OpId::k_copy_, dst, {&dst, &src}, {});
    std::vector<double> want(static_cast<size_t>(k.dst.numel()));
    for (int64_t i = 0; i < k.dst.numel(); ++i)
      want[i] = ref_cast(vs[broadcast_source(unravel(i, k.dst), k.src)], k.ddt);
    check_close(to_doubles(be, dst), want, k.ddt, "copy_ into " + k.dst.str());
  }
}

TEST_CASE("cpu copy_: source aliasing the destination storage", "[cpu][copy_]") {
  CpuBackend be;
  // dst [2, 2] = {1, 2, 3, 4}; src = a [2, 1] view of its first two elements (a reshape alias).
  // dst[i][j] = src[i] must use the values from before the copy: {{1, 1}, {2, 2}}.
  Tensor dst = make_tensor(be, Shape{2, 2}, DType::kFloat32, {1, 2, 3, 4});
  Tensor src{TensorMeta{Shape{2, 1}, DType::kFloat32}, dst.storage, nullptr};
  run_in_place(be, OpId::k_copy_, dst, {&dst, &src}, {});
  CHECK(to_doubles(be, dst) == std::vector<double>{1, 1, 2, 2});

  // The same storage as source and destination with the same shape: a no-op.
  Tensor d2 = make_tensor(be, Shape{3}, DType::kInt64, {5, 6, 7});
  Tensor s2{d2.meta, d2.storage, nullptr};
  run_in_place(be, OpId::k_copy_, d2, {&d2, &s2}, {});
  CHECK(to_doubles(be, d2) == std::vector<double>{5, 6, 7});

  // An alias reinterpreted as a transposed shape [3, 2] of a [2, 3] tensor via a row [3].
  Tensor d3 = make_tensor(be, Shape{2, 3}, DType::kInt32, {1, 2, 3, 4, 5, 6});
  Tensor s3{TensorMeta{Shape{3}, DType::kInt32}, d3.storage, nullptr};
  run_in_place(be, OpId::k_copy_, d3, {&d3, &s3}, {});
  CHECK(to_doubles(be, d3) == std::vector<double>{1, 2, 3, 1, 2, 3});
}

}  // namespace
}  // namespace gt::test
