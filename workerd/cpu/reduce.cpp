// Reductions sum mean max min argmax argmin over all elements or one dim (keepdim only changes
// the meta), and the scan cumsum along one dim. The input is viewed as [outer, n, inner] with n
// the reduced (scanned) extent; rows with inner == 1 reduce contiguously, otherwise a row of
// `inner` accumulators sweeps the n slices (unit-stride, cache friendly).
//
// Accumulation: floating sums and means in float32, in PyTorch's CPU summation order (below),
// so a partial sum that overflows float32 gives inf as torch's does (mean([3e38, 3e38, -3e38])
// is inf, not 1e38); integer and bool sums in int64 (wrapping), bool sums count trues; a
// floating mean is that float32 sum divided by n in float32 (torch's sum(...).div_(n)).
// cumsum accumulates in double (as torch's CPU cumsum does) and rounds each running sum once to
// its output. mean of zero elements is NaN. max/min propagate NaN. argmax/argmin give the first
// index of the extreme value, a NaN counting as the extreme (like torch); over all elements it
// is the flat index.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "workerd/cpu/cascade_sum.h"
#include "workerd/cpu/kernels.h"
#include "workerd/cpu/wide_simd.h"
#include "workerd/kernels/reduce_plan.h"

namespace gt::worker::cpu {
namespace {

using View = ReduceView;  // reduce_view() is in kernels.h (shared with reduce_stats.cpp)

// ---- sum / mean ----

// Integer accumulation (and cumsum's): int64 for integers and bool, double for floating types.
template <class T>
using acc_t = std::conditional_t<is_float_like_v<T>, double, int64_t>;

template <class A>
inline A acc_add(A s, A v) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<uint64_t>(s) + static_cast<uint64_t>(v));
  else return s + v;
}

// Floating sums: cascade_sum.h (PyTorch's CPU order).

// Columns summed together: whole groups of 4 vectors of kLanes when a row holds a vector load,
// else of 4.
template <class T>
int64_t column_group(int64_t inner) {
  return inner >= kVecElems<T> ? 4 * kLanes : 4;
}

// Columns [c0, c1) of [n, inner] (rows `inner` apart) summed over n: torch's outer sums. c0 is a
// multiple of the group and c1 one too or `inner`. Columns in whole groups each get one
// cascaded running sum over the rows; the remaining columns (< group, at the end) get
// row_sum4's 4 interleaved sums. Each column's sum is its own, whatever range it is summed in
// (so ranges can be summed on different threads, bitwise as one). Computed over blocks of up to
// kBlock columns (their kLevels sums stay in L2), a row segment at a time (unit stride, long
// contiguous reads).
template <class T, class Emit>
void column_sums(const T* __restrict x, int64_t n, int64_t inner, int64_t c0, int64_t c1,
                 std::vector<math_t<T>>& buf, Emit&& emit) {
  using S = math_t<T>;
  constexpr int64_t kBlock = 8192;
  const int64_t group = column_group<T>(inner);
  const int64_t whole = std::min(c1, inner / group * group);
  // The leftover columns (< group) take 4 sums each: 4 * group floats per level suffice.
  buf.resize(static_cast<size_t>(kLevels * std::max(std::min(whole - c0, kBlock), 4 * group)));
  S* acc = buf.data();
  for (int64_t b = c0; b < whole; b += kBlock) {
    const int64_t w = std::min(kBlock, whole - b);
    cascade(acc, w, n, [&](int64_t r, S* __restrict a0) {
      const T* __restrict p = x + r * inner + b;
      for (int64_t k = 0; k < w; ++k) a0[k] += ld(p[k]);
    });
    for (int64_t k = 0; k < w; ++k) emit(b + k, acc[k]);
  }
  const int64_t w = c1 - std::max(whole, c0);  // < group
  if (w <= 0) return;
  const int64_t groups = n / 4;
  cascade(acc, 4 * w, groups, [&](int64_t g, S* __restrict a0) {
    for (int q = 0; q < 4; ++q) {
      const T* __restrict p = x + (4 * g + q) * inner + whole;
      for (int64_t k = 0; k < w; ++k) a0[q * w + k] += ld(p[k]);
    }
  });
  for (int64_t r = groups * 4; r < n; ++r)
    for (int64_t k = 0; k < w; ++k) acc[k] += ld(x[r * inner + whole + k]);
  for (int q = 1; q < 4; ++q)
    for (int64_t k = 0; k < w; ++k) acc[k] += acc[q * w + k];
  for (int64_t k = 0; k < w; ++k) emit(whole + k, acc[k]);
}

