// The one elementwise loop behind every elementwise kernel (unary, binary, scalar, cast, clamp,
// where, masked_fill, the broadcasting gather): out[i] = f(in_0[.], in_1[.], ...) over a
// contiguous output of n elements. Inputs are either contiguous (map_contiguous: element i at
// p[i]) or reached through an NdDesc (map_nd: broadcasting, permuted or sliced operands).
//
// Each thread moves V elements per step, one aligned vector load per input and one vector store:
// V = 16 bytes / the widest element type, capped at 8 (float32 moves float4, 16-bit types 8 at a
// time, bool and int8 8 bytes). Memory-bound kernels need those wide accesses to approach copy
// bandwidth; scalar loads leave half of it unused. The loop falls back to V = 1 when a pointer is
// not aligned to a vector (a view's offset) or, through an NdDesc, when the innermost extent is
// not a multiple of V or an input's innermost stride is neither 1 nor 0 (broadcast). Through an
// NdDesc the index arithmetic (the divisions of nd_offsets) then runs once per V elements.
//
// f is a functor object (a struct with a __device__ operator()), so no --extended-lambda.
#pragma once

#include <utility>

#include "workerd/cuda/cuda_common.cuh"

namespace gt::worker::cuda {

template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

// Elements per vector for this set of element types.
template <class... T>
constexpr int vec_width() {
  size_t widest = 1;
  for (size_t s : {sizeof(T)...}) widest = s > widest ? s : widest;
  const size_t v = 16 / widest;
  return v < 1 ? 1 : (v > 8 ? 8 : static_cast<int>(v));
}

inline bool aligned_to(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

namespace loop_detail {

template <int V, class O, class F, class... I>
__device__ __forceinline__ void apply(Vec<O, V>& r, const F& f, const Vec<I, V>&... x) {
#pragma unroll
  for (int j = 0; j < V; ++j) r.v[j] = f(x.v[j]...);
}

template <int V, class O, class F, class... I>
__global__ void contiguous_kernel(O* o, int64_t n, F f, const I*... in) {
  const int64_t nv = n / V;
  for (int64_t i = global_tid(); i < nv; i += grid_stride()) {
    Vec<O, V> r;
    apply<V>(r, f, reinterpret_cast<const Vec<I, V>*>(in)[i]...);
    reinterpret_cast<Vec<O, V>*>(o)[i] = r;
  }
  for (int64_t t = nv * V + global_tid(); t < n; t += grid_stride()) o[t] = f(in[t]...);
}

// V elements of input p starting at element `off`: a vector where the innermost stride is 1, one
// value repeated where it is 0 (V == 1: any stride, nd_offsets already applied it).
template <int V, class T>
__device__ __forceinline__ Vec<T, V> load_run(const T* p, int64_t off, bool repeated) {
  Vec<T, V> v;
  if constexpr (V == 1) {
    v.v[0] = p[off];
  } else if (repeated) {
    const T x = p[off];
#pragma unroll
    for (int j = 0; j < V; ++j) v.v[j] = x;
  } else {
    v = *reinterpret_cast<const Vec<T, V>*>(p + off);
  }
  return v;
}

template <int V, class O, class F, class... I, size_t... P>
__device__ __forceinline__ void nd_step(O* o, int64_t vi, const NdDesc& d, const F& f,
                                        std::index_sequence<P...>, const I*... in) {
  int64_t off[sizeof...(I)];
  nd_offsets<sizeof...(I)>(d, vi * V, off);
  const int last = d.rank - 1;
  Vec<O, V> r;
  apply<V>(r, f, load_run<V>(in, off[P], last >= 0 && d.stride[P][last] == 0)...);
  reinterpret_cast<Vec<O, V>*>(o)[vi] = r;
}

// With V > 1 the host guarantees n % V == 0 (the innermost extent is a multiple of V).
template <int V, class O, class F, class... I>
__global__ void nd_kernel(O* o, int64_t n, NdDesc d, F f, const I*... in) {
  const int64_t nv = n / V;
  for (int64_t i = global_tid(); i < nv; i += grid_stride())
    nd_step<V>(o, i, d, f, std::index_sequence_for<I...>{}, in...);
}

template <int V, class T>
bool nd_vectorizable(const NdDesc& d, int p, const T* ptr) {
  const int last = d.rank - 1;
  if (!aligned_to(ptr, sizeof(T) * V) || d.base[p] % V != 0) return false;
  if (d.stride[p][last] != 0 && d.stride[p][last] != 1) return false;
  for (int k = 0; k < last; ++k)
    if (d.stride[p][k] % V != 0) return false;
  return true;
}

template <int V, class... I, size_t... P>
bool inputs_vectorizable(const NdDesc& d, std::index_sequence<P...>, const I*... in) {
  return (nd_vectorizable<V>(d, static_cast<int>(P), in) && ...);
}

}  // namespace loop_detail

// out[i] = f(in[i]...) for contiguous operands of n elements.
template <class O, class F, class... I>
cudaError_t map_contiguous(cudaStream_t s, int64_t n, const F& f, O* o, const I*... in) {
  if (n <= 0) return cudaSuccess;
  constexpr int V = vec_width<O, I...>();
  const bool vec = V > 1 && aligned_to(o, sizeof(O) * V) && (aligned_to(in, sizeof(I) * V) && ...);
  if (vec)
    loop_detail::contiguous_kernel<V><<<grid_for(n, V), kThreads, 0, s>>>(o, n, f, in...);
  else loop_detail::contiguous_kernel<1><<<grid_for(n), kThreads, 0, s>>>(o, n, f, in...);
  return cudaGetLastError();
}

// out[i] = f(in_p[nd_p(i)]...) with input p at base[p] + strides[p] of the NdDesc.
template <class O, class F, class... I>
cudaError_t map_nd(cudaStream_t s, int64_t n, const NdDesc& nd, const F& f, O* o,
                   const I*... in) {
  static_assert(sizeof...(I) <= 3, "NdDesc describes at most three inputs");
  if (n <= 0) return cudaSuccess;
  const NdDesc d = for_count(nd, n);
  constexpr int V = vec_width<O, I...>();
  const bool vec = V > 1 && d.rank >= 1 && d.shape[d.rank - 1] % V == 0 &&
                   aligned_to(o, sizeof(O) * V) &&
                   loop_detail::inputs_vectorizable<V>(d, std::index_sequence_for<I...>{}, in...);
  if (vec)
    loop_detail::nd_kernel<V><<<grid_for(n, V), kThreads, 0, s>>>(o, n, d, f, in...);
  else loop_detail::nd_kernel<1><<<grid_for(n), kThreads, 0, s>>>(o, n, d, f, in...);
  return cudaGetLastError();
}

}  // namespace gt::worker::cuda
