// Wider vectors where the CPU has them, for the transcendental elementwise loops (exp, sigmoid,
// tanh, ...: compute-bound once exp is straight-line code, fast_exp.h). The baseline x86-64
// target has 4-float SSE vectors and no FMA; a loop compiled for AVX2 + FMA does 8 floats per
// instruction with fused multiply-adds, 3-6x faster. Each such loop is written once as an
// always-inline body and instantiated twice (default and AVX2 + FMA); which one runs is decided
// once per process from the CPU (wide_simd()). The eager kernels and the fused chains
// (fused_chain.cpp) pick the same way, so their results stay bitwise equal to each other; they
// may differ in the last bit between machines with and without AVX2, as PyTorch's do.
#pragma once

namespace gt::worker::cpu {

#if defined(__x86_64__) && defined(__GNUC__)
#define GT_WIDE_SIMD 1
#define GT_WIDE_SIMD_TARGET [[gnu::target("avx2,fma")]]
#else
#define GT_WIDE_SIMD 0
#define GT_WIDE_SIMD_TARGET
#endif

// The CPU runs AVX2 and FMA (and GT_WIDE_SIMD is on); GT_CPU_BASELINE=1 in the environment
// forces the baseline loops (tests compare both).
bool wide_simd();

}  // namespace gt::worker::cpu
