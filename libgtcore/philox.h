// Counter-based RNG (Philox4x32-10, Salmon et al. 2011), header-only so CPU and CUDA kernels
// share it. Element i of a random tensor is a pure function of (seed, op counter, i): the same
// program gives the same numbers on one worker or sharded over many, on CPU or GPU (ARCHITECTURE §2).
#pragma once

#include <cmath>
#include <cstdint>

// (the same definition as workerd/kernels/numeric.h's, which both may be included with)
#if defined(__CUDACC__)
#define GT_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define GT_HOST_DEVICE __attribute__((always_inline)) inline
#endif

namespace gt::philox {

struct U4 {
  uint32_t x, y, z, w;
};

GT_HOST_DEVICE uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  return static_cast<uint32_t>(p);
}

GT_HOST_DEVICE U4 philox4x32_10(U4 ctr, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, hi1;
    uint32_t lo0 = mulhilo(0xD2511F53u, ctr.x, &hi0);
    uint32_t lo1 = mulhilo(0xCD9E8D57u, ctr.z, &hi1);
    ctr = U4{hi1 ^ ctr.y ^ k0, lo1, hi0 ^ ctr.w ^ k1, lo0};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return ctr;
}

// Four raw 32-bit words for element `index` of the tensor made by random op `counter`.
GT_HOST_DEVICE U4 raw(uint64_t seed, uint64_t counter, uint64_t index) {
  U4 c{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
       static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32)};
  return philox4x32_10(c, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// float32, float16 and bfloat16 draws: 24 random bits.
// Uniform in [0, 1) with 24 random bits (exactly representable in float32).
GT_HOST_DEVICE float uniform(uint64_t seed, uint64_t counter, uint64_t index) {
  return static_cast<float>(raw(seed, counter, index).x >> 8) * (1.0f / 16777216.0f);
}

// Standard normal by Box-Muller on two words of the same draw; computed in double so CPU and GPU
// agree to float rounding.
GT_HOST_DEVICE float normal(uint64_t seed, uint64_t counter, uint64_t index) {
  U4 r = raw(seed, counter, index);
  double u1 = (static_cast<double>(r.x >> 8) + 1.0) * (1.0 / 16777216.0);  // (0, 1]
  double u2 = static_cast<double>(r.y >> 8) * (1.0 / 16777216.0);          // [0, 1)
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

// float64 draws use all four words: 53 random bits per uniform (as torch's double rand), so a
// float64 tensor is not a float32 draw widened.
GT_HOST_DEVICE double bits53(uint32_t hi, uint32_t lo) {
  return static_cast<double>((static_cast<uint64_t>(hi) << 21) ^ (lo >> 11)) *
         (1.0 / 9007199254740992.0);  // 2^-53
}

// Uniform in [0, 1) with 53 random bits.
GT_HOST_DEVICE double uniform64(uint64_t seed, uint64_t counter, uint64_t index) {
  U4 r = raw(seed, counter, index);
  return bits53(r.x, r.y);
}

// Standard normal in double: Box-Muller on two 53-bit uniforms of the same draw.
GT_HOST_DEVICE double normal64(uint64_t seed, uint64_t counter, uint64_t index) {
  U4 r = raw(seed, counter, index);
  const double u1 = 1.0 - bits53(r.x, r.y);  // (0, 1]
  const double u2 = bits53(r.z, r.w);         // [0, 1)
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace gt::philox
