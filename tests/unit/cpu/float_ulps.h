// Float bit patterns, ulp distances and the sweep over the float range, for the tests of the
// vectorized math functions (test_fast_exp.cpp, test_fast_math.cpp).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace gt::test {

inline float float_from_bits(uint32_t b) { return std::bit_cast<float>(b); }

// A monotone integer image of a float: the ulp distance of two floats is the difference.
inline int64_t float_ordered(float f) {
  const auto i = std::bit_cast<int32_t>(f);
  return i < 0 ? -static_cast<int64_t>(i & 0x7fffffff) : i;
}

// A sweep of every `stride`th float bit pattern: `f` against `reference` in double rounded to
// float. Where the reference is NaN or infinite (or, with exact_zero, 0) the result must be
// exactly that (NaN for NaN); elsewhere the ulp distance is measured.
struct UlpSweep {
  int64_t worst = 0;  // ulps
  float worst_x = 0;
  uint64_t checked = 0;        // finite results measured
  uint64_t special_wrong = 0;  // exact results missed
  float special_x = 0;
};

template <class F, class R>
UlpSweep sweep_ulps(F f, R reference, bool exact_zero = false, uint64_t stride = 509) {
  UlpSweep s;
  for (uint64_t b = 0; b <= 0xffffffffull; b += stride) {
    const float x = float_from_bits(static_cast<uint32_t>(b));
    const float got = f(x);
    const float want = static_cast<float>(reference(static_cast<double>(x)));
    if (std::isnan(want) || std::isinf(want) || (exact_zero && want == 0)) {
      if (std::isnan(want) ? !std::isnan(got) : got != want) s.special_x = x, ++s.special_wrong;
      continue;
    }
    const int64_t d = std::llabs(float_ordered(got) - float_ordered(want));
    if (d > s.worst) {
      s.worst = d;
      s.worst_x = x;
    }
    ++s.checked;
  }
  return s;
}

}  // namespace gt::test
