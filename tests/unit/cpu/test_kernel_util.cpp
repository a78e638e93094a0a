// The CPU kernels' shared internals: fast float16 conversion (must match half.h bit for bit),
// value conversion rules, the coalescing N-d iterator and parallel_for.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "gt/core/half.h"
#include "workerd/cpu/kernels.h"

namespace gt::worker::cpu {
namespace {

TEST_CASE("cpu fast float16 conversion matches half.h bit for bit", "[cpu][convert]") {
  // Count mismatches instead of asserting each (millions of checks).
  int64_t bad = 0;
  uint32_t first_bad = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto b = static_cast<uint16_t>(h);
    if (float_bits(half_bits_to_float(b)) != float_bits(half::to_float(b)) && bad++ == 0)
      first_bad = h;
  }
  INFO("first bad half: " << first_bad);
  CHECK(bad == 0);
  // Every 1021st float bit pattern (all exponents, signs, NaNs), plus the rounding corners.
  auto check = [&](uint32_t u) {
    const float f = bits_float(u);
    if (float_to_half_bits(f) != half::from_float(f) && bad++ == 0) first_bad = u;
  };
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 1021) check(static_cast<uint32_t>(u));
  for (uint32_t u : {0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477ff001u, 0x47800000u,
                     0x38800000u, 0x387fffffu, 0x33000000u, 0x33000001u, 0x32ffffffu,
                     0x7f800000u, 0x7f800001u, 0x7fc00000u, 0xff800000u, 0x80000000u,
                     0x00000001u, 0x3f800000u, 0x3f801000u, 0x3f803000u})
    check(u);
  INFO("first bad float bits: " << first_bad);
  CHECK(bad == 0);
}

TEST_CASE("cpu convert_n of float16 and bfloat16 (the vector loops) matches half.h bit for bit",
          "[cpu][convert]") {
  // convert_n runs the 8-float loops where the CPU has AVX2 (wide_simd), the baseline ones
  // elsewhere: either way every result must be half.h's, here checked over whole arrays.
  std::vector<uint16_t> h(65536);
  for (uint32_t i = 0; i < 65536; ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> f(65536);
  int64_t bad = 0;
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    convert_n(h.data(), dt, f.data(), DType::kFloat32, 65536);
    for (uint32_t i = 0; i < 65536; ++i) {
      const float want = dt == DType::kFloat16 ? half::to_float(h[i])
                                               : bits_float(static_cast<uint32_t>(h[i]) << 16);
      if (float_bits(f[i]) != float_bits(want) && bad++ == 0) UNSCOPED_INFO("first bad: " << i);
    }
  }
  CHECK(bad == 0);
  // Every 1021st float bit pattern, and the rounding corners, to both.
  std::vector<float> src;
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 1021)
    src.push_back(bits_float(static_cast<uint32_t>(u)));
  for (uint32_t u : {0x477fe000u, 0x477ff000u, 0x477ff001u, 0x47800000u, 0x38800000u,
                     0x387fffffu, 0x33000000u, 0x33000001u, 0x7f800001u, 0x7fc00000u,
                     0xffc00001u, 0x3f808000u, 0x3f818000u, 0x7f7fffffu})
    src.push_back(bits_float(u));
  std::vector<uint16_t> out(src.size());
  const auto count = static_cast<int64_t>(src.size());
  convert_n(src.data(), DType::kFloat32, out.data(), DType::kFloat16, count);
  for (size_t i = 0; i < src.size(); ++i)
    if (out[i] != half::from_float(src[i]) && bad++ == 0) UNSCOPED_INFO("first bad: " << i);
  convert_n(src.data(), DType::kFloat32, out.data(), DType::kBFloat16, count);
  for (size_t i = 0; i < src.size(); ++i)
    if (out[i] != bfloat16(src[i]).bits && bad++ == 0) UNSCOPED_INFO("first bad: " << i);
  CHECK(bad == 0);
}

