// Indexing kernels (workerd/cpu/indexing.cpp semantics). Index VALUES are checked on the device by
// check_indices, and the result is reported asynchronously (ops_indexing.cpp): these kernels run
// anyway, so each one skips an index outside its extent (a gather writes zero there) and never
// touches memory out of bounds; the poisoned result's values do not matter. scatter_add/index_add accumulate with atomics: float32/float16/
// bfloat16 add in their own type (a float16 sum may differ from the CPU's float32-then-round by
// one rounding), integers wrap, bool add is or; the order of colliding adds is unspecified.
#include "workerd/cuda/cuda_common.cuh"

namespace gt::worker::cuda {
namespace {

template <class I>
__global__ void check_kernel(const I* idx, int64_t count, int64_t limit, int64_t* first_bad) {
  for (int64_t i = global_tid(); i < count; i += grid_stride()) {
    const auto v = static_cast<int64_t>(idx[i]);
    if (v < 0 || v >= limit)
      atomicMin(reinterpret_cast<long long*>(first_bad), static_cast<long long>(i));
  }
}

// slot[0] is the first bad position (INT64_MAX: none); slot[1] gets the value there.
template <class I>
__global__ void bad_value_kernel(const I* idx, int64_t* slot) {
  const int64_t pos = slot[0];
  slot[1] = pos == INT64_MAX ? 0 : static_cast<int64_t>(idx[pos]);
}

template <class U, class I>
__global__ void index_select_kernel(const U* x, const I* idx, U* out, int64_t outer, int64_t n,
                                    int64_t k, int64_t inner) {
  const int64_t total = outer * k * inner;
  const bool small = total <= static_cast<int64_t>(UINT32_MAX);
  for (int64_t e = global_tid(); e < total; e += grid_stride()) {
    int64_t rest, i, o, j;
    divmod(e, inner, small, rest, i);
    divmod(rest, k, small, o, j);
    const auto v = static_cast<int64_t>(idx[j]);
    out[e] = (v < 0 || v >= n) ? U{} : x[(o * n + v) * inner + i];
  }
}

template <class U, class I>
__global__ void gather_index_kernel(const U* x, const I* idx, U* out, int64_t count,
                                    int64_t dim_stride, int64_t extent, NdDesc d) {
  for (int64_t p = global_tid(); p < count; p += grid_stride()) {
    int64_t off[1];
    nd_offsets<1>(d, p, off);
    const auto v = static_cast<int64_t>(idx[p]);
    out[p] = (v < 0 || v >= extent) ? U{} : x[off[0] + v * dim_stride];
  }
}

template <class T>
__device__ __forceinline__ void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    if (v) *p = true;  // or: every writer stores the same value
  } else {
    atomicAdd(p, v);
  }
}

template <class T, class I>
__global__ void scatter_add_kernel(T* out, const I* idx, const T* src, int64_t count,
                                   int64_t dim_stride, int64_t extent, NdDesc d) {
  for (int64_t p = global_tid(); p < count; p += grid_stride()) {
    int64_t off[2];
    nd_offsets<2>(d, p, off);
    const auto v = static_cast<int64_t>(idx[p]);
    if (v >= 0 && v < extent) atomic_add(out + off[0] + v * dim_stride, src[off[1]]);
  }
}

template <class T, class I>
__global__ void index_add_kernel(T* out, const I* idx, const T* src, int64_t outer, int64_t n,
                                 int64_t k, int64_t inner) {
  const int64_t total = outer * k * inner;
  const bool small = total <= static_cast<int64_t>(UINT32_MAX);
  for (int64_t e = global_tid(); e < total; e += grid_stride()) {
    int64_t rest, i, o, j;
    divmod(e, inner, small, rest, i);
    divmod(rest, k, small, o, j);
    const auto v = static_cast<int64_t>(idx[j]);
    if (v >= 0 && v < n) atomic_add(out + (o * n + v) * inner + i, src[e]);
  }
}

template <class I>
__global__ void one_hot_kernel(const I* labels, int64_t n, int64_t classes, int64_t* out) {
  for (int64_t i = global_tid(); i < n; i += grid_stride()) {
    const auto v = static_cast<int64_t>(labels[i]);
    if (v >= 0 && v < classes) out[i * classes + v] = 1;
  }
}

template <class F>
cudaError_t dispatch_index(int idx_dtype, F&& f) {
  if (idx_dtype == kI32) return f(int32_t{});
  if (idx_dtype == kI64) return f(int64_t{});
  return cudaErrorInvalidValue;
}

