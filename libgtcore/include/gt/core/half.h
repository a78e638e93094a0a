// Storage types for float16 and bfloat16 on the CPU. They are stored as 16 bits and computed
// through float32 (ARCHITECTURE §6); conversions round to nearest even like CUDA's __float2half_rn.
#pragma once

#include <cstdint>
#include <cstring>

namespace gt {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  bfloat16(float f) {  // NOLINT: implicit like a numeric type
    uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep it quiet and a NaN
      bits = static_cast<uint16_t>((u >> 16) | 0x40);
      return;
    }
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
    bits = static_cast<uint16_t>(u >> 16);
  }
  operator float() const { return bits_float(static_cast<uint32_t>(bits) << 16); }  // NOLINT
};

struct half {
  uint16_t bits = 0;
  half() = default;
  half(float f) { bits = from_float(f); }                  // NOLINT
  operator float() const { return to_float(bits); }        // NOLINT

  static uint16_t from_float(float f) {
    uint32_t x = float_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
    if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u); // overflow -> inf
    if (ax < 0x38800000u) {  // subnormal or zero in half
      if (ax < 0x33000000u) return static_cast<uint16_t>(sign);  // rounds to zero
      uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
      int shift = 113 - static_cast<int>(ax >> 23) + 13;  // align to half subnormal
      uint32_t r = mant >> shift;
      uint32_t rem = mant & ((1u << shift) - 1);
      uint32_t halfway = 1u << (shift - 1);
      if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
      return static_cast<uint16_t>(sign | r);
    }
    uint32_t r = ((ax - 0x38000000u) >> 13);
    uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  static float to_float(uint16_t h) {
    uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
      if (mant == 0) return bits_float(sign);
      // subnormal: value = mant * 2^-24
      float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
      return sign ? -v : v;
    }
    if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
    return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
  }
};

}  // namespace gt
