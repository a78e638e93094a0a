// Unary elementwise ops: neg abs relu keep the dtype (integer neg/abs wrap around, so
// neg(INT_MIN) == INT_MIN; relu and abs keep NaN); exp log sqrt sigmoid tanh compute in float32
// and give float32 for integer/bool inputs (the shape rule says so), the input dtype otherwise.
// sigmoid is evaluated as 1/(1+e^-x) for x >= 0 and e^x/(1+e^x) for x < 0, so it neither
// overflows nor loses the tiny tail for large |x|.
#include <cmath>
#include <type_traits>

#include "workerd/cpu/kernels.h"

namespace gt::worker::cpu {
namespace {

struct NegOp {
  template <class C> static C f(C a) {
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(std::make_unsigned_t<C>(0) - static_cast<std::make_unsigned_t<C>>(a));
    else return -a;
  }
};
struct AbsOp {
  template <class C> static C f(C a) {
    if constexpr (std::is_integral_v<C>) return a < 0 ? NegOp::f(a) : a;
    else return std::fabs(a);
  }
};
struct ReluOp {
  template <class C> static C f(C a) { return a < C(0) ? C(0) : a; }
};

struct ExpOp { static float f(float x) { return std::exp(x); } };
struct LogOp { static float f(float x) { return std::log(x); } };
struct SqrtOp { static float f(float x) { return std::sqrt(x); } };
struct TanhOp { static float f(float x) { return std::tanh(x); } };
struct SigmoidOp {
  static float f(float x) {
    if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
    float e = std::exp(x);
    return e / (1.0f + e);
  }
};

// Same dtype in and out, computed in compute_t<T>.
template <class Op>
Status unary_same(const KernelArgs& args) {
  const int64_t n = count(args.out.meta.shape);
  dispatch_dtype(args.out.meta.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* __restrict a = static_cast<const T*>(in_ptr(args, 0));
    T* __restrict o = static_cast<T*>(out_ptr(args));
    for (int64_t i = 0; i < n; ++i)
      o[i] = convert_value<T>(Op::template f<C>(convert_value<C>(a[i])));
  });
  return Status::ok();
}

constexpr int64_t kTranscendentalGrain = 1 << 16;  // elements per thread, at least

// Floating result, computed in float32 (split over threads when large: these are expensive).
template <class Op>
Status unary_float(const KernelArgs& args) {
  const int64_t n = count(args.out.meta.shape);
  const DType odt = args.out.meta.dtype;
  return dispatch_dtype(in(args, 0).meta.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using O = std::conditional_t<is_float_like_v<T>, T, float>;
    if (odt != (is_float_like_v<T> ? in(args, 0).meta.dtype : DType::kFloat32))
      return unimplemented("unary op: unexpected output dtype {} for input {}", dtype_name(odt),
                           dtype_name(in(args, 0).meta.dtype));
    const T* a = static_cast<const T*>(in_ptr(args, 0));
    O* o = static_cast<O*>(out_ptr(args));
    parallel_for(n, kTranscendentalGrain, [&](int64_t begin, int64_t end) {
      const T* __restrict pa = a + begin;
      O* __restrict po = o + begin;
      for (int64_t i = 0; i < end - begin; ++i)
        po[i] = convert_value<O>(Op::f(convert_value<float>(pa[i])));
    });
    return Status::ok();
  });
}

}  // namespace

void register_unary(KernelTable& t) {
  auto set = [&](OpId op, CpuKernel k) { t[static_cast<size_t>(op)] = k; };
  set(OpId::k_neg, unary_same<NegOp>);
  set(OpId::k_abs, unary_same<AbsOp>);
  set(OpId::k_relu, unary_same<ReluOp>);
  set(OpId::k_exp, unary_float<ExpOp>);
  set(OpId::k_log, unary_float<LogOp>);
  set(OpId::k_sqrt, unary_float<SqrtOp>);
  set(OpId::k_sigmoid, unary_float<SigmoidOp>);
  set(OpId::k_tanh, unary_float<TanhOp>);
}

}  // namespace gt::worker::cpu