// Atomic adds exist for these storage types (bf16 needs sm_80, which sm_90 builds satisfy).
template <class F>
cudaError_t dispatch_add_dtype(int dtype, F&& f) {
  switch (dtype) {
    case kF32: return f(float{});
    case kF16: return f(f16{});
    case kBF16: return f(bf16{});
    case kI32: return f(int32_t{});
    case kI64: return f(int64_t{});
    case kBool: return f(bool{});
    case kF64: return f(double{});  // int8 / uint8 have no atomic add: CPU workers only
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_check_indices(const void* idx, int idx_dtype, int64_t count, int64_t limit,
                                 int64_t* first_bad, cudaStream_t s) {
  if (count <= 0) return cudaSuccess;
  return dispatch_index(idx_dtype, [&](auto tag) {
    using I = decltype(tag);
    check_kernel<I><<<grid_for(count), kThreads, 0, s>>>(static_cast<const I*>(idx), count, limit,
                                                         first_bad);
    return cudaGetLastError();
  });
}

cudaError_t launch_bad_index_value(const void* idx, int idx_dtype, int64_t* slot, cudaStream_t s) {
  return dispatch_index(idx_dtype, [&](auto tag) {
    using I = decltype(tag);
    bad_value_kernel<I><<<1, 1, 0, s>>>(static_cast<const I*>(idx), slot);
    return cudaGetLastError();
  });
}

cudaError_t launch_index_select(const void* x, const void* idx, int idx_dtype, void* out,
                                int64_t outer, int64_t n, int64_t k, int64_t inner,
                                int elem_size, cudaStream_t s) {
  const int64_t total = outer * k * inner;
  if (total <= 0) return cudaSuccess;
  return dispatch_index(idx_dtype, [&](auto itag) {
    using I = decltype(itag);
    return dispatch_size(elem_size, [&](auto tag) {
      using U = decltype(tag);
      index_select_kernel<U, I><<<grid_for(total), kThreads, 0, s>>>(
          static_cast<const U*>(x), static_cast<const I*>(idx), static_cast<U*>(out), outer, n, k,
          inner);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_gather_index(const void* x, const void* idx, int idx_dtype, void* out,
                                int64_t count, int elem_size, int64_t dim_stride,
                                int64_t extent, const NdDesc& nd, cudaStream_t s) {
  if (count <= 0) return cudaSuccess;
  return dispatch_index(idx_dtype, [&](auto itag) {
    using I = decltype(itag);
    return dispatch_size(elem_size, [&](auto tag) {
      using U = decltype(tag);
      gather_index_kernel<U, I><<<grid_for(count), kThreads, 0, s>>>(
          static_cast<const U*>(x), static_cast<const I*>(idx), static_cast<U*>(out), count,
          dim_stride, extent, for_count(nd, count));
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_scatter_add(void* out, const void* idx, int idx_dtype, const void* src,
                               int dtype, int64_t count, int64_t dim_stride, int64_t extent,
                               const NdDesc& nd, cudaStream_t s) {
  if (count <= 0) return cudaSuccess;
  return dispatch_index(idx_dtype, [&](auto itag) {
    using I = decltype(itag);
    return dispatch_add_dtype(dtype, [&](auto tag) {
      using T = decltype(tag);
      scatter_add_kernel<T, I><<<grid_for(count), kThreads, 0, s>>>(
          static_cast<T*>(out), static_cast<const I*>(idx), static_cast<const T*>(src), count,
          dim_stride, extent, for_count(nd, count));
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_index_add(void* out, const void* idx, int idx_dtype, const void* src,
                             int dtype, int64_t outer, int64_t n, int64_t k, int64_t inner,
                             cudaStream_t s) {
  const int64_t total = outer * k * inner;
  if (total <= 0) return cudaSuccess;
  return dispatch_index(idx_dtype, [&](auto itag) {
    using I = decltype(itag);
    return dispatch_add_dtype(dtype, [&](auto tag) {
      using T = decltype(tag);
      index_add_kernel<T, I><<<grid_for(total), kThreads, 0, s>>>(
          static_cast<T*>(out), static_cast<const I*>(idx), static_cast<const T*>(src), outer, n,
          k, inner);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_one_hot(const void* labels, int idx_dtype, int64_t n, int64_t classes,
                           int64_t* out, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  return dispatch_index(idx_dtype, [&](auto itag) {
    using I = decltype(itag);
    one_hot_kernel<I><<<grid_for(n), kThreads, 0, s>>>(static_cast<const I*>(labels), n, classes,
                                                       out);
    return cudaGetLastError();
  });
}

}  // namespace gt::worker::cuda
