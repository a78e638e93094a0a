// Reductions sum mean max min argmax argmin over all elements or one dim (keepdim only changes
// the meta), and the scan cumsum along one dim. The input is viewed as [outer, n, inner] with n
// the reduced (scanned) extent; rows with inner == 1 reduce contiguously, otherwise a row of
// `inner` accumulators sweeps the n slices (unit-stride, cache friendly).
//
// Accumulation: floating sums (means, cumsums) in double, integer and bool sums in int64
// (wrapping), bool sums count trues; a cumsum rounds each running sum once to its output. mean
// of zero elements is NaN. max/min propagate NaN. argmax/argmin give the first index of the
// extreme value, a NaN counting as the extreme (like torch); over all elements it is the flat
// index.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "workerd/cpu/kernels.h"
#include "workerd/kernels/reduce_plan.h"

namespace gt::worker::cpu {
namespace {

using View = ReduceView;  // reduce_view() is in kernels.h (shared with reduce_stats.cpp)

// ---- sum / mean ----

template <class T>
using acc_t = std::conditional_t<is_float_like_v<T>, double, int64_t>;

template <class A>
inline A acc_add(A s, A v) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<uint64_t>(s) + static_cast<uint64_t>(v));
  else return s + v;
}

template <class T>
acc_t<T> sum_contiguous(const T* x, int64_t n) {
  using A = acc_t<T>;
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

template <class T, class O, bool kMean>
void sum_impl(const T* x, O* y, const View& v) {
  using A = acc_t<T>;
  auto finish = [&](A s) -> O {
    if constexpr (kMean) return convert_value<O>(static_cast<double>(s) / static_cast<double>(v.n));
    else return convert_value<O>(s);
  };
  if (v.inner == 1) {
    for (int64_t o = 0; o < v.outer; ++o) y[o] = finish(sum_contiguous(x + o * v.n, v.n));
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
    // sum: floating keeps its dtype, others give int64; mean: others give float32.
    using O = std::conditional_t<is_float_like_v<T>, T, std::conditional_t<kMean, float, int64_t>>;
    sum_impl<T, O, kMean>(static_cast<const T*>(in_ptr(args, 0)),
                          static_cast<O*>(out_ptr(args)), v);
    return Status::ok();
  });
}

// ---- cumsum ----

// out[o, k, j] = sum of x[o, 0..k, j], the running sum kept in sum's accumulator. Memory-bound
// like the sums, so single-threaded (parallel.h).
template <class T, class O>
void cumsum_impl(const T* x, O* y, const View& v) {
  using A = acc_t<T>;
  if (v.inner == 1) {
    for (int64_t o = 0; o < v.outer; ++o) {
      const T* row = x + o * v.n;
      O* out = y + o * v.n;
      A s = 0;
      for (int64_t k = 0; k < v.n; ++k) {
        s = acc_add(s, convert_value<A>(row[k]));
        out[k] = convert_value<O>(s);
      }
    }
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

template <class T, bool kMax, bool kIndex>
void extreme_impl(const T* x, void* out, const View& v) {
  using C = compute_t<T>;
  auto* y = static_cast<T*>(out);
  auto* yi = static_cast<int64_t*>(out);
  auto emit = [&](int64_t pos, C best, int64_t idx) {
    if constexpr (kIndex) yi[pos] = idx;
    else y[pos] = convert_value<T>(best);
  };
  if (v.inner == 1) {
    for (int64_t o = 0; o < v.outer; ++o) {
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
