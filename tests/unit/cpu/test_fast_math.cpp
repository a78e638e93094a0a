// log_f32, tanh_f32 and erf_f32 (workerd/kernels/fast_math.h), the CPU's float log / tanh /
// erf, against the double-precision functions rounded to float: at most 2 ulp apart over a
// sweep of every 509th float bit pattern (both signs, normal, subnormal and special inputs),
// and the C functions' special values; compiled for the baseline target and, where the CPU has
// them, for AVX2 + FMA (the loops wide_simd() picks), as test_fast_exp.cpp does for exp.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "tests/unit/cpu/float_ulps.h"
#include "workerd/cpu/wide_simd.h"
#include "workerd/kernels/fast_math.h"

using namespace gt::worker;

namespace {


float log_base(float x) { return log_f32(x); }
float tanh_base(float x) { return tanh_f32(x); }
float erf_base(float x) { return erf_f32(x); }
GT_WIDE_SIMD_TARGET float log_wide(float x) { return log_f32(x); }
GT_WIDE_SIMD_TARGET float tanh_wide(float x) { return tanh_f32(x); }
GT_WIDE_SIMD_TARGET float erf_wide(float x) { return erf_f32(x); }

struct Case {
  const char* name;
  float (*base)(float);
  float (*wide)(float);
  double (*reference)(double);
};

double ref_log(double x) { return std::log(x); }
double ref_tanh(double x) { return std::tanh(x); }
double ref_erf(double x) { return std::erf(x); }

}  // namespace

TEST_CASE("log_f32, tanh_f32 and erf_f32 are within 2 ulp over the float range", "[cpu][fast_math]") {
  const Case c = GENERATE(Case{"log", log_base, log_wide, ref_log},
                          Case{"tanh", tanh_base, tanh_wide, ref_tanh},
                          Case{"erf", erf_base, erf_wide, ref_erf});
  const bool wide = GENERATE(false, true);
  if (wide && !gt::worker::cpu::wide_simd()) return;  // (this CPU has no AVX2 + FMA)
  const gt::test::UlpSweep r = gt::test::sweep_ulps(wide ? c.wide : c.base, c.reference);
  INFO(c.name << " " << (wide ? "AVX2 + FMA" : "baseline") << ": worst " << r.worst
              << " ulp at x = " << r.worst_x << " over " << r.checked << " finite results");
  INFO(r.special_wrong << " NaN / infinite results wrong, e.g. at x = " << r.special_x);
  CHECK(r.special_wrong == 0);
  CHECK(r.checked > 4000000);
  CHECK(r.worst <= 2);
}

TEST_CASE("log_f32, tanh_f32 and erf_f32 give the C functions' special values", "[cpu][fast_math]") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(log_f32(1.0f) == 0.0f);
  CHECK(log_f32(0.0f) == -inf);
  CHECK(log_f32(-0.0f) == -inf);
  CHECK(log_f32(inf) == inf);
  CHECK(std::isnan(log_f32(-1.0f)));
  CHECK(std::isnan(log_f32(-inf)));
  CHECK(std::isnan(log_f32(nan)));
  CHECK(log_f32(FLT_TRUE_MIN) == Approx(std::log(static_cast<double>(FLT_TRUE_MIN))));
  CHECK(log_f32(FLT_MAX) == Approx(std::log(static_cast<double>(FLT_MAX))));
  CHECK(tanh_f32(0.0f) == 0.0f);
  CHECK(std::signbit(tanh_f32(-0.0f)));
  CHECK(tanh_f32(inf) == 1.0f);
  CHECK(tanh_f32(-inf) == -1.0f);
  CHECK(tanh_f32(50.0f) == 1.0f);
  CHECK(std::isnan(tanh_f32(nan)));
  CHECK(erf_f32(0.0f) == 0.0f);
  CHECK(std::signbit(erf_f32(-0.0f)));
  CHECK(erf_f32(inf) == 1.0f);
  CHECK(erf_f32(-inf) == -1.0f);
  CHECK(erf_f32(4.0f) == 1.0f);
  CHECK(erf_f32(-10.0f) == -1.0f);
  CHECK(std::isnan(erf_f32(nan)));
  CHECK(erf_f32(FLT_TRUE_MIN) == static_cast<float>(std::erf(static_cast<double>(FLT_TRUE_MIN))));
}
