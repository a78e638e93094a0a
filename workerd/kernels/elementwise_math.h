// The math of every elementwise op, written once for both devices: the CPU kernels (g++) and
// the CUDA kernels (nvcc) instantiate these per op, and the op lists come from ops.def
// (op_traits.h). Adding a unary or binary elementwise op to the worker = its row in ops.def
// (rule kUnarySame / kUnaryFloat / kArith / kTrueDiv / kCompare) + one specialization here.
//
//   UnaryFn<op>::f(C)     C = compute_t<T> for kUnarySame ops, float for kUnaryFloat ops
//   BinaryFn<op>::f(C, C) C = compute_t<P> of the operand dtype P; comparisons return bool
//
// Conventions (PyTorch's where it defines them):
//   - integer neg/abs/add/sub/mul/pow wrap around (two's complement), so neg(INT_MIN) ==
//     INT_MIN; integer pow with a negative exponent is 0 unless the base is 1 (-> 1) or -1
//     (-> +-1 by parity)
//   - relu and abs keep NaN; maximum/minimum propagate NaN like torch.maximum
//   - clamp with a NaN bound: NaN everywhere when both bounds are given, no effect when it is
//     the only one (torch.clamp on CPU; clamp_value below)
//   - floating -> integer casts (convert_value): NaN, inf and out of range give the type's
//     minimum, as torch on x86-64 (cast_float_to_int in numeric.h)
//   - sigmoid is torch's 1/(1+e^-x): 1 for large x, and for x below ~-88 the denominator
//     overflows to inf and the result is 0 (as torch's, where e^x/(1+e^x) would keep a
//     subnormal tail: silu's gradient then differs where it multiplies an infinite gradient)
//   - bool arithmetic runs in int32 and is converted back with != 0 (add = or, mul = and)
// Floating math calls the C functions of the compute type through fm:: (sqrtf for float, sqrt
// for double: the same as std::sqrt on the host, CUDA's own on the device), but for float exp,
// log, tanh and erf on the host, which are exp_f32 / log_f32 / tanh_f32 / erf_f32 (fast_exp.h,
// fast_math.h: vectorizable, within 2 ulp).
#pragma once

#ifdef __CUDACC_RTC__  // a fused kernel compiled at run time: NVRTC has the math built in
#include "workerd/kernels/numeric.h"  // (first: it defines the fixed-width ints op_id.h uses)
#include "gt/core/op_id.h"
#else
#include <math.h>

#include <type_traits>

#include "gt/core/ops.h"
#include "workerd/kernels/fast_exp.h"
#include "workerd/kernels/fast_math.h"
#include "workerd/kernels/numeric.h"
#endif