// A mean is the float32 sum divided by n in float32, rounded once to T: torch's
// sum(...).div_(n) for float32. For the 16-bit types this is PyTorch 2.1+'s float32 mean; torch
// 1.13 rounds the sum and n to the 16-bit type first (a float16 mean over more than 65504
// elements is 0 there, n being inf), which gt does not copy.
template <class T, bool kMean>
void float_sum_impl(const T* x, T* y, const View& v) {
  using S = math_t<T>;
  const S count = static_cast<S>(v.n);
  auto finish = [&](S s) -> T {
    if constexpr (kMean) return convert_value<T>(s / count);
    else return convert_value<T>(s);
  };
  if (v.inner == 1) {
    split_rows(v.outer, v.n, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) y[o] = finish(row_sum_contiguous(x + o * v.n, v.n));
    });
    return;
  }
  // Parts of whole column groups of each of the outer slices, over the compute pool when the
  // slices are fewer than its threads (a sum over dim 0 of a matrix: one slice), each part
  // kMemoryGrain elements at least.
  const int64_t group = column_group<T>(v.inner);
  const int64_t groups = std::max<int64_t>(1, v.inner / group);
  const int64_t threads = ComputePool::instance().threads();
  const bool split = v.outer * v.n * v.inner >= 2 * kMemoryGrain;
  int64_t per_slice = 1;
  if (split && v.outer < threads)
    per_slice = std::clamp<int64_t>(v.n * v.inner / kMemoryGrain, 1, std::min(threads, groups));
  parallel_for(v.outer * per_slice, split ? 1 : 0, [&](int64_t b, int64_t e) {
    thread_local std::vector<S> buf;
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / per_slice, part = t % per_slice;
      const int64_t c0 = groups * part / per_slice * group;
      const int64_t c1 = part + 1 == per_slice ? v.inner : groups * (part + 1) / per_slice * group;
      T* yo = y + o * v.inner;
      column_sums(x + o * v.n * v.inner, v.n, v.inner, c0, c1, buf,
                  [&](int64_t j, S s) { yo[j] = finish(s); });
    }
  });
}

template <class T>
acc_t<T> int_sum_contiguous(const T* x, int64_t n) {
  using A = acc_t<T>;
  if constexpr (sizeof(T) == 1 && !std::is_same_v<T, bool>) {
    // int8 / uint8: one plain running sum. GCC 12.2 at -O3 miscompiles the four-accumulator
    // loop below for 1-byte integers (bool is fine): its vectorized widening sums a quarter of
    // the values (16 x -1 gives -4; reproduced outside GT). test_reduce's int8/uint8 case.
    A s = 0;
    for (int64_t i = 0; i < n; ++i) s = acc_add(s, static_cast<A>(x[i]));
    return s;
  }
  A s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 = acc_add(s0, convert_value<A>(x[i]));
    s1 = acc_add(s1, convert_value<A>(x[i + 1]));
    s2 = acc_add(s2, convert_value<A>(x[i + 2]));
    s3 = acc_add(s3, convert_value<A>(x[i + 3]));
  }
  for (; i < n; ++i) s0 = acc_add(s0, convert_value<A>(x[i]));
  return acc_add(acc_add(s0, s1), acc_add(s2, s3));
}

