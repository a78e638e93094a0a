// Float bit patterns and ulp distances, for the sweeps of the vectorized math functions
// (test_fast_exp.cpp, test_fast_math.cpp).
#pragma once

#include <bit>
#include <cstdint>

namespace gt::test {

inline float float_from_bits(uint32_t b) { return std::bit_cast<float>(b); }

// A monotone integer image of a float: the ulp distance of two floats is the difference.
inline int64_t float_ordered(float f) {
  const auto i = std::bit_cast<int32_t>(f);
  return i < 0 ? -static_cast<int64_t>(i & 0x7fffffff) : i;
}

}  // namespace gt::test
