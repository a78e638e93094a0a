// Creation ops and host uploads. Random ops are recomputed here with philox (element i of the
// tensor = f(seed, counter, i)) and checked for their distribution.
#include <cmath>
#include <cstring>

#include "gt/core/half.h"
#include "libgtcore/philox.h"
#include "tests/unit/cpu/cpu_test_util.h"
#include "require_ok.h"

namespace gt::test {
namespace {

GT_TESTS_OPS("zeros", "ones", "full", "arange", "rand", "randn", "from_host", "host_chunk");

TEST_CASE("cpu zeros / ones / full for every dtype", "[cpu][creation]") {
  CpuBackend be;
  for (DType dt : all_dtypes())
    for (const Shape& s : {Shape{}, Shape{0}, Shape{3, 4}, Shape{2, 1, 5}}) {
      const auto n = static_cast<size_t>(s.numel());
      CHECK(to_doubles(be, run_op(be, OpId::k_zeros, {}, make_shape_dtype(s, dt))) ==
            std::vector<double>(n, 0.0));
      CHECK(to_doubles(be, run_op(be, OpId::k_ones, {}, make_shape_dtype(s, dt))) ==
            std::vector<double>(n, 1.0));
      for (double v : {2.5, -7.75, 0.0}) {
        Tensor t = run_op(be, OpId::k_full, {}, make_full(s, dt, v));
        REQUIRE(t.meta == (TensorMeta{s, dt}));
        // to an integer: truncation toward zero; to bool: != 0
        double want = dt == DType::kBool ? (v != 0) : is_integral(dt) ? std::trunc(v) : v;
        CHECK(to_doubles(be, t) == std::vector<double>(n, want));
      }
    }
}

TEST_CASE("cpu arange in double, converted", "[cpu][creation]") {
  CpuBackend be;
  struct Case {
    double start, stop, step;
  };
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32,
                   DType::kInt64})
    for (Case c : {Case{0, 10, 1}, Case{-3, 3, 0.5}, Case{5, -5, -1.5}, Case{1, 1, 1},
                   Case{0, 1, 0.1}, Case{2, 2, -1}}) {  // (2, 0, 1) is refused: test_shape_rules
      Tensor t = run_op(be, OpId::k_arange, {}, make_arange(c.start, c.stop, c.step, dt));
      const auto n = static_cast<int64_t>(std::max(0.0, std::ceil((c.stop - c.start) / c.step)));
      REQUIRE(t.meta.shape == Shape{n});
      std::vector<double> want;
      for (int64_t i = 0; i < n; ++i) {
        double v = c.start + static_cast<double>(i) * c.step;
        want.push_back(is_integral(dt) ? std::trunc(v) : quantize(v, dt));
      }
      check_close(to_doubles(be, t), want, dt, "arange");
    }
  // Large int64 values are computed in double then converted (exact below 2^53).
  Tensor big = run_op(be, OpId::k_arange, {}, make_arange(1e15, 1e15 + 3, 1, DType::kInt64));
  CHECK(to_doubles(be, big) == std::vector<double>{1e15, 1e15 + 1, 1e15 + 2});
}

// rand's value: the uniform in the dtype, except that a 16-bit float never rounds up to 1.0 but
// gives its largest value below 1 (1 - 2^-11 for float16, 1 - 2^-8 for bfloat16).
double rand_value(float u, DType dt) {
  double q = quantize(u, dt);
  if (q < 1.0) return q;
  return dt == DType::kFloat16 ? 1.0 - 1.0 / 2048 : 1.0 - 1.0 / 256;
}

TEST_CASE("cpu rand / randn match philox element by element", "[cpu][creation]") {
  CpuBackend be;
  const uint64_t seed = 0x1234'5678'9abc'def0ull, counter = 77;
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    Shape s{3, 7, 5};
    Tensor u = run_op(be, OpId::k_rand, {}, make_random(s, dt, seed, counter));
    Tensor g = run_op(be, OpId::k_randn, {}, make_random(s, dt, seed, counter));
    auto gu = to_doubles(be, u), gg = to_doubles(be, g);
    std::vector<double> wu, wg;
    for (uint64_t i = 0; i < static_cast<uint64_t>(s.numel()); ++i) {
      wu.push_back(rand_value(philox::uniform(seed, counter, i), dt));
      wg.push_back(quantize(philox::normal(seed, counter, i), dt));
    }
    CHECK(gu == wu);  // bit-exact: the same function, the same conversion
    CHECK(gg == wg);
  }
  // Another counter gives other numbers; the same (seed, counter) the same ones.
  Shape s{64};
  auto a = to_doubles(be, run_op(be, OpId::k_rand, {}, make_random(s, DType::kFloat32, 1, 1)));
  auto b = to_doubles(be, run_op(be, OpId::k_rand, {}, make_random(s, DType::kFloat32, 1, 2)));
  auto c = to_doubles(be, run_op(be, OpId::k_rand, {}, make_random(s, DType::kFloat32, 1, 1)));
  CHECK(a != b);
  CHECK(a == c);
  // Integer dtypes are rejected by the rule.
  CHECK_FALSE(try_run(be, OpId::k_rand, {}, make_random(s, DType::kInt32, 1, 1)).is_ok());
}