TEST_CASE("cpu convert_value rules", "[cpu][convert]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(convert_value<int32_t>(2.9) == 2);
  CHECK(convert_value<int32_t>(-2.9) == -2);
  // NaN, inf and out-of-range values give the minimum, as torch's casts on x86-64 CPUs (this
  // used to expect NaN -> 0 and saturation, which torch never gives).
  CHECK(convert_value<int32_t>(nan) == std::numeric_limits<int32_t>::min());
  CHECK(convert_value<int32_t>(1e20) == std::numeric_limits<int32_t>::min());
  CHECK(convert_value<int32_t>(3e9f) == std::numeric_limits<int32_t>::min());
  CHECK(convert_value<int32_t>(-2147483648.0) == std::numeric_limits<int32_t>::min());
  CHECK(convert_value<int32_t>(2147483647.9) == std::numeric_limits<int32_t>::max());
  CHECK(convert_value<int32_t>(-2147483648.9) == std::numeric_limits<int32_t>::min());
  CHECK(convert_value<int64_t>(-1e30f) == std::numeric_limits<int64_t>::min());
  CHECK(convert_value<int64_t>(1e30f) == std::numeric_limits<int64_t>::min());
  CHECK(convert_value<int64_t>(3e9f) == 3000000000);
  CHECK(convert_value<int64_t>(9223372036854774784.0) == 9223372036854774784);  // largest < 2^63
  CHECK(convert_value<int64_t>(9223372036854775808.0) == std::numeric_limits<int64_t>::min());
  CHECK(convert_value<int64_t>(-std::numeric_limits<double>::infinity()) ==
        std::numeric_limits<int64_t>::min());
  CHECK(convert_value<int64_t>(half(65504.0f)) == 65504);
  CHECK(convert_value<int64_t>(half(-3.5f)) == -3);
  CHECK(convert_value<bool>(nan) == true);
  CHECK(convert_value<bool>(half(0.0f)) == false);
  CHECK(convert_value<bool>(bfloat16(-0.0f)) == false);
  CHECK(convert_value<bool>(int64_t{-4}) == true);
  CHECK(static_cast<float>(convert_value<bfloat16>(half(1.5f))) == 1.5f);
  CHECK(static_cast<float>(convert_value<half>(int64_t{2049})) == 2048.0f);  // to even
  CHECK(convert_value<float>(true) == 1.0f);
  CHECK(convert_value<int32_t>(int64_t{1} << 33) == 0);  // integer narrowing wraps
}

TEST_CASE("cpu NdIter coalesces contiguous and broadcast dims", "[cpu][iter]") {
  // Same shapes: a single row.
  Shape s234{2, 3, 4};
  auto it = broadcast_iter<3>(s234, {&s234, &s234});
  CHECK(it.rank == 1);
  CHECK(it.shape[0] == 24);
  // Bias over rows: [6, 4] + [4] -> 6 rows of 4 with strides (4, 4, 0) / inner (1, 1, 1).
  Shape s64{6, 4}, s4{4}, s61{6, 1};
  auto b = broadcast_iter<3>(s64, {&s64, &s4});
  REQUIRE(b.rank == 2);
  CHECK(b.stride[2][0] == 0);
  CHECK(b.stride[2][1] == 1);
  auto c = broadcast_iter<2>(s64, {&s61});
  REQUIRE(c.rank == 2);
  CHECK(c.stride[1][1] == 0);
  // Every element visited once, at the right offsets.
  Shape out{3, 1, 4, 5}, in{4, 1};
  auto d = broadcast_iter<2>(out, {&in});
  std::map<int64_t, int64_t> seen;
  int64_t visited = 0;
  d.for_each_row([&](const std::array<int64_t, 2>& off, int64_t n,
                     const std::array<int64_t, 2>& st) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t o = off[0] + i * st[0];
      seen[o] = off[1] + i * st[1];
      ++visited;
    }
  });
  CHECK(visited == 60);
  REQUIRE(seen.size() == 60);
  for (auto [o, src] : seen) CHECK(src == (o / 5) % 4);
  // Zero-size and 0-d.
  Shape empty{3, 0}, scalar{};
  int rows = 0;
  broadcast_iter<2>(empty, {&empty}).for_each_row([&](auto&&...) { ++rows; });
  CHECK(rows == 0);
  broadcast_iter<2>(scalar, {&scalar}).for_each_row([&](auto&&...) { ++rows; });
  CHECK(rows == 1);
}

TEST_CASE("cpu parallel_for covers every index exactly once", "[cpu][threads]") {
  CHECK(max_threads() >= 1);
  for (int64_t n : {0, 1, 7, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    parallel_for(n, 100, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
    });
    for (auto& h : hits) REQUIRE(h.load() == 1);
  }
}

}  // namespace
}  // namespace gt::worker::cpu
