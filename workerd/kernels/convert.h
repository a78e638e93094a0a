// Element conversion on the host: the cast rules (convert_value) and a float16 conversion that
// matches half.h bit for bit but vectorizes. The CPU kernels convert with it; the CUDA backend's
// host side uses it for fill values (its device side has cvt() in cuda/cuda_common.cuh, with the
// same rules).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "gt/core/dtype.h"
#include "gt/core/half.h"
#include "workerd/kernels/numeric.h"

namespace gt::worker {

// float16 <-> float32 with the same results as half.h (round to nearest even, NaN -> quiet
// NaN, overflow -> inf) but with few branches, so conversion loops stay fast. They assume the
// default floating-point environment (round to nearest, no denormals-are-zero).
inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;
  float f = bits_float(em << 13) * 0x1p112f;                     // normal and subnormal: exact
  if (static_cast<int32_t>(em) >= 0x7c00) f = bits_float((em << 13) | 0x7f800000u);  // inf, NaN
  return bits_float(float_bits(f) | sign);
}
inline uint16_t float_to_half_bits(float value) {
  const uint32_t u = float_bits(value);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t x = u & 0x7fffffffu;
  // All three candidates are computed and one selected (no branches, so loops vectorize):
  // beyond the half range: inf, or a quiet NaN;
  const uint32_t big = static_cast<int32_t>(x) > 0x7f800000 ? 0x7e00u : 0x7c00u;
  // half subnormal or zero: adding 0.5 aligns the half's last bit with float's, and the float
  // adder rounds to nearest even;
  constexpr uint32_t kMagic = 126u << 23;
  const uint32_t tiny = float_bits(bits_float(x) + bits_float(kMagic)) - kMagic;
  // normal: rebias ((15 - 127) << 23, mod 2^32) and round to nearest even (a carry into the
  // exponent, up to inf, is correct).
  const uint32_t normal = (x + 0xc8000fffu + ((x >> 13) & 1u)) >> 13;
  const auto sx = static_cast<int32_t>(x);  // x < 2^31: signed compares are cheaper in SSE2
  const uint32_t o = sx >= 0x47800000 ? big : sx < 0x38800000 ? tiny : normal;
  return static_cast<uint16_t>(o | sign);
}

// Value conversion between any two element/compute types (cast semantics: anything -> bool is
// != 0, so NaN -> true; floating -> integer as cast_float_to_int (PyTorch on x86-64: NaN,
// inf and out-of-range values give the minimum); 16-bit floats go through float32).
template <class To, class From>
inline To convert_value(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (is_half_v<From>) return convert_value<float>(v) != 0.0f;
    else return v != From(0);
  } else if constexpr (std::is_same_v<To, half>) {
    half h;
    h.bits = float_to_half_bits(convert_value<float>(v));
    return h;
  } else if constexpr (std::is_same_v<From, half>) {
    return convert_value<To>(half_bits_to_float(v.bits));
  } else if constexpr (std::is_same_v<To, bfloat16>) {
    return bfloat16(convert_value<float>(v));
  } else if constexpr (std::is_same_v<From, bfloat16>) {
    return convert_value<To>(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return cast_float_to_int<To>(static_cast<double>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace gt::worker