TEST_CASE("cpu float64 rand / randn are 53-bit draws, not float32 ones widened",
          "[cpu][creation]") {
  CpuBackend be;
  const int64_t n = 20000;
  const OpAttrs attrs = make_random(Shape{n}, DType::kFloat64, 21, 4);
  auto u = to_doubles(be, run_op(be, OpId::k_rand, {}, attrs));
  auto g = to_doubles(be, run_op(be, OpId::k_randn, {}, attrs));
  int64_t beyond_float = 0;
  double su = 0, sg = 0, sg2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto idx = static_cast<uint64_t>(i);
    REQUIRE(u[i] == philox::uniform64(21, 4, idx));  // bit-exact
    REQUIRE(g[i] == philox::normal64(21, 4, idx));
    REQUIRE(u[i] >= 0.0);
    REQUIRE(u[i] < 1.0);
    beyond_float += static_cast<double>(static_cast<float>(u[i])) != u[i];
    su += u[i];
    sg += g[i];
    sg2 += g[i] * g[i];
  }
  // A float32 draw widened would always survive the round trip through float.
  CHECK(beyond_float > n * 9 / 10);
  CHECK(std::fabs(su / n - 0.5) < 0.01);  // 4.5 sigma: sd of the mean is 0.29 / sqrt(n)
  CHECK(std::fabs(sg / n) < 0.032);
  CHECK(std::fabs(sg2 / n - (sg / n) * (sg / n) - 1.0) < 0.05);
}

TEST_CASE("cpu rand in float16 / bfloat16 stays below 1", "[cpu][creation]") {
  CpuBackend be;
  const int64_t n = 1 << 16;
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    auto u = to_doubles(be, run_op(be, OpId::k_rand, {}, make_random(Shape{n}, dt, 99, 5)));
    int64_t rounded_up = 0, at_top = 0;
    const double top = rand_value(1.0f - 0x1p-24f, dt);
    for (int64_t i = 0; i < n; ++i) {
      const float x = philox::uniform(99, 5, static_cast<uint64_t>(i));
      rounded_up += quantize(x, dt) >= 1.0;
      at_top += u[i] == top;
      REQUIRE(u[i] >= 0.0);
      REQUIRE(u[i] < 1.0);
      REQUIRE(u[i] == rand_value(x, dt));
    }
    INFO(dtype_name(dt));
    CHECK(rounded_up > 0);  // the case happens (p = 2^-12 / 2^-9 per element) and was guarded
    CHECK(at_top >= rounded_up);
  }
}

TEST_CASE("cpu rand / randn statistics over 100k samples", "[cpu][creation]") {
  CpuBackend be;
  const int64_t n = 100000;
  const OpAttrs attrs = make_random(Shape{n}, DType::kFloat32, 9, 3);
  auto u = to_doubles(be, run_op(be, OpId::k_rand, {}, attrs));
  auto g = to_doubles(be, run_op(be, OpId::k_randn, {}, attrs));
  double su = 0, su2 = 0, sg = 0, sg2 = 0;
  double umin = 1, umax = 0;
  for (int64_t i = 0; i < n; ++i) {
    REQUIRE(u[i] >= 0.0);
    REQUIRE(u[i] < 1.0);
    umin = std::min(umin, u[i]);
    umax = std::max(umax, u[i]);
    su += u[i];
    su2 += u[i] * u[i];
    REQUIRE(std::isfinite(g[i]));
    sg += g[i];
    sg2 += g[i] * g[i];
  }
  // The threaded fill gives exactly the per-element philox values.
  for (int64_t i = 0; i < n; i += 7) {
    REQUIRE(u[i] == static_cast<double>(philox::uniform(9, 3, static_cast<uint64_t>(i))));
    REQUIRE(g[i] == static_cast<double>(philox::normal(9, 3, static_cast<uint64_t>(i))));
  }
  double mu = su / n, vu = su2 / n - mu * mu, mg = sg / n, vg = sg2 / n - mg * mg;
  CHECK(std::fabs(mu - 0.5) < 0.01);
  CHECK(std::fabs(vu - 1.0 / 12.0) < 0.005);
  CHECK(umin < 0.001);
  CHECK(umax > 0.999);
  CHECK(std::fabs(mg) < 0.02);
  CHECK(std::fabs(std::sqrt(vg) - 1.0) < 0.02);
  // A crude normality check: ~68.3% within one standard deviation.
  int64_t within = 0;
  for (double x : g) within += std::fabs(x) < 1.0;
  CHECK(std::fabs(static_cast<double>(within) / n - 0.6827) < 0.01);
}