// Integer and bool inputs: int64 sums (wrapping); a mean (a gt extension: torch refuses
// integer means) divides in double and gives float32.
template <class T, class O, bool kMean>
void int_sum_impl(const T* x, O* y, const View& v) {
  using A = acc_t<T>;
  auto finish = [&](A s) -> O {
    if constexpr (kMean) return convert_value<O>(static_cast<double>(s) / static_cast<double>(v.n));
    else return convert_value<O>(s);
  };
  if (v.inner == 1) {
    for (int64_t o = 0; o < v.outer; ++o) y[o] = finish(int_sum_contiguous(x + o * v.n, v.n));
    return;
  }
  std::vector<A> acc(static_cast<size_t>(v.inner));
  for (int64_t o = 0; o < v.outer; ++o) {
    std::fill(acc.begin(), acc.end(), A(0));
    const T* base = x + o * v.n * v.inner;
    for (int64_t k = 0; k < v.n; ++k) {
      const T* row = base + k * v.inner;
      for (int64_t j = 0; j < v.inner; ++j) acc[j] = acc_add(acc[j], convert_value<A>(row[j]));
    }
    for (int64_t j = 0; j < v.inner; ++j) y[o * v.inner + j] = finish(acc[j]);
  }
}

template <bool kMean>
Status sum_kernel(const KernelArgs& args) {
  const Tensor& x = in(args, 0);
  const View v = reduce_view(x.meta.shape, args.attrs);
  if (v.outer * v.inner == 0) return Status::ok();
  GT_RETURN_IF_ERROR(check_reduce(args, v));
  return dispatch_dtype(x.meta.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* px = static_cast<const T*>(in_ptr(args, 0));
    if constexpr (is_float_like_v<T>) {
      float_sum_impl<T, kMean>(px, static_cast<T*>(out_ptr(args)), v);
    } else {  // sum gives int64, mean float32
      using O = std::conditional_t<kMean, float, int64_t>;
      int_sum_impl<T, O, kMean>(px, static_cast<O*>(out_ptr(args)), v);
    }
    return Status::ok();
  });
}

// ---- cumsum ----

// out[o, k, j] = sum of x[o, 0..k, j], the running sum kept in sum's accumulator. Along the last
// dim the rows are split over the compute pool (split_rows), each row's sum sequential as before.
template <class T, class O>
void cumsum_impl(const T* x, O* y, const View& v) {
  using A = acc_t<T>;
  if (v.inner == 1) {
    split_rows(v.outer, v.n, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* row = x + o * v.n;
        O* out = y + o * v.n;
        A s = 0;
        for (int64_t k = 0; k < v.n; ++k) {
          s = acc_add(s, convert_value<A>(row[k]));
          out[k] = convert_value<O>(s);
        }
      }
    });
    return;
  }
  std::vector<A> acc(static_cast<size_t>(v.inner));
  for (int64_t o = 0; o < v.outer; ++o) {
    std::fill(acc.begin(), acc.end(), A(0));
    for (int64_t k = 0; k < v.n; ++k) {
      const int64_t base = (o * v.n + k) * v.inner;
      for (int64_t j = 0; j < v.inner; ++j) {
        acc[j] = acc_add(acc[j], convert_value<A>(x[base + j]));
        y[base + j] = convert_value<O>(acc[j]);
      }
    }
  }
}

Status cumsum_kernel(const KernelArgs& args) {
  const Tensor& x = in(args, 0);
  const View v = split_at(x.meta.shape, normalized_dim(args.attrs.axis(), x.meta.shape.rank()));
  if (v.outer * v.n * v.inner == 0) return Status::ok();
  GT_RETURN_IF_ERROR(check_reduce(args, v));
  return dispatch_dtype(x.meta.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using O = std::conditional_t<is_float_like_v<T>, T, int64_t>;  // sum's output dtype
    cumsum_impl<T, O>(static_cast<const T*>(in_ptr(args, 0)), static_cast<O*>(out_ptr(args)), v);
    return Status::ok();
  });
}

// ---- max / min / argmax / argmin ----

// Is `v` a better extreme than `best`? NaN beats everything; the first of equals is kept.
template <bool kMax, class C>
inline bool better(C v, C best) {
  if (is_nan(best)) return false;
  if (is_nan(v)) return true;
  return kMax ? v > best : v < best;
}

