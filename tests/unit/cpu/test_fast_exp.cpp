// exp_f32 (workerd/kernels/fast_exp.h), the CPU's float exp, against exp in double rounded to
// float: at most 2 ulp apart over a sweep of every 509th float bit pattern (both signs, normal,
// subnormal and special inputs), and exactly expf's special values; compiled for the baseline
// target and, where the CPU has them, for AVX2 + FMA (the loops wide_simd() picks).
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "tests/unit/cpu/float_ulps.h"
#include "workerd/cpu/wide_simd.h"
#include "workerd/kernels/fast_exp.h"

using gt::worker::exp_f32;

namespace {


float exp_base(float x) { return exp_f32(x); }
GT_WIDE_SIMD_TARGET float exp_wide(float x) { return exp_f32(x); }

}  // namespace

TEST_CASE("exp_f32 is within 2 ulp of exp over the float range", "[cpu][exp]") {
  const bool wide = GENERATE(false, true);
  if (wide && !gt::worker::cpu::wide_simd()) return;  // (this CPU has no AVX2 + FMA)
  const gt::test::UlpSweep r = gt::test::sweep_ulps(wide ? exp_wide : exp_base,
                                                    [](double x) { return std::exp(x); }, true);
  INFO(r.special_wrong << " NaN / infinite / zero results wrong, e.g. at x = " << r.special_x);
  CHECK(r.special_wrong == 0);
  INFO((wide ? "AVX2 + FMA" : "baseline") << ": worst " << r.worst << " ulp at x = " << r.worst_x << " over " << r.checked << " finite results");
  CHECK(r.checked > 1000000);
  CHECK(r.worst <= 2);
}

TEST_CASE("exp_f32 special values are expf's", "[cpu][exp]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(exp_f32(0.0f) == 1.0f);
  CHECK(exp_f32(-0.0f) == 1.0f);
  CHECK(exp_f32(inf) == inf);
  CHECK(exp_f32(-inf) == 0.0f);
  CHECK(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
  CHECK(exp_f32(88.72283f) == std::exp(88.72283f));  // just below FLT_MAX
  CHECK(exp_f32(88.7229f) == inf);
  CHECK(exp_f32(1000.0f) == inf);
  CHECK(exp_f32(-103.0f) > 0.0f);  // a subnormal
  CHECK(exp_f32(-103.0f) < FLT_MIN);
  CHECK(exp_f32(-104.0f) == 0.0f);
  CHECK(exp_f32(1.0f) == Approx(2.718281828).epsilon(1e-7));
}
