// Unary elementwise kernels for every kUnarySame / kUnaryFloat op of ops.def, with the math the
// CPU kernels use (workerd/kernels/elementwise_math.h), dtype conversion (cast rules of
// workerd/kernels/convert.h) and clamp (workerd/cpu/fill_clamp.cpp semantics).
//   kUnarySame   same dtype, computed in compute_t
//   kUnaryFloat  float32 math; the output keeps a floating input's dtype, else float32
#include "workerd/cuda/cuda_common.cuh"
#include "workerd/kernels/elementwise_math.h"
#include "workerd/kernels/op_traits.h"

namespace gt::worker::cuda {
namespace {

template <OpId kOp, class T, class O>
__global__ void unary_kernel(const T* a, O* o, int64_t n) {
  // kUnarySame computes in compute_t<T>, kUnaryFloat in math_t<T> (float32; float64 for double).
  using C = std::conditional_t<unary_keeps_dtype(kOp), compute_t<T>, math_t<T>>;
  for (int64_t i = global_tid(); i < n; i += grid_stride())
    o[i] = cvt<O>(UnaryFn<kOp>::f(cvt<C>(a[i])));
}

template <OpId kOp>
cudaError_t run_unary(int dtype, const void* in, void* out, int64_t n, cudaStream_t s) {
  return dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    using O = std::conditional_t<unary_keeps_dtype(kOp) || is_float_like_v<T>, T, float>;
    unary_kernel<kOp, T, O><<<grid_for(n), kThreads, 0, s>>>(static_cast<const T*>(in),
                                                             static_cast<O*>(out), n);
    return cudaGetLastError();
  });
}

template <class S, class D>
__global__ void convert_kernel(const S* a, D* o, int64_t n) {
  for (int64_t i = global_tid(); i < n; i += grid_stride()) o[i] = cvt<D>(a[i]);
}

template <class T>
__global__ void clamp_kernel(const T* x, T* y, int64_t n, bool has_lo, compute_t<T> lo,
                             bool has_hi, compute_t<T> hi) {
  using C = compute_t<T>;
  const bool lo_nan = is_nan(lo), hi_nan = is_nan(hi);
  for (int64_t i = global_tid(); i < n; i += grid_stride())
    y[i] = cvt<T>(clamp_value(cvt<C>(x[i]), has_lo, lo, lo_nan, has_hi, hi, hi_nan));
}

}  // namespace

cudaError_t launch_unary(OpId op, int in_dtype, const void* in, void* out, int64_t n,
                         cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  cudaError_t r = cudaErrorInvalidValue;  // not a unary elementwise op
  for_each_op([&](auto c) {
    constexpr OpId kOp = decltype(c)::value;
    if constexpr (is_unary_elementwise(kOp)) {
      if (op == kOp) r = run_unary<kOp>(in_dtype, in, out, n, s);
    }
  });
  return r;
}

cudaError_t launch_convert(const void* in, int in_dtype, void* out, int out_dtype, int64_t n,
                           cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  return dispatch_dtype(in_dtype, [&](auto st) {
    using S = decltype(st);
    return dispatch_dtype(out_dtype, [&](auto dt) {
      using D = decltype(dt);
      convert_kernel<S, D><<<grid_for(n), kThreads, 0, s>>>(static_cast<const S*>(in),
                                                            static_cast<D*>(out), n);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_clamp(const void* x, void* out, int dtype, int64_t n, bool has_lo, double lo,
                         int64_t lo_exact, bool has_hi, double hi, int64_t hi_exact,
                         cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  return dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    C l = value_as<C>(lo), h = value_as<C>(hi);
    if constexpr (std::is_same_v<C, int64_t>) {  // exact beyond 2^53
      l = lo_exact;
      h = hi_exact;
    }
    clamp_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(out),
                                                     n, has_lo, l, has_hi, h);
    return cudaGetLastError();
  });
}

}  // namespace gt::worker::cuda
