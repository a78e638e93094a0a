// Philox4x32-10: the Random123 known-answer vectors, the element-index mapping, and the
// distributions of uniform()/normal().
#include <catch2/catch.hpp>

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include "libgtcore/philox.h"

using namespace gt::philox;

namespace {
bool same(U4 a, U4 b) { return a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w; }
std::string hex(U4 a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "{%08x, %08x, %08x, %08x}", a.x, a.y, a.z, a.w);
  return buf;
}
}  // namespace

TEST_CASE("philox4x32_10 known-answer vectors (Random123 kat_vectors)", "[philox]") {
  struct Kat {
    U4 ctr;
    uint32_t k0, k1;
    U4 want;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, 0, 0, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       0xffffffff,
       0xffffffff,
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       0xa4093822,
       0x299f31d0,
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const auto& k : kats) {
    U4 got = philox4x32_10(k.ctr, k.k0, k.k1);
    INFO("got " << hex(got) << " want " << hex(k.want));
    CHECK(same(got, k.want));
  }
}

TEST_CASE("raw() maps (seed, counter, index) onto the Philox counter and key", "[philox]") {
  const uint64_t seed = 0x299f31d0a4093822ull, counter = 0x0370734413198a2eull,
                 index = 0x85a308d3243f6a88ull;
  // The third known-answer vector, reached through raw(): index -> words 0,1; counter -> 2,3;
  // seed -> key.
  CHECK(same(raw(seed, counter, index), U4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
  CHECK(same(raw(0, 0, 0), U4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  // High halves matter.
  CHECK_FALSE(same(raw(1ull << 32, 0, 0), raw(0, 0, 0)));
  CHECK_FALSE(same(raw(0, 1ull << 32, 0), raw(0, 0, 0)));
  CHECK_FALSE(same(raw(0, 0, 1ull << 32), raw(0, 0, 0)));
}

TEST_CASE("philox is deterministic and distinct across seed/counter/index", "[philox]") {
  for (uint64_t i = 0; i < 1000; ++i) {
    CHECK(same(raw(42, 7, i), raw(42, 7, i)));
    CHECK(uniform(42, 7, i) == uniform(42, 7, i));
    CHECK(normal(42, 7, i) == normal(42, 7, i));
  }
  std::set<uint32_t> seen;
  for (uint64_t s = 0; s < 4; ++s)
    for (uint64_t c = 0; c < 4; ++c)
      for (uint64_t i = 0; i < 64; ++i) seen.insert(raw(s, c, i).x);
  CHECK(seen.size() == 4 * 4 * 64);  // 1024 draws of 32 bits: a collision is ~1e-4 likely
}

TEST_CASE("uniform() lies in 0 <= u < 1 with the right moments", "[philox]") {
  const int n = 100000;
  double sum = 0, sum2 = 0;
  float lo = 1, hi = 0;
  int buckets[10] = {};
  for (int i = 0; i < n; ++i) {
    float u = uniform(1234, 5, static_cast<uint64_t>(i));
    REQUIRE(u >= 0.0f);
    REQUIRE(u < 1.0f);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum += u;
    sum2 += static_cast<double>(u) * u;
    buckets[static_cast<int>(u * 10)]++;
  }
  double mean = sum / n, var = sum2 / n - mean * mean;
  CHECK(mean == Approx(0.5).margin(0.005));      // sd of the mean ~ 0.0009
  CHECK(var == Approx(1.0 / 12).margin(0.002));
  CHECK(lo < 0.001f);
  CHECK(hi > 0.999f);
  for (int b : buckets) CHECK(b == Approx(n / 10).margin(600));  // sd ~ 95
  // 24 random bits: the largest possible value is 1 - 2^-24, still below 1.
  CHECK(static_cast<float>(0xffffffffu >> 8) * (1.0f / 16777216.0f) < 1.0f);
}

TEST_CASE("normal() has mean 0 and standard deviation 1", "[philox]") {
  const int n = 100000;
  double sum = 0, sum2 = 0;
  int within1 = 0;
  for (int i = 0; i < n; ++i) {
    float z = normal(99, 3, static_cast<uint64_t>(i));
    REQUIRE(std::isfinite(z));
    sum += z;
    sum2 += static_cast<double>(z) * z;
    within1 += std::fabs(z) < 1.0f;
  }
  double mean = sum / n, sd = std::sqrt(sum2 / n - mean * mean);
  CHECK(mean == Approx(0.0).margin(0.02));  // sd of the mean ~ 0.0032
  CHECK(sd == Approx(1.0).margin(0.02));
  CHECK(within1 / static_cast<double>(n) == Approx(0.6827).margin(0.01));
}
