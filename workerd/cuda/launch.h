// The boundary between the host-side op code (*.cpp, compiled by the C++ compiler, free to use
// every gt header) and the device kernels (*.cu, compiled by nvcc, kept free of fmt/protobuf so
// the CUDA compile stays lean). Everything crossing it is plain data: dtype codes are
// gt::DType's integer values, strides are in elements, streams are cudaStream_t.
//
// Every launcher only enqueues work on `s` and returns the launch status (cudaGetLastError()).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "gt/core/ops.h"

namespace gt::worker::cuda {

inline constexpr int kMaxDims = 8;  // == gt::kMaxRank (checked in cuda_ops.h)

// Up to three inputs iterated over a contiguous output's index space (coalesced on the host):
// input p's element for output index i sits at base[p] + sum_d idx_d(i) * stride[p][d].
struct NdDesc {
  int rank = 0;
  int64_t shape[kMaxDims] = {};
  int64_t stride[3][kMaxDims] = {};
  int64_t base[3] = {};
  int small_index = 0;  // set by the launchers: the index space fits 32 bits
};


// ---- creation (k_creation.cu) ----
// Writes the `elem_size`-byte pattern `bits` n times.
cudaError_t launch_fill_bits(void* out, int64_t n, int elem_size, uint64_t bits, cudaStream_t s);
// out[i] = convert<dtype>(start + i * step) (computed in double, cast rules of convert.h).
cudaError_t launch_arange(void* out, int dtype, int64_t n, double start, double step,
                          cudaStream_t s);
// Philox rand/randn with the CPU worker's counter scheme; shard_* describe a shard (axis
// extent `local` at `offset` of `global`, `inner` elements after the axis), shard_local = 0: none.
struct ShardIndexDesc {
  int64_t local = 0, offset = 0, global = 1, inner = 1;
};
cudaError_t launch_random(void* out, int dtype, int64_t n, bool normal, uint64_t seed,
                          uint64_t counter, ShardIndexDesc shard, cudaStream_t s);

// ---- elementwise (k_binary.cu, k_unary.cu): any op of its family in ops.def, the math of
// workerd/kernels/elementwise_math.h (cudaErrorInvalidValue for an op of another family) ----
// Binary op on operands already in dtype `p`; out is bool for comparisons, else `p`.
//   mode 0: a, b contiguous of n elements; mode 1: scalar right (a op scalar); mode 2: scalar
//   left (scalar op a); mode 3: a, b through `nd` (inputs 0 and 1).
struct BinaryArgs {
  OpId op;
  int p;       // operand dtype
  int mode;
  const void* a;
  const void* b;
  void* out;
  int64_t n;
  double scalar;  // for modes 1, 2: converted to the compute type on the device side
  bool has_exact = false;  // modes 1, 2 with int64 operands: the scalar as an exact integer
  int64_t exact = 0;       // (a double loses integers beyond 2^53)
  NdDesc nd;
};
cudaError_t launch_binary(const BinaryArgs& a, cudaStream_t s);
// Unary op: kUnarySame ops keep the dtype; kUnaryFloat ops give in_dtype when floating, else
// float32.
cudaError_t launch_unary(OpId op, int in_dtype, const void* in, void* out, int64_t n,
                         cudaStream_t s);
// Contiguous dtype conversion (cast rules of workerd/kernels/convert.h).
cudaError_t launch_convert(const void* in, int in_dtype, void* out, int out_dtype, int64_t n,
                           cudaStream_t s);
// clamp in `dtype` (x already converted to it); bounds already converted to it (scalar_in):
// as doubles, and as exact integers that int64 uses.
cudaError_t launch_clamp(const void* x, void* out, int dtype, int64_t n, bool has_lo, double lo,
                         int64_t lo_exact, bool has_hi, double hi, int64_t hi_exact,
                         cudaStream_t s);

// ---- moves (k_move.cu): kernels that only move elements of `elem_size` bytes ----
// out[i] = in[nd input 0 offset(i)] (permute, slice, expand, broadcasting copy).
cudaError_t launch_gather_nd(const void* in, void* out, int64_t n, int elem_size,
                             const NdDesc& nd, cudaStream_t s);
// The reverse: out[nd input 0 offset(i)] = in[i] over the contiguous `in` of n
// elements (strided_copy_). Positions written twice keep one of the values.
cudaError_t launch_scatter_nd(const void* in, void* out, int64_t n, int elem_size,
                              const NdDesc& nd, cudaStream_t s);
// A gather whose input is contiguous along some output dim `j` other than the last (a
// transpose): 32x32 tiles through shared memory, so reads and writes are both coalesced.
// rows = extent of output dim j (input stride 1, output stride out_row_stride), cols = extent
// of the last output dim (input stride in_col_stride, output stride 1); the remaining dims
// are a batch with their own strides.
struct TiledDesc {
  int64_t rows = 0, cols = 0, in_col_stride = 0, out_row_stride = 0;
  int batch_rank = 0;
  int64_t batch_shape[kMaxDims] = {};
  int64_t batch_in_stride[kMaxDims] = {};
  int64_t batch_out_stride[kMaxDims] = {};
  int64_t in_base = 0;
};
cudaError_t launch_gather_tiled(const void* in, void* out, int elem_size, const TiledDesc& t,
                                cudaStream_t s);
// where: out[i] = cond[nd0(i)] ? a[nd1(i)] : b[nd2(i)].
cudaError_t launch_where(const uint8_t* cond, const void* a, const void* b, void* out, int64_t n,
                         int elem_size, const NdDesc& nd, cudaStream_t s);
// masked_fill: out[i] = mask[nd1(i)] ? fill : x[nd0(i)].
cudaError_t launch_masked_fill(const void* x, const uint8_t* mask, void* out, int64_t n,
                               int elem_size, uint64_t fill_bits, const NdDesc& nd,
                               cudaStream_t s);

// ---- indexing (k_index.cu); index dtype is int32 or int64 ----
// Smallest position whose index value is outside [0, limit) into *first_bad (preset to
// INT64_MAX by the caller).
cudaError_t launch_check_indices(const void* idx, int idx_dtype, int64_t count, int64_t limit,
                                 int64_t* first_bad, cudaStream_t s);
// slot[1] = idx[slot[0]] when slot[0] (a check_indices result) is not INT64_MAX (one thread).
cudaError_t launch_bad_index_value(const void* idx, int idx_dtype, int64_t* slot, cudaStream_t s);
// The kernels below skip index values outside their extent (the check reports them).
// out[o, j, i] = x[o, idx[j], i] for x [outer, n, inner], out [outer, k, inner].
cudaError_t launch_index_select(const void* x, const void* idx, int idx_dtype, void* out,
                                int64_t outer, int64_t n, int64_t k, int64_t inner,
                                int elem_size, cudaStream_t s);
// gather: out[p] = x[nd0(p) + idx[p] * dim_stride] over the (contiguous) index's elements.
cudaError_t launch_gather_index(const void* x, const void* idx, int idx_dtype, void* out,
                                int64_t count, int elem_size, int64_t dim_stride,
                                int64_t extent, const NdDesc& nd, cudaStream_t s);
// scatter_add: out[nd0(p) + idx[p] * dim_stride] += src[nd1(p)] (atomically, in `dtype`).
cudaError_t launch_scatter_add(void* out, const void* idx, int idx_dtype, const void* src,
                               int dtype, int64_t count, int64_t dim_stride, int64_t extent,
                               const NdDesc& nd, cudaStream_t s);
// index_add: out[o, idx[j], i] += src[o, j, i] (atomically) for out [outer, n, inner].
cudaError_t launch_index_add(void* out, const void* idx, int idx_dtype, const void* src,
                             int dtype, int64_t outer, int64_t n, int64_t k, int64_t inner,
                             cudaStream_t s);
// one_hot: out (int64, zeroed by the caller)[i * classes + labels[i]] = 1.
cudaError_t launch_one_hot(const void* labels, int idx_dtype, int64_t n, int64_t classes,
                           int64_t* out, cudaStream_t s);

// ---- reductions and cumsum (k_reduce.cu) over x viewed as [outer, n, inner] ----
// `scratch` holds partials when a row is split over several blocks: at least
// reduce_scratch_bytes(...) bytes (nullptr allowed when that is 0).
size_t reduce_scratch_bytes(OpId op, int dtype, int64_t outer, int64_t n, int64_t inner);
cudaError_t launch_reduce(OpId op, int dtype, const void* x, void* out, int64_t outer, int64_t n,
                          int64_t inner, double correction, void* scratch, cudaStream_t s);
// cumsum along n (sum's accumulator; out int64 for integer and bool x, else x's dtype).
cudaError_t launch_cumsum(int dtype, const void* x, void* out, int64_t outer, int64_t n,
                          int64_t inner, cudaStream_t s);

// ---- argsort (k_sort.cu): the stable sorting permutation of each line along n (int64) ----
cudaError_t launch_argsort(int dtype, const void* x, int64_t* out, int64_t outer, int64_t n,
                           int64_t inner, bool descending, cudaStream_t s);

// ---- integer matmul (k_matmul_int.cu): one row-major [m,k] @ [k,n], wrapping arithmetic ----
cudaError_t launch_matmul_int(int dtype, const void* a, const void* b, void* c, int64_t m,
                              int64_t k, int64_t n, cudaStream_t s);

}  // namespace gt::worker::cuda
