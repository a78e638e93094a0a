// Element-type facts shared by the CPU kernels (g++) and the CUDA kernels (nvcc): which type
// arithmetic runs in, NaN tests and the float -> integer rules (casts; attribute values).
// Everything here is usable in host and device code (GT_HOST_DEVICE), so a rule is written once
// for both devices.
// The CUDA half types add their own specializations in workerd/cuda/cuda_common.cuh.
#pragma once

#ifdef __CUDACC_RTC__  // the fused kernels compiled at run time (no standard library there)
#include "workerd/kernels/rtc_std.h"
#else
#include <cstdint>
#include <limits>
#include <type_traits>

#include "gt/core/half.h"
#endif

// Forced inline on the host as on the device: these are the bodies of the elementwise loops,
// which vectorize only when the whole body is inlined, and GCC's inliner drops small functions
// out of line once a translation unit's growth budget is spent (seen: erf over [256, 784]
// 0.14 -> 0.88 ms, one scalar call per element, after an unrelated change to unary.cpp).
#ifdef __CUDACC__
#define GT_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define GT_HOST_DEVICE __attribute__((always_inline)) inline
#endif

namespace gt::worker {

// The 16-bit float storage types (gt::half and gt::bfloat16 here, __half and __nv_bfloat16 on
// the device side).
template <class T> struct is_half_type : std::false_type {};
#ifndef __CUDACC_RTC__  // (fused kernels are float32 only)
template <> struct is_half_type<half> : std::true_type {};
template <> struct is_half_type<bfloat16> : std::true_type {};
#endif
template <class T>
inline constexpr bool is_half_v = is_half_type<T>::value;
template <class T>
inline constexpr bool is_float_like_v = std::is_floating_point_v<T> || is_half_v<T>;

// The type arithmetic runs in: float for the 16-bit floats, int32 for bool (converted back with
// != 0, so add = or, mul = and, maximum = or, minimum = and), the type itself otherwise.
template <class T> struct compute_type { using type = T; };
#ifndef __CUDACC_RTC__
template <> struct compute_type<half> { using type = float; };
template <> struct compute_type<bfloat16> { using type = float; };
#endif
template <> struct compute_type<bool> { using type = int32_t; };
template <class T> using compute_t = typename compute_type<T>::type;
// The type transcendental math (kUnaryFloat ops: exp, tanh, ...) runs in: double for float64,
// float32 for everything else (the 16-bit floats and integers convert to float32 first).
template <class T> using math_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// NaN test that is simply false for integer types (and vectorizes for floating ones).
template <class C>
GT_HOST_DEVICE bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) return v != v;
  else return false;
}

// Floating -> integer as a cast (convert_value, the cast op): truncates toward zero; NaN, +-inf
// and values whose truncation the type cannot hold give the type's minimum. C++ leaves these
// undefined; this is what PyTorch gives on x86-64 CPUs, where the conversion instruction
// (cvttss2si / cvttsd2si, 32 or 64 bit) returns its "integer indefinite" value, e.g.
// torch.tensor([nan, inf, -inf, 1e20, 3e9]).to(torch.int32) is all -2147483648 and
// .to(torch.int64) gives -9223372036854775808 for all but 3e9. Branch-free, so cast loops
// vectorize.
template <class To>
GT_HOST_DEVICE To cast_float_to_int(double v) {
  static_assert(std::is_integral_v<To>);
  // int8 / uint8: through int32, then its low byte (torch: 300. -> 44, -1. -> uint8 255, NaN -> 0).
  if constexpr (sizeof(To) < 4) {
    return static_cast<To>(static_cast<uint32_t>(cast_float_to_int<int32_t>(v)));
  } else {
    // The truncation fits iff min - 1 < v < -min (both bounds exact doubles for 32 bits; for 64
    // bits min - 1 rounds to min, and no double lies strictly between them, so v >= min).
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
    const bool fits = (sizeof(To) >= 8 ? v >= lo : v > lo - 1.0) && v < -lo;  // false for NaN
    const To t = static_cast<To>(fits ? v : 0.0);
    return fits ? t : std::numeric_limits<To>::min();
  }
}

// Floating -> integer for attribute values (a clamp bound, a scalar operand): truncates toward
// zero, saturates at the type's range, NaN gives 0. (Casts use cast_float_to_int.)
template <class To>
GT_HOST_DEVICE To float_to_int(double v) {
  if (!(v == v)) return 0;
  constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<To>::max());
  if (v <= lo) return std::numeric_limits<To>::min();
  if (v >= hi) return std::numeric_limits<To>::max();
  return static_cast<To>(v);
}

// A double attribute (a bound, a scalar) in compute type C: integers saturate like
// float_to_int, floating types round like a cast.
template <class C>
GT_HOST_DEVICE C value_as(double v) {
  if constexpr (std::is_integral_v<C>) return float_to_int<C>(v);
  else return static_cast<C>(v);
}

}  // namespace gt::worker
