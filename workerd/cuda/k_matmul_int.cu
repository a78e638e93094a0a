// Integer matmul (int32/int64) with wrapping arithmetic, like the CPU worker's triple loop.
// cuBLAS has no integer GEMM of these types; this is a plain tiled kernel, correct rather than
// fast (integer matmul is rare in the workloads GT serves).
#include "workerd/cuda/cuda_common.cuh"

namespace gt::worker::cuda {
namespace {

constexpr int kTile = 16;

template <class T>
__global__ void matmul_int_kernel(const T* a, const T* b, T* c, int64_t m, int64_t k, int64_t n) {
  using U = std::make_unsigned_t<T>;
  __shared__ U as[kTile][kTile];
  __shared__ U bs[kTile][kTile];
  const int64_t row = static_cast<int64_t>(blockIdx.y) * kTile + threadIdx.y;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kTile + threadIdx.x;
  U acc = 0;
  for (int64_t k0 = 0; k0 < k; k0 += kTile) {
    const int64_t ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    as[threadIdx.y][threadIdx.x] = (row < m && ka < k) ? static_cast<U>(a[row * k + ka]) : U(0);
    bs[threadIdx.y][threadIdx.x] = (kb < k && col < n) ? static_cast<U>(b[kb * n + col]) : U(0);
    __syncthreads();
#pragma unroll
    for (int t = 0; t < kTile; ++t)
      acc = static_cast<U>(acc + as[threadIdx.y][t] * bs[t][threadIdx.x]);
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = static_cast<T>(acc);
}

}  // namespace

cudaError_t launch_matmul_int(int dtype, const void* a, const void* b, void* c, int64_t m,
                              int64_t k, int64_t n, cudaStream_t s) {
  if (m <= 0 || n <= 0) return cudaSuccess;
  if ((m + kTile - 1) / kTile > 65535) return cudaErrorInvalidValue;  // grid.y limit
  const dim3 block(kTile, kTile);
  const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile),
                  static_cast<unsigned>((m + kTile - 1) / kTile));
  if (dtype == kI32) {
    matmul_int_kernel<int32_t><<<grid, block, 0, s>>>(static_cast<const int32_t*>(a),
                                                      static_cast<const int32_t*>(b),
                                                      static_cast<int32_t*>(c), m, k, n);
  } else if (dtype == kI64) {
    matmul_int_kernel<int64_t><<<grid, block, 0, s>>>(static_cast<const int64_t*>(a),
                                                      static_cast<const int64_t*>(b),
                                                      static_cast<int64_t*>(c), m, k, n);
  } else {
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace gt::worker::cuda
