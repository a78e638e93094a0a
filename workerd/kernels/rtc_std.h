// The few standard-library names the shared kernel math (numeric.h, elementwise_math.h) uses,
// for NVRTC, which compiles the fused kernels at run time and has no C++ standard library (and
// the worker's machine need not have the CUDA toolkit's libcu++ headers). Only included when
// __CUDACC_RTC__ is defined; the host and nvcc builds use the real <type_traits> etc. Each trait
// here is the standard one restricted to the arithmetic types the kernels instantiate.
#pragma once

#ifndef __CUDACC_RTC__
#error "rtc_std.h is for NVRTC only"
#endif

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef decltype(sizeof(0)) size_t;

// <math.h>'s constants (glibc's values).
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
#define M_2_SQRTPI 1.12837916709551257390

namespace std {
using ::int8_t; using ::int16_t; using ::int32_t; using ::int64_t;
using ::uint8_t; using ::uint16_t; using ::uint32_t; using ::uint64_t; using ::size_t;

template <class T, T v> struct integral_constant { static constexpr T value = v; };
using true_type = integral_constant<bool, true>;
using false_type = integral_constant<bool, false>;

template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};
template <class A, class B> inline constexpr bool is_same_v = is_same<A, B>::value;

template <bool B, class T, class F> struct conditional { using type = T; };
template <class T, class F> struct conditional<false, T, F> { using type = F; };
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;

// Integral / unsigned / floating, and the unsigned counterpart, per type (cv-unqualified only:
// the kernels never instantiate them with const or volatile types).
template <class T> struct rtc_int_traits { static constexpr bool integral = false, is_unsigned = false; };
#define GT_RTC_INT(T, U, UNSIGNED)                                                       \
  template <> struct rtc_int_traits<T> {                                                 \
    static constexpr bool integral = true, is_unsigned = UNSIGNED;                       \
    using unsigned_type = U;                                                             \
  };
GT_RTC_INT(bool, bool, true)
GT_RTC_INT(char, unsigned char, false)
GT_RTC_INT(signed char, unsigned char, false)
GT_RTC_INT(unsigned char, unsigned char, true)
GT_RTC_INT(short, unsigned short, false)
GT_RTC_INT(unsigned short, unsigned short, true)
GT_RTC_INT(int, unsigned int, false)
GT_RTC_INT(unsigned int, unsigned int, true)
GT_RTC_INT(long, unsigned long, false)
GT_RTC_INT(unsigned long, unsigned long, true)
GT_RTC_INT(long long, unsigned long long, false)
GT_RTC_INT(unsigned long long, unsigned long long, true)
#undef GT_RTC_INT
template <class T> struct is_integral : integral_constant<bool, rtc_int_traits<T>::integral> {};
template <class T> inline constexpr bool is_integral_v = is_integral<T>::value;
template <class T>
inline constexpr bool is_unsigned_v = rtc_int_traits<T>::is_unsigned;
template <class T> struct is_floating_point : false_type {};
template <> struct is_floating_point<float> : true_type {};
template <> struct is_floating_point<double> : true_type {};
template <class T> inline constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T> struct make_unsigned { using type = typename rtc_int_traits<T>::unsigned_type; };
template <class T> using make_unsigned_t = typename make_unsigned<T>::type;

// The integer limits (the two's-complement extremes).
template <class T> struct numeric_limits {
  static constexpr T max() {
    if constexpr (is_same_v<T, bool>) return true;
    else if constexpr (rtc_int_traits<T>::is_unsigned) return static_cast<T>(~T(0));
    else return static_cast<T>(static_cast<make_unsigned_t<T>>(~make_unsigned_t<T>(0)) >> 1);
  }
  static constexpr T min() {
    if constexpr (rtc_int_traits<T>::is_unsigned) return T(0);
    else return static_cast<T>(-max() - 1);
  }
};
}  // namespace std
