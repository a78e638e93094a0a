// float16 / bfloat16 conversions: exact values, round-to-nearest-even ties, and brute-force
// references computed here in double precision (independent of half.h's bit tricks).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "gt/core/half.h"

using gt::bfloat16;
using gt::bits_float;
using gt::float_bits;
using gt::half;

namespace {

uint16_t h_bits(float f) { return half(f).bits; }
uint16_t bf_bits(float f) { return bfloat16(f).bits; }
float h_val(uint16_t b) { return half::to_float(b); }

// Reference decode of an IEEE binary16 pattern, from the definition.
double ref_half_value(uint16_t h) {
  int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(static_cast<double>(mant), -24);
  else if (exp == 31) v = mant ? std::numeric_limits<double>::quiet_NaN()
                               : std::numeric_limits<double>::infinity();
  else v = std::ldexp(1.0 + mant / 1024.0, exp - 15);
  return sign ? -v : v;
}

bool is_half_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool is_bf16_nan(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

// Nearest binary16 to a finite float by search over the magnitudes (monotonic in the bits);
// ties go to the even pattern; beyond the largest finite value the next "value" is 2^16 = inf.
uint16_t ref_nearest_half(float f) {
  double a = std::fabs(static_cast<double>(f));
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  auto mag = [](uint32_t b) { return b == 0x7c00 ? 65536.0 : ref_half_value(static_cast<uint16_t>(b)); };
  // largest lo in [0, 0x7c00] with mag(lo) <= a
  uint32_t lo = 0, hi = 0x7c00;
  if (a >= 65536.0) return sign | 0x7c00;
  while (lo < hi) {
    uint32_t mid = (lo + hi + 1) / 2;
    if (mag(mid) <= a) lo = mid;
    else hi = mid - 1;
  }
  if (mag(lo) == a) return static_cast<uint16_t>(sign | lo);
  uint32_t up = lo + 1;
  double dl = a - mag(lo), du = mag(up) - a;
  uint32_t pick = dl < du ? lo : du < dl ? up : ((lo & 1) ? up : lo);
  return static_cast<uint16_t>(sign | pick);
}

// Nearest bfloat16 to a finite float: the two candidates are the truncation and the next one.
uint16_t ref_nearest_bf16(float f) {
  uint32_t u = float_bits(f);
  uint32_t sign = u & 0x80000000u, mag = u & 0x7fffffffu;
  uint32_t lo = mag >> 16, up = lo + 1;
  double a = std::fabs(static_cast<double>(f));
  double vl = bits_float(lo << 16);
  double vu = up == 0x7f80 ? std::ldexp(1.0, 128) : static_cast<double>(bits_float(up << 16));
  double dl = a - vl, du = vu - a;
  uint32_t pick = dl < du ? lo : du < dl ? up : ((lo & 1) ? up : lo);
  return static_cast<uint16_t>((sign >> 16) | pick);
}

}  // namespace

TEST_CASE("float16 exact values", "[half]") {
  CHECK(h_bits(0.0f) == 0x0000);
  CHECK(h_bits(-0.0f) == 0x8000);
  CHECK(h_bits(1.0f) == 0x3c00);
  CHECK(h_bits(-2.5f) == 0xc100);
  CHECK(h_bits(0.5f) == 0x3800);
  CHECK(h_bits(65504.0f) == 0x7bff);   // largest finite
  CHECK(h_bits(-65504.0f) == 0xfbff);
  CHECK(h_bits(std::ldexp(1.0f, -14)) == 0x0400);  // 6.1035e-5, smallest normal
  CHECK(h_bits(6.103515625e-05f) == 0x0400);
  CHECK(h_bits(1023 * std::ldexp(1.0f, -24)) == 0x03ff);  // 6.0976e-5, largest subnormal
  CHECK(h_bits(5.9604644775390625e-08f) == 0x0001);       // 2^-24, smallest subnormal
  CHECK(h_bits(-5.9604644775390625e-08f) == 0x8001);
  CHECK(h_bits(std::ldexp(1.0f, -26)) == 0x0000);         // below half the smallest: zero
  CHECK(h_bits(std::ldexp(1.0f, -40)) == 0x0000);
  CHECK(h_bits(-std::ldexp(1.0f, -40)) == 0x8000);        // keeps the sign
  CHECK(h_bits(1e-45f) == 0x0000);                        // float subnormal

  CHECK(h_val(0x3c00) == 1.0f);
  CHECK(h_val(0xc100) == -2.5f);
  CHECK(h_val(0x7bff) == 65504.0f);
  CHECK(h_val(0x0400) == std::ldexp(1.0f, -14));
  CHECK(h_val(0x0001) == std::ldexp(1.0f, -24));
  CHECK(h_val(0x03ff) == 1023 * std::ldexp(1.0f, -24));
  CHECK(h_val(0x8000) == 0.0f);
  CHECK(std::signbit(h_val(0x8000)));
}

TEST_CASE("float16 overflow, infinity and NaN", "[half]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(h_bits(65519.0f) == 0x7bff);   // below the midpoint to 2^16: rounds down
  CHECK(h_bits(65520.0f) == 0x7c00);   // the midpoint: ties to even = inf
  CHECK(h_bits(65536.0f) == 0x7c00);
  CHECK(h_bits(1e6f) == 0x7c00);
  CHECK(h_bits(-1e6f) == 0xfc00);
  CHECK(h_bits(std::numeric_limits<float>::max()) == 0x7c00);
  CHECK(h_bits(inf) == 0x7c00);
  CHECK(h_bits(-inf) == 0xfc00);
  CHECK(h_val(0x7c00) == inf);
  CHECK(h_val(0xfc00) == -inf);
  for (float nan : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                    bits_float(0x7f800001u), bits_float(0x7fffffffu), bits_float(0xff800001u)}) {
    uint16_t b = h_bits(nan);
    INFO("float bits " << std::hex << float_bits(nan) << " -> " << b);
    CHECK(is_half_nan(b));
    CHECK(std::isnan(static_cast<float>(half(nan))));
  }
  CHECK(std::isnan(h_val(0x7e00)));
  CHECK(std::isnan(h_val(0x7c01)));
  CHECK(std::isnan(h_val(0xffff)));
}

