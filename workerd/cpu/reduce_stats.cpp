// Floating-result reductions over all elements or one dim (keepdim only changes the meta):
//
//   var        two passes in double (the mean, then the squared deviations), divided by
//              max(0, n - correction) like torch.var: n - correction <= 0 gives inf (or NaN
//              for zero deviations), an empty reduction NaN
//   logsumexp  max-shifted: m + log(sum exp(x - m)); an infinite max is the result itself
//              (all -inf -> -inf, any +inf -> +inf), any NaN -> NaN, empty -> -inf. In double,
//              but for float32 rows of unit stride (every softmax, log_softmax and cross
//              entropy over the last dim): exp in float (exp_f32, vectorized, within 2 ulp),
//              summed in double, as torch computes it in float
//
// Outputs keep a floating input's dtype; integer and bool inputs give float32 (the shape rule).
// Rows with inner == 1 reduce contiguously; otherwise a row of `inner` accumulators sweeps the
// n slices (unit stride).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "workerd/cpu/kernels.h"
#include "workerd/cpu/parallel.h"
#include "workerd/cpu/wide_simd.h"
#include "workerd/kernels/fast_exp.h"
#include "workerd/kernels/reduce_plan.h"

namespace gt::worker::cpu {
namespace {

template <class T>
using out_t = std::conditional_t<is_float_like_v<T>, T, float>;

// The reduction over [outer, n, inner] (every row of n strided by inner), one output each:
// `fold(values, count, stride)` gets a strided run and returns the reduced double. Rows are
// split over threads once there are >= 2 * 2^16 elements (each computed as on one thread: the
// results do not depend on the split); exp and log in double cost a few ns an element (a
// logsumexp over [256, 784] took 0.7 ms on one thread).
template <class T, class Fold>
void reduce_rows(const T* x, out_t<T>* y, const ReduceView& v, Fold&& fold) {
  using O = out_t<T>;
  const int64_t rows = v.outer * v.inner;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(v.n, 1));
  parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t o = r / v.inner, j = r % v.inner;
      y[r] = convert_value<O>(fold(x + o * v.n * v.inner + j, v.inner));
    }
  });
}

template <class T>
double var_of(const T* x, int64_t n, int64_t stride, double correction) {
  double s = 0;
  for (int64_t k = 0; k < n; ++k) s += convert_value<double>(x[k * stride]);
  const double mean = s / static_cast<double>(n);  // NaN for n == 0
  double ss = 0, c = 0;
  for (int64_t k = 0; k < n; ++k) {
    const double d = convert_value<double>(x[k * stride]) - mean;
    ss += d * d;
    c += d;
  }
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  const double denom = std::max(0.0, static_cast<double>(n) - correction);
  // The corrected two-pass form (Chan, Golub, LeVeque): c is the rounding error of the mean,
  // which matters for float64 inputs far from zero (n equal values give exactly 0, as torch's
  // Welford does, not (x - rounded mean)^2).
  if constexpr (std::is_same_v<T, double>)
    if (std::isfinite(ss)) return (ss - c * c / static_cast<double>(n)) / denom;  // inf stays inf
  return ss / denom;
}

template <class T>
double logsumexp_of(const T* x, int64_t n, int64_t stride) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < n; ++k) {
    const double v = convert_value<double>(x[k * stride]);
    if (v != v) return v;
    if (v > m) m = v;
  }
  if (std::isinf(m)) return m;
  double s = 0;
  for (int64_t k = 0; k < n; ++k) s += std::exp(convert_value<double>(x[k * stride]) - m);
  return m + std::log(s);
}

// A float32 row of unit stride: the max without a branch, then the exps in blocks the compiler
// vectorizes, each block summed into four double accumulators. 4-5x faster than exp in double
// per element (gt-bench-cpu-kernels logsumexp_dim_1). Written once, instantiated for the
// baseline and the AVX2 + FMA targets (wide_simd.h), like the unary kernels.
[[gnu::always_inline]] inline double logsumexp_f32_row(const float* __restrict x, int64_t n) {
  // The max in 16 lanes (one running max each: a single one is a chain the compiler cannot
  // vectorize, 13x slower), then across them.
  constexpr int kLanes = 16;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  float lane_max[kLanes];
  int lane_nan[kLanes];
  for (int j = 0; j < kLanes; ++j) {
    lane_max[j] = neg_inf;
    lane_nan[j] = 0;
  }
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const float v = x[k + j];
      lane_nan[j] |= v != v;
      lane_max[j] = v > lane_max[j] ? v : lane_max[j];
    }
  float m = neg_inf;
  int nan = 0;
  for (; k < n; ++k) {
    const float v = x[k];
    nan |= v != v;
    m = v > m ? v : m;
  }
  for (int j = 0; j < kLanes; ++j) {
    nan |= lane_nan[j];
    m = lane_max[j] > m ? lane_max[j] : m;
  }
  if (nan) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(m)) return m;
  constexpr int64_t kBlock = 256;
  float e[kBlock];
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (int64_t k0 = 0; k0 < n; k0 += kBlock) {
    const int64_t b = std::min(kBlock, n - k0);
    for (int64_t i = 0; i < b; ++i) e[i] = exp_f32(x[k0 + i] - m);
    int64_t i = 0;
    for (; i + 4 <= b; i += 4) {
      s0 += e[i];
      s1 += e[i + 1];
      s2 += e[i + 2];
      s3 += e[i + 3];
    }
    for (; i < b; ++i) s0 += e[i];
  }
  return static_cast<double>(m) + std::log((s0 + s1) + (s2 + s3));
}
double logsumexp_f32_base(const float* x, int64_t n) { return logsumexp_f32_row(x, n); }
GT_WIDE_SIMD_TARGET double logsumexp_f32_wide(const float* x, int64_t n) {
  return logsumexp_f32_row(x, n);
}

template <bool kVar>
Status stats_kernel(const KernelArgs& args) {
  const Tensor& x = in(args, 0);
  const ReduceView v = reduce_view(x.meta.shape, args.attrs);
  if (v.outer * v.inner == 0) return Status::ok();
  GT_RETURN_IF_ERROR(check_reduce(args, v));
  const double correction = args.attrs.real_at(0, 1.0);
  return dispatch_dtype(x.meta.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* px = static_cast<const T*>(in_ptr(args, 0));
    auto* py = static_cast<out_t<T>*>(out_ptr(args));
    if constexpr (kVar) {
      reduce_rows<T>(px, py, v, [&](const T* r, int64_t st) { return var_of(r, v.n, st, correction); });
    } else if constexpr (std::is_same_v<T, float>) {
      if (v.inner == 1) {
        auto row = wide_simd() ? logsumexp_f32_wide : logsumexp_f32_base;
        reduce_rows<T>(px, py, v, [&](const T* r, int64_t) { return row(r, v.n); });
      } else {
        reduce_rows<T>(px, py, v, [&](const T* r, int64_t st) { return logsumexp_of(r, v.n, st); });
      }
    } else {
      reduce_rows<T>(px, py, v, [&](const T* r, int64_t st) { return logsumexp_of(r, v.n, st); });
    }
    return Status::ok();
  });
}

}  // namespace

void register_reduce_stats(KernelTable& t) {
  t[static_cast<size_t>(OpId::k_var)] = stats_kernel<true>;
  t[static_cast<size_t>(OpId::k_logsumexp)] = stats_kernel<false>;
}

}  // namespace gt::worker::cpu
