// Binary elementwise kernels for every kArith / kTrueDiv / kCompare op of ops.def, on operands
// already converted to one operand dtype P (the host does that), computed in compute_t<P> with
// the math the CPU kernels use (workerd/kernels/elementwise_math.h, conventions there).
//
// Loops: contiguous same-shape operands use 4-element vector loads/stores when every pointer is
// aligned (the allocator gives 256-byte aligned blocks); a scalar operand and the general
// broadcasting case (NdDesc) are plain grid-stride loops.
#include "workerd/cuda/cuda_common.cuh"
#include "workerd/kernels/elementwise_math.h"
#include "workerd/kernels/op_traits.h"

namespace gt::worker::cuda {
namespace {

template <OpId kOp, class T>
using out_of = std::conditional_t<is_comparison(kOp), bool, T>;

template <OpId kOp, class T>
__device__ __forceinline__ out_of<kOp, T> elem(T a, T b) {
  using C = compute_t<T>;
  return cvt<out_of<kOp, T>>(BinaryFn<kOp>::f(cvt<C>(a), cvt<C>(b)));
}

template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

template <OpId kOp, class T>
__global__ void same_vec_kernel(const T* a, const T* b, out_of<kOp, T>* o, int64_t n) {
  using O = out_of<kOp, T>;
  constexpr int V = 4;
  const int64_t nv = n / V;
  const auto* va = reinterpret_cast<const Vec<T, V>*>(a);
  const auto* vb = reinterpret_cast<const Vec<T, V>*>(b);
  auto* vo = reinterpret_cast<Vec<O, V>*>(o);
  for (int64_t i = global_tid(); i < nv; i += grid_stride()) {
    const Vec<T, V> x = va[i], y = vb[i];
    Vec<O, V> r;
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = elem<kOp, T>(x.v[j], y.v[j]);
    vo[i] = r;
  }
  const int64_t t = nv * V + global_tid();
  if (t < n) o[t] = elem<kOp, T>(a[t], b[t]);
}

template <OpId kOp, class T>
__global__ void same_kernel(const T* a, const T* b, out_of<kOp, T>* o, int64_t n) {
  for (int64_t i = global_tid(); i < n; i += grid_stride()) o[i] = elem<kOp, T>(a[i], b[i]);
}

template <OpId kOp, class T, bool kLeft>
__global__ void scalar_kernel(const T* a, double scalar, bool has_exact, int64_t exact,
                              out_of<kOp, T>* o, int64_t n) {
  using C = compute_t<T>;
  C s = cvt<C>(scalar);
  if constexpr (std::is_same_v<C, int64_t>) {
    if (has_exact) s = exact;
  }
  if constexpr (kOp == OpId::k_pow && !kLeft && std::is_floating_point_v<C>) {
    // The host passes such an exponent unrounded (ops_elementwise.cpp).
    if (pow_exponent_needs_double(scalar)) {  // elementwise_math.h: its parity is kept
      for (int64_t i = global_tid(); i < n; i += grid_stride())
        o[i] = cvt<out_of<kOp, T>>(pow_double_exponent(cvt<C>(a[i]), scalar));
      return;
    }
  }
  for (int64_t i = global_tid(); i < n; i += grid_stride()) {
    const C x = cvt<C>(a[i]);
    o[i] = cvt<out_of<kOp, T>>(kLeft ? BinaryFn<kOp>::f(s, x) : BinaryFn<kOp>::f(x, s));
  }
}

template <OpId kOp, class T>
__global__ void nd_kernel(const T* a, const T* b, out_of<kOp, T>* o, int64_t n, NdDesc d) {
  for (int64_t i = global_tid(); i < n; i += grid_stride()) {
    int64_t off[2];
    nd_offsets<2>(d, i, off);
    o[i] = elem<kOp, T>(a[off[0]], b[off[1]]);
  }
}

bool aligned(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

template <OpId kOp, class T>
cudaError_t run(const BinaryArgs& x, cudaStream_t s) {
  using O = out_of<kOp, T>;
  const T* a = static_cast<const T*>(x.a);
  const T* b = static_cast<const T*>(x.b);
  O* o = static_cast<O*>(x.out);
  const int64_t n = x.n;
  switch (x.mode) {
    case 0:
      if (aligned(a, sizeof(T) * 4) && aligned(b, sizeof(T) * 4) && aligned(o, sizeof(O) * 4))
        same_vec_kernel<kOp, T><<<grid_for(n, 4), kThreads, 0, s>>>(a, b, o, n);
      else same_kernel<kOp, T><<<grid_for(n), kThreads, 0, s>>>(a, b, o, n);
      break;
    case 1:
      scalar_kernel<kOp, T, false>
          <<<grid_for(n), kThreads, 0, s>>>(a, x.scalar, x.has_exact, x.exact, o, n);
      break;
    case 2:
      scalar_kernel<kOp, T, true>
          <<<grid_for(n), kThreads, 0, s>>>(a, x.scalar, x.has_exact, x.exact, o, n);
      break;
    default:
      nd_kernel<kOp, T><<<grid_for(n), kThreads, 0, s>>>(a, b, o, n, for_count(x.nd, n));
      break;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_binary(const BinaryArgs& x, cudaStream_t s) {
  if (x.n <= 0) return cudaSuccess;
  cudaError_t r = cudaErrorInvalidValue;  // not a binary elementwise op
  for_each_op([&](auto c) {
    constexpr OpId kOp = decltype(c)::value;
    if constexpr (is_binary_elementwise(kOp)) {
      if (x.op == kOp)
        r = dispatch_dtype(x.p, [&](auto tag) { return run<kOp, decltype(tag)>(x, s); });
    }
  });
  return r;
}

}  // namespace gt::worker::cuda
