// Unary elementwise kernels (workerd/cpu/unary.cpp semantics), dtype conversion (cast rules of
// workerd/cpu/convert.h) and clamp (workerd/cpu/fill_clamp.cpp).
//   neg abs relu        same dtype, computed in compute_t (integer neg/abs wrap; relu/abs keep NaN)
//   exp log sqrt        float32 math; the output keeps a floating input's dtype, else float32
//   sigmoid tanh        sigmoid split at 0 so neither side overflows (as the CPU does)
#include "workerd/cuda/cuda_common.cuh"

namespace gt::worker::cuda {
namespace {

template <UnOp kOp, class C>
__device__ __forceinline__ C apply_same(C a) {
  if constexpr (kOp == UnOp::kNeg) {
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(std::make_unsigned_t<C>(0) - static_cast<std::make_unsigned_t<C>>(a));
    else return -a;
  } else if constexpr (kOp == UnOp::kAbs) {
    if constexpr (std::is_integral_v<C>) return a < 0 ? apply_same<UnOp::kNeg, C>(a) : a;
    else return fabsf(a);
  } else {
    return a < C(0) ? C(0) : a;
  }
}

template <UnOp kOp>
__device__ __forceinline__ float apply_float(float x) {
  if constexpr (kOp == UnOp::kExp) return expf(x);
  else if constexpr (kOp == UnOp::kLog) return logf(x);
  else if constexpr (kOp == UnOp::kSqrt) return sqrtf(x);
  else if constexpr (kOp == UnOp::kTanh) return tanhf(x);
  else {
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    const float e = expf(x);
    return e / (1.0f + e);
  }
}

template <UnOp kOp, class T, class O>
__global__ void unary_kernel(const T* a, O* o, int64_t n) {
  using C = compute_t<T>;
  for (int64_t i = global_tid(); i < n; i += grid_stride()) {
    if constexpr (kOp == UnOp::kNeg || kOp == UnOp::kAbs || kOp == UnOp::kRelu)
      o[i] = cvt<O>(apply_same<kOp, C>(cvt<C>(a[i])));
    else
      o[i] = cvt<O>(apply_float<kOp>(cvt<float>(a[i])));
  }
}

template <UnOp kOp>
cudaError_t run_unary(int dtype, const void* in, void* out, int64_t n, cudaStream_t s) {
  return dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    constexpr bool kSame = kOp == UnOp::kNeg || kOp == UnOp::kAbs || kOp == UnOp::kRelu;
    using O = std::conditional_t<kSame || is_float_like_v<T>, T, float>;
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
  for (int64_t i = global_tid(); i < n; i += grid_stride()) {
    C v = cvt<C>(x[i]);
    if (has_lo && (v < lo || lo_nan)) v = lo;
    if (has_hi && (v > hi || hi_nan)) v = hi;
    y[i] = cvt<T>(v);
  }
}

// A bound in compute type C: integers saturate like float_to_int (host side of the launcher).
template <class C>
C bound_as(double v) {
  if constexpr (std::is_integral_v<C>) {
    if (!(v == v)) return 0;
    constexpr double lo = static_cast<double>(std::numeric_limits<C>::min());
    constexpr double hi = static_cast<double>(std::numeric_limits<C>::max());
    if (v <= lo) return std::numeric_limits<C>::min();
    if (v >= hi) return std::numeric_limits<C>::max();
    return static_cast<C>(v);
  } else {
    return static_cast<C>(v);
  }
}

}  // namespace

cudaError_t launch_unary(UnOp op, int in_dtype, const void* in, void* out, int64_t n,
                         cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  switch (op) {
    case UnOp::kNeg: return run_unary<UnOp::kNeg>(in_dtype, in, out, n, s);
    case UnOp::kAbs: return run_unary<UnOp::kAbs>(in_dtype, in, out, n, s);
    case UnOp::kRelu: return run_unary<UnOp::kRelu>(in_dtype, in, out, n, s);
    case UnOp::kExp: return run_unary<UnOp::kExp>(in_dtype, in, out, n, s);
    case UnOp::kLog: return run_unary<UnOp::kLog>(in_dtype, in, out, n, s);
    case UnOp::kSqrt: return run_unary<UnOp::kSqrt>(in_dtype, in, out, n, s);
    case UnOp::kSigmoid: return run_unary<UnOp::kSigmoid>(in_dtype, in, out, n, s);
    case UnOp::kTanh: return run_unary<UnOp::kTanh>(in_dtype, in, out, n, s);
  }
  return cudaErrorInvalidValue;
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
                         bool has_hi, double hi, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  return dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    clamp_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(out),
                                                     n, has_lo, bound_as<C>(lo), has_hi,
                                                     bound_as<C>(hi));
    return cudaGetLastError();
  });
}

}  // namespace gt::worker::cuda
