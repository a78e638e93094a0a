// Binary elementwise kernels for every kArith / kTrueDiv / kCompare op of ops.def, on operands
// already converted to one operand dtype P (the host does that), computed in compute_t<P> with
// the math the CPU kernels use (workerd/kernels/elementwise_math.h, conventions there).
//
// Loops: the shared vectorized elementwise loop (elementwise_loop.cuh) for all three modes --
// same-shape, scalar, and broadcasting through an NdDesc.
#include "workerd/cuda/elementwise_loop.cuh"
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

template <OpId kOp, class T>
struct SameF {
  __device__ out_of<kOp, T> operator()(T a, T b) const { return elem<kOp, T>(a, b); }
};

// a op scalar (kLeft: scalar op a) in the compute type. A floating pow whose exponent needs
// double keeps it (elementwise_math.h: its parity is kept); the host passes it unrounded.
template <OpId kOp, class T, bool kLeft>
struct ScalarF {
  using C = compute_t<T>;
  C s;
  double raw;
  bool double_pow;
  __device__ out_of<kOp, T> operator()(T a) const {
    const C x = cvt<C>(a);
    if constexpr (kOp == OpId::k_pow && !kLeft && std::is_floating_point_v<C>) {
      if (double_pow) return cvt<out_of<kOp, T>>(pow_double_exponent(x, raw));
    }
    return cvt<out_of<kOp, T>>(kLeft ? BinaryFn<kOp>::f(s, x) : BinaryFn<kOp>::f(x, s));
  }
};

template <OpId kOp, class T, bool kLeft>
ScalarF<kOp, T, kLeft> scalar_f(const BinaryArgs& x) {
  using C = compute_t<T>;
  // cvt<C>(double) of the device, on the host: integers as the cast does.
  C v;
  if constexpr (std::is_integral_v<C>) v = cast_float_to_int<C>(x.scalar);
  else v = static_cast<C>(x.scalar);
  ScalarF<kOp, T, kLeft> f{v, x.scalar, false};
  if constexpr (std::is_same_v<C, int64_t>) {
    if (x.has_exact) f.s = x.exact;
  }
  if constexpr (kOp == OpId::k_pow && !kLeft && std::is_floating_point_v<C>)
    f.double_pow = pow_exponent_needs_double(x.scalar);
  return f;
}

template <OpId kOp, class T>
cudaError_t run(const BinaryArgs& x, cudaStream_t s) {
  using O = out_of<kOp, T>;
  const T* a = static_cast<const T*>(x.a);
  const T* b = static_cast<const T*>(x.b);
  O* o = static_cast<O*>(x.out);
  switch (x.mode) {
    case 0: return map_contiguous(s, x.n, SameF<kOp, T>{}, o, a, b);
    case 1: return map_contiguous(s, x.n, scalar_f<kOp, T, false>(x), o, a);
    case 2: return map_contiguous(s, x.n, scalar_f<kOp, T, true>(x), o, a);
    default: return map_nd(s, x.n, x.nd, SameF<kOp, T>{}, o, a, b);
  }
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
