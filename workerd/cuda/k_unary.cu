// Unary elementwise kernels for every kUnarySame / kUnaryFloat op of ops.def, with the math the
// CPU kernels use (workerd/kernels/elementwise_math.h), dtype conversion (cast rules of
// workerd/kernels/convert.h) and clamp (workerd/cpu/fill_clamp.cpp semantics), all on the
// shared vectorized loop (elementwise_loop.cuh).
//   kUnarySame   same dtype, computed in compute_t
//   kUnaryFloat  float32 math; the output keeps a floating input's dtype, else float32
#include "workerd/cuda/elementwise_loop.cuh"
#include "workerd/kernels/elementwise_math.h"
#include "workerd/kernels/op_traits.h"

namespace gt::worker::cuda {
namespace {

template <OpId kOp, class T, class O>
struct UnaryF {
  // kUnarySame computes in compute_t<T>, kUnaryFloat in math_t<T> (float32; float64 for double).
  using C = std::conditional_t<unary_keeps_dtype(kOp), compute_t<T>, math_t<T>>;
  __device__ O operator()(T a) const { return cvt<O>(UnaryFn<kOp>::f(cvt<C>(a))); }
};

template <OpId kOp>
cudaError_t run_unary(int dtype, const void* in, void* out, int64_t n, cudaStream_t s) {
  return dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    using O = std::conditional_t<unary_keeps_dtype(kOp) || is_float_like_v<T>, T, float>;
    return map_contiguous(s, n, UnaryF<kOp, T, O>{}, static_cast<O*>(out),
                          static_cast<const T*>(in));
  });
}

template <class S, class D>
struct ConvertF {
  __device__ D operator()(S a) const { return cvt<D>(a); }
};

template <class T>
struct ClampF {
  using C = compute_t<T>;
  bool has_lo, has_hi, lo_nan, hi_nan;
  C lo, hi;
  __device__ T operator()(T x) const {
    return cvt<T>(clamp_value(cvt<C>(x), has_lo, lo, lo_nan, has_hi, hi, hi_nan));
  }
};

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
      return map_contiguous(s, n, ConvertF<S, D>{}, static_cast<D*>(out),
                            static_cast<const S*>(in));
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
    const ClampF<T> f{has_lo, has_hi, is_nan(l), is_nan(h), l, h};
    return map_contiguous(s, n, f, static_cast<T*>(out), static_cast<const T*>(x));
  });
}

}  // namespace gt::worker::cuda
