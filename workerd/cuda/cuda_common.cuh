// Device-side helpers shared by the kernel files: the CUDA 16-bit types in the element-type
// facts of workerd/kernels/numeric.h (shared with the CPU kernels), the cast rules of
// workerd/kernels/convert.h on the device, N-d offsets and grid sizing. Included by .cu files
// only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "workerd/cuda/launch.h"
#include "workerd/kernels/numeric.h"

namespace gt::worker {
// The device's 16-bit float types compute in float, like gt::half and gt::bfloat16.
template <> struct is_half_type<__half> : std::true_type {};
template <> struct is_half_type<__nv_bfloat16> : std::true_type {};
template <> struct compute_type<__half> { using type = float; };
template <> struct compute_type<__nv_bfloat16> { using type = float; };
}  // namespace gt::worker

namespace gt::worker::cuda {

using f16 = __half;
using bf16 = __nv_bfloat16;

// gt::DType values (gt/core/dtype.h; a static_assert in cuda_ops.h keeps them in step).
enum : int { kF32 = 0, kF16 = 1, kBF16 = 2, kI32 = 3, kI64 = 4, kBool = 5, kF64 = 6, kI8 = 7, kU8 = 8 };

// convert_value of convert.h on the device: anything -> bool is != 0, floating -> integer as
// cast_float_to_int, 16-bit floats through float32 with round-to-nearest-even.
template <class To, class From>
__device__ __forceinline__ To cvt(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, f16>) {
    return cvt<To>(__half2float(v));
  } else if constexpr (std::is_same_v<From, bf16>) {
    return cvt<To>(__bfloat162float(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<To, f16>) {
    return __float2half_rn(cvt<float>(v));
  } else if constexpr (std::is_same_v<To, bf16>) {
    return __float2bfloat16_rn(cvt<float>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return cast_float_to_int<To>(static_cast<double>(v));
  } else {
    return static_cast<To>(v);
  }
}

// Input offsets of output index i (NdDesc in launch.h). Tensors may exceed 2^32 elements, but
// 64-bit division is a long emulated sequence on the GPU and dominates broadcasting kernels, so
// index spaces below 2^32 (every extent is then below 2^32 too) decompose in 32 bits; the
// branch is uniform across the grid.
template <int N>
__device__ __forceinline__ void nd_offsets(const NdDesc& d, int64_t i, int64_t (&off)[N]) {
#pragma unroll
  for (int p = 0; p < N; ++p) off[p] = d.base[p];
  if (d.small_index) {
    auto j = static_cast<uint32_t>(i);
    for (int k = d.rank - 1; k >= 0; --k) {
      const auto ext = static_cast<uint32_t>(d.shape[k]);
      const uint32_t q = j / ext;
      const uint32_t r = j - q * ext;
      j = q;
#pragma unroll
      for (int p = 0; p < N; ++p) off[p] += static_cast<int64_t>(r) * d.stride[p][k];
    }
    return;
  }
  for (int k = d.rank - 1; k >= 0; --k) {
    const int64_t ext = d.shape[k];
    const int64_t q = i / ext;
    const int64_t r = i - q * ext;
    i = q;
#pragma unroll
    for (int p = 0; p < N; ++p) off[p] += r * d.stride[p][k];
  }
}

// The descriptor for an index space of n elements (sets the 32-bit fast path when it applies).
inline NdDesc for_count(NdDesc d, int64_t n) {
  d.small_index = n <= static_cast<int64_t>(UINT32_MAX) ? 1 : 0;
  return d;
}

// (e / inner) and (e % inner) of a flat index, in 32 bits when `small`.
__device__ __forceinline__ void divmod(int64_t e, int64_t inner, bool small, int64_t& q,
                                       int64_t& r) {
  if (small) {
    const auto a = static_cast<uint32_t>(e), b = static_cast<uint32_t>(inner);
    q = a / b;
    r = a - static_cast<uint32_t>(q) * b;
  } else {
    q = e / inner;
    r = e - q * inner;
  }
}

inline constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n items (capped: the loops stride, and a bounded grid keeps
// launch overhead flat for huge tensors).
inline unsigned grid_for(int64_t n, int per_thread = 1) {
  const int64_t per_block = static_cast<int64_t>(kThreads) * per_thread;
  int64_t b = (n + per_block - 1) / per_block;
  if (b < 1) b = 1;
  if (b > 65536) b = 65536;
  return static_cast<unsigned>(b);
}

__device__ __forceinline__ int64_t global_tid() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_stride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// Unsigned integer of an element size (kernels that only move bytes).
template <int Size> struct uint_of;
template <> struct uint_of<1> { using type = uint8_t; };
template <> struct uint_of<2> { using type = uint16_t; };
template <> struct uint_of<4> { using type = uint32_t; };
template <> struct uint_of<8> { using type = unsigned long long; };

// Calls f(T{}) -- a value-initialized tag of the storage type of `dtype`.
template <class F>
inline cudaError_t dispatch_dtype(int dtype, F&& f) {
  switch (dtype) {
    case kF32: return f(float{});
    case kF16: return f(f16{});
    case kBF16: return f(bf16{});
    case kI32: return f(int32_t{});
    case kI64: return f(int64_t{});
    case kBool: return f(bool{});
    case kF64: return f(double{});
    case kI8: return f(int8_t{});
    case kU8: return f(uint8_t{});
    default: return cudaErrorInvalidValue;
  }
}

template <class F>
inline cudaError_t dispatch_size(int elem_size, F&& f) {
  switch (elem_size) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(static_cast<unsigned long long>(0));
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace gt::worker::cuda
