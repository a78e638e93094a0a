// Kernels that only move elements, on the unsigned integer of the element size (four
// instantiations cover every dtype): the strided gather behind permute/slice/expand/copy_/
// as_strided, its reverse scatter (strided_copy_), where and masked_fill. The output is
// contiguous; inputs go through an NdDesc (the scatter: its contiguous input, strided output).
// The gather, where and masked_fill run on the shared vectorized loop (elementwise_loop.cuh).
#include "workerd/cuda/elementwise_loop.cuh"

namespace gt::worker::cuda {
namespace {

// The reverse of the gather, the scatter (out[nd(i)] = in[i]). Positions written twice (the
// client never sends such a view) race: one value stays.
template <class U>
__global__ void scatter_nd_kernel(const U* in, U* out, int64_t n, NdDesc d) {
  for (int64_t i = global_tid(); i < n; i += grid_stride()) {
    int64_t off[1];
    nd_offsets<1>(d, i, off);
    out[off[0]] = in[i];
  }
}

template <class U>
struct CopyF {
  __device__ U operator()(U x) const { return x; }
};

template <class U>
struct WhereF {
  __device__ U operator()(uint8_t c, U a, U b) const { return c ? a : b; }
};

template <class U>
struct MaskedFillF {
  U fill;
  __device__ U operator()(U x, uint8_t m) const { return m ? fill : x; }
};

constexpr int kTile = 32, kTileRows = 8;

template <class U>
__global__ void gather_tiled_kernel(const U* in, U* out, TiledDesc t, int64_t batches) {
  __shared__ U tile[kTile][kTile + 1];  // +1: no shared-memory bank conflicts on the transpose
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kTile;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kTile;
  for (int64_t b = blockIdx.z; b < batches; b += gridDim.z) {
    int64_t in_base = t.in_base, out_base = 0, rest = b;
    for (int d = t.batch_rank - 1; d >= 0; --d) {
      const int64_t q = rest / t.batch_shape[d], r = rest - q * t.batch_shape[d];
      rest = q;
      in_base += r * t.batch_in_stride[d];
      out_base += r * t.batch_out_stride[d];
    }
    // Read: consecutive threads walk dim j, where the input is contiguous.
    for (int k = threadIdx.y; k < kTile; k += kTileRows) {
      const int64_t r = row0 + threadIdx.x, c = col0 + k;
      if (r < t.rows && c < t.cols) tile[k][threadIdx.x] = in[in_base + r + c * t.in_col_stride];
    }
    __syncthreads();
    // Write: consecutive threads walk the last dim, where the output is contiguous.
    for (int k = threadIdx.y; k < kTile; k += kTileRows) {
      const int64_t r = row0 + k, c = col0 + threadIdx.x;
      if (r < t.rows && c < t.cols) out[out_base + r * t.out_row_stride + c] = tile[threadIdx.x][k];
    }
    __syncthreads();
  }
}

}  // namespace

cudaError_t launch_gather_tiled(const void* in, void* out, int elem_size, const TiledDesc& t,
                                cudaStream_t s) {
  int64_t batches = 1;
  for (int d = 0; d < t.batch_rank; ++d) batches *= t.batch_shape[d];
  if (batches <= 0 || t.rows <= 0 || t.cols <= 0) return cudaSuccess;
  const int64_t gx = (t.cols + kTile - 1) / kTile, gy = (t.rows + kTile - 1) / kTile;
  if (gx > 2147483647 || gy > 65535) return cudaErrorInvalidValue;  // caller checks first
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy),
                  static_cast<unsigned>(batches < 65535 ? batches : 65535));
  const dim3 block(kTile, kTileRows);
  return dispatch_size(elem_size, [&](auto tag) {
    using U = decltype(tag);
    gather_tiled_kernel<U><<<grid, block, 0, s>>>(static_cast<const U*>(in), static_cast<U*>(out),
                                                  t, batches);
    return cudaGetLastError();
  });
}

cudaError_t launch_gather_nd(const void* in, void* out, int64_t n, int elem_size,
                             const NdDesc& nd, cudaStream_t s) {
  return dispatch_size(elem_size, [&](auto tag) {
    using U = decltype(tag);
    return map_nd(s, n, nd, CopyF<U>{}, static_cast<U*>(out), static_cast<const U*>(in));
  });
}

cudaError_t launch_scatter_nd(const void* in, void* out, int64_t n, int elem_size,
                              const NdDesc& nd, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  return dispatch_size(elem_size, [&](auto tag) {
    using U = decltype(tag);
    scatter_nd_kernel<U><<<grid_for(n), kThreads, 0, s>>>(
        static_cast<const U*>(in), static_cast<U*>(out), n, for_count(nd, n));
    return cudaGetLastError();
  });
}

cudaError_t launch_where(const uint8_t* cond, const void* a, const void* b, void* out, int64_t n,
                         int elem_size, const NdDesc& nd, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  return dispatch_size(elem_size, [&](auto tag) {
    using U = decltype(tag);
    return map_nd(s, n, nd, WhereF<U>{}, static_cast<U*>(out), cond, static_cast<const U*>(a),
                  static_cast<const U*>(b));
  });
}

cudaError_t launch_masked_fill(const void* x, const uint8_t* mask, void* out, int64_t n,
                               int elem_size, uint64_t fill_bits, const NdDesc& nd,
                               cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  return dispatch_size(elem_size, [&](auto tag) {
    using U = decltype(tag);
    return map_nd(s, n, nd, MaskedFillF<U>{static_cast<U>(fill_bits)}, static_cast<U*>(out),
                  static_cast<const U*>(x), mask);
  });
}

}  // namespace gt::worker::cuda