TEST_CASE("float16 round to nearest even on ties", "[half]") {
  // Between 1 and 1+2^-10 (0x3c00, 0x3c01): the midpoint goes to the even 0x3c00.
  CHECK(h_bits(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  // Between 0x3c01 and 0x3c02: the midpoint goes to 0x3c02.
  CHECK(h_bits(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  // Just above / below a midpoint goes to the nearer one.
  CHECK(h_bits(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)) == 0x3c01);
  CHECK(h_bits(std::nextafter(1.0f + 3 * std::ldexp(1.0f, -11), 0.0f)) == 0x3c01);
  // Integers above 2048 are spaced by 2.
  CHECK(h_val(h_bits(2049.0f)) == 2048.0f);
  CHECK(h_val(h_bits(2051.0f)) == 2052.0f);
  CHECK(h_val(h_bits(-2051.0f)) == -2052.0f);
  // Subnormal ties: 2^-25 is half the smallest subnormal (tie with 0, even) and 3*2^-25 lies
  // between 0x0001 and 0x0002 (goes to the even 0x0002).
  CHECK(h_bits(std::ldexp(1.0f, -25)) == 0x0000);
  CHECK(h_bits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)) == 0x0001);
  CHECK(h_bits(3 * std::ldexp(1.0f, -25)) == 0x0002);
  CHECK(h_bits(5 * std::ldexp(1.0f, -25)) == 0x0002);
  // Rounding up out of the subnormals into the smallest normal.
  CHECK(h_bits(std::nextafter(std::ldexp(1.0f, -14), 0.0f)) == 0x0400);
  // Rounding carries into the exponent: 2 - 2^-12 rounds up to 2.0.
  CHECK(h_bits(2.0f - std::ldexp(1.0f, -12)) == 0x4000);
}

TEST_CASE("float16: every bit pattern round-trips", "[half]") {
  int nans = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    uint16_t h = static_cast<uint16_t>(b);
    float f = h_val(h);
    double want = ref_half_value(h);
    if (is_half_nan(h)) {
      ++nans;
      if (!std::isnan(f) || !is_half_nan(h_bits(f))) FAIL("NaN pattern " << std::hex << b);
      continue;
    }
    if (static_cast<double>(f) != want) FAIL("to_float(0x" << std::hex << b << ") = " << f);
    if (h_bits(f) != h) FAIL("round trip of 0x" << std::hex << b << " gives " << h_bits(f));
  }
  CHECK(nans == 2 * 1023);
}