// max / min of a float32 row of unit stride in 16 lanes (one running extreme each: a single one
// is a chain the compiler cannot vectorize, ~9x the memory-bound floor), then across them. NaN
// anywhere gives NaN, as `better` does. (Which zero a row of +0 and -0 gives may differ from the
// sequential scan, as between torch's vector and scalar loops.)
template <bool kMax>
[[gnu::always_inline]] inline float extreme_f32_row(const float* __restrict x, int64_t n) {
  constexpr int kLanes = 16;
  float lane[kLanes];
  int lane_nan[kLanes];
  for (int j = 0; j < kLanes; ++j) {
    lane[j] = x[0];
    lane_nan[j] = 0;
  }
  auto pick = [](float v, float best) { return (kMax ? v > best : v < best) ? v : best; };
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const float v = x[k + j];
      lane_nan[j] |= v != v;
      lane[j] = pick(v, lane[j]);
    }
  float best = x[0];
  int nan = 0;
  for (; k < n; ++k) {
    nan |= x[k] != x[k];
    best = pick(x[k], best);
  }
  for (int j = 0; j < kLanes; ++j) {
    nan |= lane_nan[j];
    best = pick(lane[j], best);
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : best;
}

// argmax / argmin of a float32 row of unit stride in 16 lanes, each keeping its best value and
// the index where it first appeared by `better`'s rule (a NaN is kept, a tie keeps the earlier
// element), then across the lanes (the first NaN, else the best value at its smallest index)
// and the tail: the same index as the sequential scan. A row shorter than one block of lanes
// (or past 2^31 elements) takes the scan.
template <bool kMax>
[[gnu::always_inline]] inline int64_t arg_extreme_f32_row(const float* __restrict x, int64_t n) {
  constexpr int kLanes = 16;
  float best;
  int64_t idx = 0;
  int64_t k = 0;
  if (n >= kLanes && n < (int64_t{1} << 31)) {
    float lane[kLanes];
    int32_t lane_idx[kLanes];
    int32_t lane_nan[kLanes];
    for (int j = 0; j < kLanes; ++j) {
      lane[j] = x[j];
      lane_idx[j] = j;
      lane_nan[j] = x[j] != x[j];
    }
    for (k = kLanes; k + kLanes <= n; k += kLanes)
      for (int j = 0; j < kLanes; ++j) {
        const float v = x[k + j];
        const int32_t v_nan = v != v;
        const int32_t take = (lane_nan[j] == 0) & (v_nan | (kMax ? v > lane[j] : v < lane[j]));
        lane[j] = take ? v : lane[j];
        lane_idx[j] = take ? static_cast<int32_t>(k + j) : lane_idx[j];
        lane_nan[j] |= v_nan;
      }
    int b = 0;  // the winning lane
    for (int j = 1; j < kLanes; ++j) {
      const bool wins = lane_nan[b] ? (lane_nan[j] && lane_idx[j] < lane_idx[b])
                        : lane_nan[j] ? true
                        : (kMax ? lane[j] > lane[b] : lane[j] < lane[b]) ||
                              (lane[j] == lane[b] && lane_idx[j] < lane_idx[b]);
      if (wins) b = j;
    }
    best = lane[b];
    idx = lane_idx[b];
  } else {
    best = x[0];
    k = 1;
  }
  for (; k < n; ++k)
    if (better<kMax>(x[k], best)) {
      best = x[k];
      idx = k;
    }
  return idx;
}

// The rows of a float32 [outer, n] (unit stride), each row's extreme or its index: written once,
// instantiated for the baseline and the AVX2 + FMA targets (wide_simd.h; the selects of the lane
// loops take one blend instruction there instead of three).
template <bool kMax, bool kIndex>
[[gnu::always_inline]] inline void extreme_f32_rows(const float* x, void* out, int64_t outer,
                                                    int64_t n) {
  for (int64_t o = 0; o < outer; ++o) {
    if constexpr (kIndex) static_cast<int64_t*>(out)[o] = arg_extreme_f32_row<kMax>(x + o * n, n);
    else static_cast<float*>(out)[o] = extreme_f32_row<kMax>(x + o * n, n);
  }
}
template <bool kMax, bool kIndex>
void extreme_f32_rows_base(const float* x, void* out, int64_t outer, int64_t n) {
  extreme_f32_rows<kMax, kIndex>(x, out, outer, n);
}
template <bool kMax, bool kIndex>
GT_WIDE_SIMD_TARGET void extreme_f32_rows_wide(const float* x, void* out, int64_t outer,
                                               int64_t n) {
  extreme_f32_rows<kMax, kIndex>(x, out, outer, n);
}