TEST_CASE("cpu from_host: the first bytes given, the rest zero", "[cpu][creation]") {
  CpuBackend be;
  std::vector<float> host = {1.5f, -2.f, 3.25f};
  std::string bytes(reinterpret_cast<const char*>(host.data()), host.size() * sizeof(float));
  OpAttrs a = make_shape_dtype(Shape{2, 3}, DType::kFloat32);
  a.data = bytes;
  Tensor t = run_op(be, OpId::k_from_host, {}, a);
  CHECK(to_doubles(be, t) == std::vector<double>{1.5, -2, 3.25, 0, 0, 0});
  // Full contents in int64.
  std::vector<int64_t> ih = {5, -6, 7, 1LL << 40};
  std::string ib(reinterpret_cast<const char*>(ih.data()), ih.size() * 8);
  OpAttrs b = make_shape_dtype(Shape{4}, DType::kInt64);
  b.data = ib;
  CHECK(to_doubles(be, run_op(be, OpId::k_from_host, {}, b)) ==
        std::vector<double>{5, -6, 7, static_cast<double>(1LL << 40)});
  // No data at all: zeros; too much data: rejected.
  OpAttrs c = make_shape_dtype(Shape{3}, DType::kFloat16);
  CHECK(to_doubles(be, run_op(be, OpId::k_from_host, {}, c)) == std::vector<double>{0, 0, 0});
  OpAttrs d = make_shape_dtype(Shape{1}, DType::kFloat32);
  d.data = bytes;
  CHECK_FALSE(try_run(be, OpId::k_from_host, {}, d).is_ok());
}

TEST_CASE("cpu host_chunk writes at an offset and never out of bounds", "[cpu][creation]") {
  CpuBackend be;
  Tensor t = make_tensor(be, Shape{8}, DType::kInt32, std::vector<double>(8, 0));
  std::vector<int32_t> chunk = {11, 12, 13};
  std::string cb(reinterpret_cast<const char*>(chunk.data()), 12);
  OpAttrs a;
  a.push_int(8);  // byte offset: element 2
  a.data = cb;
  run_in_place(be, OpId::k_host_chunk, t, {&t}, a);
  CHECK(to_doubles(be, t) == std::vector<double>{0, 0, 11, 12, 13, 0, 0, 0});
  OpAttrs end;
  end.push_int(20);
  end.data = cb;  // bytes 20..32: exactly the end
  run_in_place(be, OpId::k_host_chunk, t, {&t}, end);
  CHECK(to_doubles(be, t) == std::vector<double>{0, 0, 11, 12, 13, 11, 12, 13});

  // Past the end / negative offsets: errors from run(), the tensor untouched.
  for (int64_t off : {int64_t{24}, int64_t{33}, int64_t{-4}}) {
    OpAttrs bad;
    bad.push_int(off);
    bad.data = cb;
    std::vector<const Tensor*> ins = {&t};
    worker::KernelArgs args{OpId::k_host_chunk, bad, ins, t, 0};
    CHECK_FALSE(be.run(args).is_ok());
  }
  CHECK(to_doubles(be, t) == std::vector<double>{0, 0, 11, 12, 13, 11, 12, 13});
}

TEST_CASE("cpu from_host and host_chunk store bool bytes as 0/1", "[cpu][creation]") {
  CpuBackend be;
  const std::string wire("\x00\x01\x02\xff\x80", 5);  // any nonzero byte from the wire is true
  OpAttrs a = make_shape_dtype(Shape{5}, DType::kBool);
  a.data = wire;
  Tensor t = run_op(be, OpId::k_from_host, {}, a);
  unsigned char raw[5] = {9, 9, 9, 9, 9};
  GT_REQUIRE_OK(be.copy_to_host(t, 0, raw, 5, 0));
  CHECK(std::vector<int>(raw, raw + 5) == std::vector<int>{0, 1, 1, 1, 1});
  OpAttrs c;
  c.push_int(3);
  const std::string chunk("\x00\x07", 2);  // attrs.data is a view: keep the bytes alive
  c.data = chunk;
  run_in_place(be, OpId::k_host_chunk, t, {&t}, c);
  GT_REQUIRE_OK(be.copy_to_host(t, 0, raw, 5, 0));
  CHECK(std::vector<int>(raw, raw + 5) == std::vector<int>{0, 1, 1, 0, 1});
}

}  // namespace
}  // namespace gt::test
