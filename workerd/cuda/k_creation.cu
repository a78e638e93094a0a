// Creation kernels: fill with a byte pattern, arange, and Philox rand/randn with exactly the CPU
// worker's counter scheme (libgtcore/philox.h is shared, so values agree up to the rounding of
// the device's double log/cos).
#include <type_traits>

#include "libgtcore/philox.h"
#include "workerd/cuda/cuda_common.cuh"

namespace gt::worker::cuda {
namespace {

template <class U>
__global__ void fill_kernel(U* out, int64_t n, U v) {
  for (int64_t i = global_tid(); i < n; i += grid_stride()) out[i] = v;
}

template <class T>
__global__ void arange_kernel(T* out, int64_t n, double start, double step) {
  for (int64_t i = global_tid(); i < n; i += grid_stride())
    out[i] = cvt<T>(start + static_cast<double>(i) * step);
}

// The largest value below 1 of a 16-bit float (rand stays in [0, 1) after rounding).
template <class T>
__device__ __forceinline__ T below_one() {
  if constexpr (std::is_same_v<T, f16>) return __float2half_rn(1.0f - 0x1p-11f);
  else return __float2bfloat16_rn(1.0f - 0x1p-8f);
}

template <class T, bool kNormal>
__global__ void random_kernel(T* out, int64_t n, uint64_t seed, uint64_t counter,
                              ShardIndexDesc sh) {
  for (int64_t i = global_tid(); i < n; i += grid_stride()) {
    int64_t g = i;
    if (sh.local > 0) {  // a shard: element i takes its position in the whole tensor
      const int64_t block = sh.local * sh.inner;
      const int64_t outer = i / block, a = (i / sh.inner) % sh.local, in = i % sh.inner;
      g = (outer * sh.global + a + sh.offset) * sh.inner + in;
    }
    const auto idx = static_cast<uint64_t>(g);
    if constexpr (std::is_same_v<T, double>) {  // 53-bit draws, as the CPU worker's
      out[i] = kNormal ? philox::normal64(seed, counter, idx) : philox::uniform64(seed, counter, idx);
      continue;
    }
    const float v =
        kNormal ? philox::normal(seed, counter, idx) : philox::uniform(seed, counter, idx);
    T o = cvt<T>(v);
    if constexpr (is_half_v<T>) {
      if (!kNormal && cvt<float>(o) >= 1.0f) o = below_one<T>();
    }
    out[i] = o;
  }
}

}  // namespace

cudaError_t launch_fill_bits(void* out, int64_t n, int elem_size, uint64_t bits, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  return dispatch_size(elem_size, [&](auto tag) {
    using U = decltype(tag);
    fill_kernel<U><<<grid_for(n), kThreads, 0, s>>>(static_cast<U*>(out), n, static_cast<U>(bits));
    return cudaGetLastError();
  });
}

cudaError_t launch_arange(void* out, int dtype, int64_t n, double start, double step,
                          cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  return dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    arange_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(out), n, start, step);
    return cudaGetLastError();
  });
}

cudaError_t launch_random(void* out, int dtype, int64_t n, bool normal, uint64_t seed,
                          uint64_t counter, ShardIndexDesc shard, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  auto go = [&](auto tag) {
    using T = decltype(tag);
    if (normal)
      random_kernel<T, true><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(out), n, seed,
                                                               counter, shard);
    else
      random_kernel<T, false><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(out), n, seed,
                                                                counter, shard);
    return cudaGetLastError();
  };
  switch (dtype) {
    case kF32: return go(float{});
    case kF16: return go(f16{});
    case kBF16: return go(bf16{});
    case kF64: return go(double{});
    default: return cudaErrorInvalidValue;  // the shape rule only allows floating dtypes
  }
}

}  // namespace gt::worker::cuda