TEST_CASE("float16: random floats give the nearest half", "[half]") {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<uint32_t> any_bits;
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> exp(-30, 17);
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    float f;
    if (i % 2) {
      f = bits_float(any_bits(rng));  // the whole float range
    } else {
      f = std::ldexp(mant(rng), exp(rng)) * ((i & 2) ? -1.0f : 1.0f);  // the half range
    }
    if (std::isnan(f)) continue;
    uint16_t got = h_bits(f);
    uint16_t want = std::isinf(f) ? (std::signbit(f) ? 0xfc00 : 0x7c00) : ref_nearest_half(f);
    if (got != want)
      FAIL("half(" << f << " = 0x" << std::hex << float_bits(f) << ") = 0x" << got
                   << ", nearest is 0x" << want);
    ++checked;
  }
  CHECK(checked > 190000);
}

TEST_CASE("bfloat16 exact values, ties and overflow", "[half][bf16]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(bf_bits(0.0f) == 0x0000);
  CHECK(bf_bits(-0.0f) == 0x8000);
  CHECK(bf_bits(1.0f) == 0x3f80);
  CHECK(bf_bits(-2.5f) == 0xc020);
  CHECK(bf_bits(65504.0f) == 0x4780);  // 65504 = 0x477fe000 rounds up to 65536
  CHECK(static_cast<float>(bfloat16(3.0f)) == 3.0f);
  CHECK(static_cast<float>(bfloat16(-2.5f)) == -2.5f);
  // ties: 1 + 2^-8 lies between 1 (0x3f80) and 1 + 2^-7 (0x3f81): to even 0x3f80
  CHECK(bf_bits(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
  CHECK(bf_bits(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
  CHECK(bf_bits(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)) == 0x3f81);
  // largest finite bfloat16, and overflow of the float maximum to inf
  CHECK(bf_bits(bits_float(0x7f7f0000u)) == 0x7f7f);
  CHECK(bf_bits(std::numeric_limits<float>::max()) == 0x7f80);
  CHECK(bf_bits(-std::numeric_limits<float>::max()) == 0xff80);
  CHECK(bf_bits(inf) == 0x7f80);
  CHECK(bf_bits(-inf) == 0xff80);
  // float subnormals survive (same exponent range as float32)
  CHECK(bf_bits(bits_float(0x00010000u)) == 0x0001);
  CHECK(bf_bits(bits_float(0x00008000u)) == 0x0000);  // tie with 0: even
  CHECK(bf_bits(bits_float(0x00018000u)) == 0x0002);  // tie between 1 and 2: even
  for (uint32_t nb : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fffffffu, 0xff800001u}) {
    uint16_t b = bf_bits(bits_float(nb));
    INFO("float bits " << std::hex << nb << " -> " << b);
    CHECK(is_bf16_nan(b));
    CHECK(std::isnan(static_cast<float>(bfloat16(bits_float(nb)))));
  }
}

TEST_CASE("bfloat16: every bit pattern round-trips, random floats round to nearest",
          "[half][bf16]") {
  for (uint32_t b = 0; b < 65536; ++b) {
    bfloat16 x;
    x.bits = static_cast<uint16_t>(b);
    float f = x;
    if (float_bits(f) != (b << 16)) FAIL("bfloat16 0x" << std::hex << b << " -> float");
    if (is_bf16_nan(static_cast<uint16_t>(b))) {
      if (!is_bf16_nan(bf_bits(f))) FAIL("NaN 0x" << std::hex << b << " lost");
      continue;
    }
    if (bf_bits(f) != b) FAIL("round trip of 0x" << std::hex << b << " gives " << bf_bits(f));
  }
  std::mt19937 rng(99);
  std::uniform_int_distribution<uint32_t> any_bits;
  for (int i = 0; i < 200000; ++i) {
    float f = bits_float(any_bits(rng));
    if (std::isnan(f) || std::isinf(f)) continue;
    uint16_t got = bf_bits(f), want = ref_nearest_bf16(f);
    if (got != want)
      FAIL("bfloat16(0x" << std::hex << float_bits(f) << ") = 0x" << got << ", nearest is 0x"
                         << want);
  }
  SUCCEED();
}
