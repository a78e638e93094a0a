// exp for float32 on the host as straight-line arithmetic the compiler vectorizes: glibc's expf
// is one call per element, which made exp (and every chain ending in it) several times slower
// than a pass over memory. Cephes' expf: x = n ln2 + r with ln2 split in two, a degree-7
// polynomial for e^r on [-ln2/2, ln2/2] (about 1 ulp; tests/unit/cpu/test_fast_exp.cpp checks
// it against exp in double over the whole float range), and 2^n applied as two halves so that
// results down to the smallest subnormal round correctly. As expf: NaN gives NaN, +inf and
// x > ln(FLT_MAX) give inf, -inf and x < about -103.97 give 0. No FMA contraction is assumed
// either way (the baseline x86-64 target has none).
#pragma once

#include <cstdint>
#include <cstring>

namespace gt::worker {

// Always inlined, as GT_HOST_DEVICE (numeric.h): the bodies of vectorized loops.
#define GT_FAST_MATH_INLINE __attribute__((always_inline)) inline

GT_FAST_MATH_INLINE float exp_f32(float x) {
  // Clamped first (NaN stays NaN: both comparisons are false): -104 already gives 0, 89 inf.
  float v = x > 89.0f ? 89.0f : x;
  v = v < -104.0f ? -104.0f : v;
  // n = round(v / ln2), to nearest even (adding 1.5 * 2^23 rounds; |v / ln2| < 2^22).
  const float shifter = 12582912.0f;
  float n = (v * 1.44269504088896341f + shifter) - shifter;
  const float r = (v - n * 0.693359375f) - n * -2.12194440e-4f;
  const float z = r * r;
  const float p =
      (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r +
         4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f) * z + r + 1.0f;
  n = v == v ? n : 0.0f;  // (a NaN converted to int would be undefined)
  const int32_t k = static_cast<int32_t>(n);  // in [-150, 129]
  const int32_t h = k >> 1, l = k - h;        // each in [-75, 65]: 2^h and 2^l are normal
  const uint32_t bh = static_cast<uint32_t>(h + 127) << 23, bl = static_cast<uint32_t>(l + 127) << 23;
  float sh, sl;
  std::memcpy(&sh, &bh, sizeof sh);
  std::memcpy(&sl, &bl, sizeof sl);
  const float e = p * sh * sl;
  return v == v ? e : x;
}

}  // namespace gt::worker