template <class T, bool kMax, bool kIndex>
void extreme_impl(const T* x, void* out, const View& v) {
  using C = compute_t<T>;
  auto* y = static_cast<T*>(out);
  auto* yi = static_cast<int64_t*>(out);
  auto emit = [&](int64_t pos, C best, int64_t idx) {
    if constexpr (kIndex) yi[pos] = idx;
    else y[pos] = convert_value<T>(best);
  };
  if constexpr (std::is_same_v<T, float>) {
    if (v.inner == 1 && v.n > 0) {
      auto rows = wide_simd() ? extreme_f32_rows_wide<kMax, kIndex>
                              : extreme_f32_rows_base<kMax, kIndex>;
      split_rows(v.outer, v.n, [&](int64_t b, int64_t e) {
        void* o = kIndex ? static_cast<void*>(yi + b) : static_cast<void*>(y + b);
        rows(x + b * v.n, o, e - b, v.n);
      });
      return;
    }
  }
  if (v.inner == 1) {
    split_rows(v.outer, v.n, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* row = x + o * v.n;
        C best = convert_value<C>(row[0]);
        int64_t idx = 0;
        for (int64_t k = 1; k < v.n; ++k) {
          C c = convert_value<C>(row[k]);
          if (better<kMax>(c, best)) {
            best = c;
            idx = k;
          }
        }
        emit(o, best, idx);
      }
    });
    return;
  }
  std::vector<C> best(static_cast<size_t>(v.inner));
  std::vector<int64_t> idx(kIndex ? static_cast<size_t>(v.inner) : 0);
  for (int64_t o = 0; o < v.outer; ++o) {
    const T* base = x + o * v.n * v.inner;
    for (int64_t j = 0; j < v.inner; ++j) best[j] = convert_value<C>(base[j]);
    if constexpr (kIndex) std::fill(idx.begin(), idx.end(), 0);
    for (int64_t k = 1; k < v.n; ++k) {
      const T* row = base + k * v.inner;
      for (int64_t j = 0; j < v.inner; ++j) {
        C c = convert_value<C>(row[j]);
        if (better<kMax>(c, best[j])) {
          best[j] = c;
          if constexpr (kIndex) idx[j] = k;
        }
      }
    }
    for (int64_t j = 0; j < v.inner; ++j) emit(o * v.inner + j, best[j], kIndex ? idx[j] : 0);
  }
}

template <bool kMax, bool kIndex>
Status extreme_kernel(const KernelArgs& args) {
  const Tensor& x = in(args, 0);
  const View v = reduce_view(x.meta.shape, args.attrs);
  if (v.outer * v.inner == 0) return Status::ok();
  GT_RETURN_IF_ERROR(check_reduce(args, v));
  dispatch_dtype(x.meta.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    extreme_impl<T, kMax, kIndex>(static_cast<const T*>(in_ptr(args, 0)), out_ptr(args), v);
  });
  return Status::ok();
}

}  // namespace

void register_reduce(KernelTable& t) {
  auto set = [&](OpId op, CpuKernel k) { t[static_cast<size_t>(op)] = k; };
  set(OpId::k_sum, sum_kernel<false>);
  set(OpId::k_mean, sum_kernel<true>);
  set(OpId::k_max, extreme_kernel<true, false>);
  set(OpId::k_min, extreme_kernel<false, false>);
  set(OpId::k_argmax, extreme_kernel<true, true>);
  set(OpId::k_argmin, extreme_kernel<false, true>);
  set(OpId::k_cumsum, cumsum_kernel);
}

}  // namespace gt::worker::cpu
