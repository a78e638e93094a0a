// log, tanh and erf for float32 on the host as straight-line arithmetic the compiler vectorizes,
// like exp_f32 (fast_exp.h): glibc's logf / tanhf / erff are one call per element with branches
// inside, which made these ops 25-140x slower than a pass over memory (gt-bench-cpu-kernels).
// Each is within 2 ulp of the double-precision function rounded to float over the whole float
// range (tests/unit/cpu/test_fast_math.cpp sweeps it), with the C functions' special values.
//
//   log_f32:  x = m 2^e with m in [sqrt(1/2), sqrt(2)), then Cephes' logf: a degree-9 polynomial
//             in m - 1 and ln2 split in two; subnormals scaled by 2^23 first. log(0) = -inf,
//             log(x < 0) = NaN, log(inf) = inf.
//   tanh_f32: Cephes' tanhf: below |x| = 0.625 an odd polynomial, above 1 - 2 / (e^2|x| + 1)
//             with exp_f32 (which reaches inf, giving exactly +-1).
//   erf_f32:  below |x| = 0.9375, x P(x^2) (degree 7); above, 1 - e^-x^2 Q(1/|x|) (degree 10) up to
//             |x| = 4, where erf rounds to 1. P and Q were fitted for this file by
//             tools/fit_fast_erf.py (least squares in relative error against erf / erfc in
//             double: 1e-11 and 5e-9), not taken from a library.
// Both branches are computed and one is selected (no data-dependent branch: it vectorizes).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "workerd/kernels/fast_exp.h"

namespace gt::worker {

GT_FAST_MATH_INLINE float log_f32(float x) {
  const bool subnormal = x < 1.17549435e-38f;  // (zero and negatives too: replaced below)
  const float xs = subnormal ? x * 8388608.0f : x;
  uint32_t b;
  std::memcpy(&b, &xs, sizeof b);  // (std::bit_cast is C++20: the CUDA files include this too)
  int32_t e = static_cast<int32_t>((b >> 23) & 0xff) - 126 - (subnormal ? 23 : 0);
  const uint32_t mb = (b & 0x007fffffu) | 0x3f000000u;
  float m;
  std::memcpy(&m, &mb, sizeof m);  // in [0.5, 1)
  const bool low = m < 0.707106781186547524f;
  e = low ? e - 1 : e;
  m = low ? (m + m) - 1.0f : m - 1.0f;
  const float z = m * m;
  float y = ((((((((7.0376836292e-2f * m - 1.1514610310e-1f) * m + 1.1676998740e-1f) * m -
                  1.2420140846e-1f) * m + 1.4249322787e-1f) * m - 1.6668057665e-1f) * m +
               2.0000714765e-1f) * m - 2.4999993993e-1f) * m + 3.3333331174e-1f) * m * z;
  const float fe = static_cast<float>(e);
  y += -2.12194440e-4f * fe;
  y += -0.5f * z;
  float r = m + y;
  r += 0.693359375f * fe;
  const float inf = std::numeric_limits<float>::infinity();
  r = x == inf ? inf : r;
  r = x == 0.0f ? -inf : r;
  r = x < 0.0f ? std::numeric_limits<float>::quiet_NaN() : r;
  return x == x ? r : x;
}

GT_FAST_MATH_INLINE float tanh_f32(float x) {
  const float a = std::fabs(x);
  const float s = exp_f32(a + a);
  float large = 1.0f - 2.0f / (s + 1.0f);
  large = x < 0.0f ? -large : large;
  const float z = x * x;
  const float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
                        1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
  const float r = a < 0.625f ? small : large;  // (NaN: both are NaN)
  return x == 0.0f ? x : r;                     // (-0 stays -0: the sum above gives +0)
}

GT_FAST_MATH_INLINE float erf_f32(float x) {
  constexpr float kErfSplit = 0.9375f;  // x P(x^2) below, 1 - e^-x^2 Q(1/|x|) above
  const float a = std::fabs(x);
  const float s = a * a;
  // (Horner's rule written out: a loop over the coefficients would not vectorize.)
  const float p = (((((((-1.015515399e-05f * s + 1.141505157e-04f) * s - 8.501889522e-04f) * s +
                       5.222080744e-03f) * s - 2.686574566e-02f) * s + 1.128378696e-01f) * s -
                    3.761263870e-01f) * s + 1.128379167e+00f);
  const float small = x * p;
  const float u = 1.0f / (a < kErfSplit ? 1.0f : a);
  const float q = ((((((((((-2.780152189e-02f * u + 2.009671489e-01f) * u - 6.390665729e-01f) * u +
                          1.156412589e+00f) * u - 1.256598571e+00f) * u + 7.207198881e-01f) * u +
                       1.157435720e-02f) * u - 3.095912283e-01f) * u + 7.719498691e-03f) * u +
                    5.631966105e-01f) * u + 5.137578876e-05f);
  float large = 1.0f - exp_f32(-s) * q;
  large = a >= 4.0f ? 1.0f : large;
  large = x < 0.0f ? -large : large;
  const float r = a < kErfSplit ? small : large;
  return x == x ? r : x;
}

}  // namespace gt::worker