namespace gt::worker {

// The C math functions by overload: float ones for float, double ones for double (float64).
namespace fm {
#define GT_FM_1(NAME)                                                  \
  GT_HOST_DEVICE float NAME(float x) { return ::NAME##f(x); }          \
  GT_HOST_DEVICE double NAME(double x) { return ::NAME(x); }
#define GT_FM_2(NAME)                                                           \
  GT_HOST_DEVICE float NAME(float x, float y) { return ::NAME##f(x, y); }       \
  GT_HOST_DEVICE double NAME(double x, double y) { return ::NAME(x, y); }
GT_FM_1(sqrt) GT_FM_1(floor) GT_FM_1(fabs)
// exp, log, tanh, erf: on the host the vectorizable ones (fast_exp.h, fast_math.h) for float;
// CUDA's own on the device.
#ifdef __CUDA_ARCH__
#define GT_FM_FAST(NAME) \
  GT_HOST_DEVICE float NAME(float x) { return ::NAME##f(x); }
#else
#define GT_FM_FAST(NAME) \
  GT_HOST_DEVICE float NAME(float x) { return NAME##_f32(x); }
#endif
#define GT_FM_FAST_1(NAME) \
  GT_FM_FAST(NAME)         \
  GT_HOST_DEVICE double NAME(double x) { return ::NAME(x); }
GT_FM_FAST_1(exp) GT_FM_FAST_1(log) GT_FM_FAST_1(tanh) GT_FM_FAST_1(erf)
#undef GT_FM_FAST_1
#undef GT_FM_FAST
GT_FM_2(pow) GT_FM_2(fmod) GT_FM_2(copysign)
#undef GT_FM_1
#undef GT_FM_2
}  // namespace fm

template <OpId kOp> struct UnaryFn;   // one specialization per unary elementwise op
template <OpId kOp> struct BinaryFn;  // one specialization per binary elementwise op

// ---- unary ----------------------------------------------------------------------------------

template <> struct UnaryFn<OpId::k_neg> {
  template <class C> GT_HOST_DEVICE static C f(C a) {
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(std::make_unsigned_t<C>(0) - static_cast<std::make_unsigned_t<C>>(a));
    else return -a;
  }
};
template <> struct UnaryFn<OpId::k_abs> {
  template <class C> GT_HOST_DEVICE static C f(C a) {
    if constexpr (std::is_integral_v<C>) return a < 0 ? UnaryFn<OpId::k_neg>::f(a) : a;
    else return fm::fabs(a);
  }
};
template <> struct UnaryFn<OpId::k_relu> {
  template <class C> GT_HOST_DEVICE static C f(C a) { return a < C(0) ? C(0) : a; }
};
template <> struct UnaryFn<OpId::k_exp> {
  template <class C> GT_HOST_DEVICE static C f(C x) { return fm::exp(x); }
};
template <> struct UnaryFn<OpId::k_log> {
  template <class C> GT_HOST_DEVICE static C f(C x) { return fm::log(x); }
};
template <> struct UnaryFn<OpId::k_sqrt> {
  template <class C> GT_HOST_DEVICE static C f(C x) { return fm::sqrt(x); }
};
template <> struct UnaryFn<OpId::k_tanh> {
  template <class C> GT_HOST_DEVICE static C f(C x) { return fm::tanh(x); }
};
template <> struct UnaryFn<OpId::k_erf> {
  template <class C> GT_HOST_DEVICE static C f(C x) { return fm::erf(x); }
};
template <> struct UnaryFn<OpId::k_sigmoid> {
  template <class C> GT_HOST_DEVICE static C f(C x) { return C(1) / (C(1) + fm::exp(-x)); }
};
// The activations in torch's CPU formulas and operation order (its float kernels), so inf and
// NaN come out where torch's do: silu(-inf) and gelu(-inf) are NaN, silu(-100) is -0.
template <> struct UnaryFn<OpId::k_silu> {
  template <class C> GT_HOST_DEVICE static C f(C x) { return x / (C(1) + fm::exp(-x)); }
};
template <> struct UnaryFn<OpId::k_gelu> {
  template <class C> GT_HOST_DEVICE static C f(C x) {
    return x * C(0.5) * (C(1) + fm::erf(x * static_cast<C>(M_SQRT1_2)));
  }
};
template <> struct UnaryFn<OpId::k_gelu_tanh> {
  template <class C> GT_HOST_DEVICE static C f(C x) {
    const C beta = static_cast<C>(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = static_cast<C>(0.044715);
    const C inner = beta * (x + kappa * (x * x * x));
    return C(0.5) * x * (C(1) + fm::tanh(inner));
  }
};

// ---- binary ---------------------------------------------------------------------------------

namespace detail {
template <class C>
using unsigned_of = std::make_unsigned_t<C>;
}  // namespace detail

template <> struct BinaryFn<OpId::k_add> {
  template <class C> GT_HOST_DEVICE static C f(C a, C b) {
    using detail::unsigned_of;
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(static_cast<unsigned_of<C>>(a) + static_cast<unsigned_of<C>>(b));
    else return a + b;
  }
};
template <> struct BinaryFn<OpId::k_sub> {
  template <class C> GT_HOST_DEVICE static C f(C a, C b) {
    using detail::unsigned_of;
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(static_cast<unsigned_of<C>>(a) - static_cast<unsigned_of<C>>(b));
    else return a - b;
  }
};
template <> struct BinaryFn<OpId::k_mul> {
  template <class C> GT_HOST_DEVICE static C f(C a, C b) {
    using detail::unsigned_of;
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(static_cast<unsigned_of<C>>(a) * static_cast<unsigned_of<C>>(b));
    else return a * b;
  }
};
// Only ever run with a floating operand dtype (the shape rule makes the output floating).
template <> struct BinaryFn<OpId::k_div> {
  template <class C> GT_HOST_DEVICE static C f(C a, C b) {
    if constexpr (std::is_integral_v<C>)
      return float_to_int<C>(static_cast<double>(a) / static_cast<double>(b));
    else return a / b;
  }
};
template <> struct BinaryFn<OpId::k_pow> {
  template <class C> GT_HOST_DEVICE static C f(C base, C e) {
    if constexpr (std::is_integral_v<C>) {
      if (e < 0) return base == 1 ? C(1) : base == -1 ? ((e & 1) ? C(-1) : C(1)) : C(0);
      using U = detail::unsigned_of<C>;
      U r = 1, b = static_cast<U>(base);
      for (; e != 0; e >>= 1) {
        if (e & 1) r = static_cast<U>(r * b);
        b = static_cast<U>(b * b);
      }
      return static_cast<C>(r);
    } else {
      if (e == C(2)) return base * base;  // torch's special case (mse_loss squares with it)
      return fm::pow(base, e);
    }
  }
};
// pow with a scalar exponent that is an integer the float compute type cannot hold (|e| >=
// 2^24): in double, as torch's scalar loop takes it, so the exponent's parity -- the sign of a
// negative base's power -- is kept ((-1) ** -2147483649 is -1, not 1).
GT_HOST_DEVICE bool pow_exponent_needs_double(double e) {
  return fabs(e) >= 16777216.0 && floor(e) == e;
}
template <class C> GT_HOST_DEVICE C pow_double_exponent(C base, double e) {
  return static_cast<C>(pow(static_cast<double>(base), e));
}
// floor_divide / remainder: Python's // and % (PyTorch's floor division). Floating: as
// torch computes them, through fmod so that a == b * (a // b) + a % b holds as closely as
// float allows; x // 0 is x / 0 (inf or NaN) and x % 0 is NaN. Integers: rounded toward -inf,
// the remainder takes the divisor's sign; INT_MIN // -1 wraps to INT_MIN (% -1 is 0). An
// integer divisor of 0 never reaches f(): the CPU kernel refuses it first (PyTorch's
// ZeroDivisionError), the CUDA kernel defines the result as 0.
template <> struct BinaryFn<OpId::k_floor_divide> {
  template <class C> GT_HOST_DEVICE static C f(C a, C b) {
    if constexpr (std::is_unsigned_v<C>) {  // uint8: plain division (C(-1) is 255 here)
      return b == 0 ? C(0) : static_cast<C>(a / b);
    } else if constexpr (std::is_integral_v<C>) {
      if (b == 0) return C(0);
      if (b == C(-1)) return BinaryFn<OpId::k_sub>::f(C(0), a);  // wraps: no INT_MIN / -1 trap
      C q = a / b;
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
      return q;
    } else {
      if (b == C(0)) return a / b;
      const C mod = fm::fmod(a, b);
      C div = (a - mod) / b;
      if (mod != C(0) && ((b < C(0)) != (mod < C(0)))) div -= C(1);
      if (div == C(0)) return fm::copysign(C(0), a / b);
      C fl = fm::floor(div);
      if (div - fl > C(0.5)) fl += C(1);
      return fl;
    }
  }
};
template <> struct BinaryFn<OpId::k_remainder> {
  template <class C> GT_HOST_DEVICE static C f(C a, C b) {
    if constexpr (std::is_unsigned_v<C>) {
      return b == 0 ? C(0) : static_cast<C>(a % b);
    } else if constexpr (std::is_integral_v<C>) {
      if (b == 0 || b == C(-1)) return C(0);
      C r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    } else {
      C r = fm::fmod(a, b);
      if (r != C(0) && ((b < C(0)) != (r < C(0)))) r += b;
      return r;
    }
  }
};
template <> struct BinaryFn<OpId::k_maximum> {
  template <class C> GT_HOST_DEVICE static C f(C a, C b) { return (a > b || is_nan(a)) ? a : b; }
};
template <> struct BinaryFn<OpId::k_minimum> {
  template <class C> GT_HOST_DEVICE static C f(C a, C b) { return (a < b || is_nan(a)) ? a : b; }
};
#define GT_COMPARISON(name, expr)                                          \
  template <> struct BinaryFn<OpId::k_##name> {                            \
    template <class C> GT_HOST_DEVICE static bool f(C a, C b) { return expr; } \
  };
GT_COMPARISON(eq, a == b)
GT_COMPARISON(ne, a != b)
GT_COMPARISON(lt, a < b)
GT_COMPARISON(le, a <= b)
GT_COMPARISON(gt, a > b)
GT_COMPARISON(ge, a >= b)
#undef GT_COMPARISON

// ---- clamp ----------------------------------------------------------------------------------

// min(max(v, lo), hi) with either bound optional: lo > hi gives hi and a NaN v stays NaN. A NaN
// bound follows torch.clamp on CPU: with both bounds given, a NaN one makes every result NaN
// (torch fills the result with NaN); a lone NaN bound changes nothing (torch's clamp_min /
// clamp_max compute max(v, NaN) = v), so x.clamp(min=nan) == x. lo_nan/hi_nan are
// is_nan(lo)/is_nan(hi), hoisted.
template <class C>
GT_HOST_DEVICE C clamp_value(C v, bool has_lo, C lo, bool lo_nan, bool has_hi, C hi,
                             bool hi_nan) {
  if (has_lo && has_hi && (lo_nan || hi_nan)) return lo_nan ? lo : hi;
  if (has_lo && v < lo) v = lo;
  if (has_hi && v > hi) v = hi;
  return v;
}

}  // namespace gt::worker
