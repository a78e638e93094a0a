// Reductions over x viewed as [outer, n, inner] (workerd/cpu/reduce.cpp, reduce_stats.cpp):
//   sum / mean        floating accumulate in float32 (as torch does, so a partial sum that
//                     overflows gives inf), integers and bool in int64 (wrapping); a floating
//                     mean is that sum divided by n in float32, rounded once to the output;
//                     mean of zero elements is NaN
//   max / min         NaN propagates; argmax / argmin: first index of the extreme (NaN counts as
//                     the extreme) -- ties are broken by index, so the parallel order is irrelevant
//   var               Welford/Chan in double, / max(0, n - correction); empty -> NaN
//   logsumexp         online max-shifted sum in double; NaN -> NaN, infinite max -> itself,
//                     empty -> -inf
//   cumsum            running sums along n in double (integers: int64), each rounded once to
//                     the output
// Results match the CPU up to the summation order (floating sums; the CPU follows torch's CPU
// order) -- exactly for the others (cumsum sums in the CPU's order).
//
// Kernels: inner == 1 reduces each short row (n <= 2048) with a warp and each long row with a
// block (split over several blocks plus a finishing pass when there are few long rows, e.g. a
// reduction over everything); inner > 1 gives a block a tile of adjacent columns (coalesced rows)
// and splits n over blocks when the tiles alone cannot fill the GPU.
#include <cmath>

#include "workerd/cuda/cuda_common.cuh"

namespace gt::worker::cuda {
namespace {

constexpr int kAccBytes = 32;  // every accumulator fits (scratch sizing)

// Floating sums add in the compute type, as the CPU's (math_t): float for the 16-bit types and
// float32, double for float64 (a float accumulator lost float64's precision and range).
template <class T>
using sum_acc_t = std::conditional_t<is_float_like_v<T>, compute_t<T>, int64_t>;
template <class T>
using scan_acc_t = std::conditional_t<is_float_like_v<T>, double, int64_t>;

template <class A>
__device__ __forceinline__ A acc_add(A s, A v) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<unsigned long long>(s) + static_cast<unsigned long long>(v));
  else return s + v;
}

template <class T, bool kMean>
struct SumR {
  using A = sum_acc_t<T>;
  using Out = std::conditional_t<is_float_like_v<T>, T, std::conditional_t<kMean, float, int64_t>>;
  struct Acc { A s; };
  __device__ static Acc init() { return {A(0)}; }
  __device__ static void step(Acc& a, T x, int64_t) { a.s = acc_add(a.s, cvt<A>(x)); }
  __device__ static void combine(Acc& a, const Acc& b) { a.s = acc_add(a.s, b.s); }
  __device__ static Out finish(const Acc& a, int64_t n, double) {
    if constexpr (kMean && is_float_like_v<T>)  // the CPU's: the sum / n in its type, rounded once
      return cvt<Out>(a.s / static_cast<A>(n));
    else if constexpr (kMean) return cvt<Out>(static_cast<double>(a.s) / static_cast<double>(n));
    else return cvt<Out>(a.s);
  }
};

template <class T, bool kMax, bool kIndex>
struct ExtremeR {
  using C = compute_t<T>;
  using Out = std::conditional_t<kIndex, int64_t, T>;
  struct Acc { C v; int64_t i; bool has; };
  __device__ static bool better(C v, C best) {
    if (is_nan(best)) return false;
    if (is_nan(v)) return true;
    return kMax ? v > best : v < best;
  }
  __device__ static bool same(C v, C best) {
    return v == best || (is_nan(v) && is_nan(best));
  }
  __device__ static Acc init() { return {C(0), 0, false}; }
  __device__ static void take(Acc& a, C v, int64_t i) {
    if (!a.has || better(v, a.v) || (same(v, a.v) && i < a.i)) a = Acc{v, i, true};
  }
  __device__ static void step(Acc& a, T x, int64_t k) { take(a, cvt<C>(x), k); }
  __device__ static void combine(Acc& a, const Acc& b) {
    if (b.has) take(a, b.v, b.i);
  }
  __device__ static Out finish(const Acc& a, int64_t, double) {
    if constexpr (kIndex) return a.i;
    else return cvt<T>(a.v);
  }
};

template <class T>
using float_out_t = std::conditional_t<is_float_like_v<T>, T, float>;

template <class T>
struct VarR {
  using Out = float_out_t<T>;
  struct Acc { double n, mean, m2; };
  __device__ static Acc init() { return {0, 0, 0}; }
  __device__ static void step(Acc& a, T x, int64_t) {
    const double v = cvt<double>(x);
    a.n += 1;
    const double d = v - a.mean;
    a.mean += d / a.n;
    a.m2 += d * (v - a.mean);
  }
  __device__ static void combine(Acc& a, const Acc& b) {
    if (b.n == 0) return;
    if (a.n == 0) { a = b; return; }
    const double n = a.n + b.n, d = b.mean - a.mean;
    a.mean += d * (b.n / n);
    a.m2 += b.m2 + d * d * (a.n * b.n / n);
    a.n = n;
  }
  __device__ static Out finish(const Acc& a, int64_t n, double correction) {
    if (n == 0) return cvt<Out>(static_cast<double>(NAN));
    const double denom = fmax(0.0, static_cast<double>(n) - correction);
    return cvt<Out>(a.m2 / denom);
  }
};

template <class T>
struct LseR {
  using Out = float_out_t<T>;
  struct Acc { double m, s; bool nan; };
  __device__ static Acc init() { return {-INFINITY, 0, false}; }
  __device__ static void add(Acc& a, double m, double s) {
    if (m == -INFINITY) return;  // exp(-inf) adds nothing (and -inf - -inf would be NaN)
    if (m > a.m) {
      a.s = a.s * exp(a.m - m) + s;
      a.m = m;
    } else {
      a.s += s * exp(m - a.m);
    }
  }
  __device__ static void step(Acc& a, T x, int64_t) {
    const double v = cvt<double>(x);
    if (v != v) a.nan = true;
    else add(a, v, 1.0);
  }
  __device__ static void combine(Acc& a, const Acc& b) {
    a.nan = a.nan || b.nan;
    add(a, b.m, b.s);
  }
  __device__ static Out finish(const Acc& a, int64_t, double) {
    if (a.nan) return cvt<Out>(static_cast<double>(NAN));
    if (isinf(a.m)) return cvt<Out>(a.m);
    return cvt<Out>(a.m + log(a.s));
  }
};

// Combines the block's accumulators (in `sh`, one per thread) into sh[0].
template <class R>
__device__ void block_combine(typename R::Acc* sh) {
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w >>= 1) {
    if (static_cast<int>(threadIdx.x) < w) R::combine(sh[threadIdx.x], sh[threadIdx.x + w]);
    __syncthreads();
  }
}

// grid (splits, rows): block b of row o covers k = b*kThreads + t (+ splits*kThreads ...).
template <class T, class R>
__global__ void row_kernel(const T* x, typename R::Out* out, typename R::Acc* partial,
                           int64_t outer, int64_t n, double correction) {
  using Acc = typename R::Acc;
  __shared__ Acc sh[kThreads];
  const int64_t splits = gridDim.x;
  for (int64_t o = blockIdx.y; o < outer; o += gridDim.y) {
    const T* row = x + o * n;
    Acc a = R::init();
    for (int64_t k = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; k < n;
         k += splits * kThreads)
      R::step(a, row[k], k);
    sh[threadIdx.x] = a;
    block_combine<R>(sh);
    if (threadIdx.x == 0) {
      if (splits == 1) out[o] = R::finish(sh[0], n, correction);
      else partial[o * splits + blockIdx.x] = sh[0];
    }
    __syncthreads();
  }
}

template <class T, class R>
__global__ void finish_kernel(typename R::Out* out, const typename R::Acc* partial,
                              int64_t outer, int64_t splits, int64_t n, double correction) {
  using Acc = typename R::Acc;
  __shared__ Acc sh[kThreads];
  for (int64_t o = blockIdx.x; o < outer; o += gridDim.x) {
    Acc a = R::init();
    for (int64_t b = threadIdx.x; b < splits; b += kThreads) R::combine(a, partial[o * splits + b]);
    sh[threadIdx.x] = a;
    block_combine<R>(sh);
    if (threadIdx.x == 0) out[o] = R::finish(sh[0], n, correction);
    __syncthreads();
  }
}

// Many short rows (inner == 1, n <= kWarpRowMax): a warp per row, so a 64-element row does not
// leave 192 of a block's threads idle and pay eight block-wide barriers. Lanes combine through
// shared memory (an Acc may be a struct, which warp shuffles do not move) under __syncwarp.
constexpr int64_t kWarpRowMax = 2048;
constexpr int kWarpsPerBlock = kThreads / 32;

template <class T, class R>
__global__ void warp_row_kernel(const T* x, typename R::Out* out, int64_t outer, int64_t n,
                                double correction) {
  using Acc = typename R::Acc;
  __shared__ Acc sh[kWarpsPerBlock][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp; o < outer;
       o += static_cast<int64_t>(gridDim.x) * kWarpsPerBlock) {
    const T* row = x + o * n;
    Acc a = R::init();
    for (int64_t k = lane; k < n; k += 32) R::step(a, row[k], k);
    sh[warp][lane] = a;
    __syncwarp();
    for (int w = 16; w > 0; w >>= 1) {
      if (lane < w) R::combine(sh[warp][lane], sh[warp][lane + w]);
      __syncwarp();
    }
    if (lane == 0) out[o] = R::finish(sh[warp][0], n, correction);
    __syncwarp();
  }
}

// inner > 1: a block owns a tile of tx-wide adjacent columns of one outer slice and ty rows of n
// at a time, so each row's read is one coalesced segment (a thread per column walking its column
// alone, the obvious kernel, strides through memory and leaves most of the GPU idle when outer *
// inner is small, e.g. a [32768, 1024] sum over dim 0 gives 1024 threads). gridDim.y splits n
// further when the tiles alone cannot fill the GPU; the splits' partials are then combined by
// finish_each_kernel.
struct ColPlan {
  int bx = 1, by = kThreads;
  int64_t tiles_per_outer = 1, tiles = 1, splits = 1;
};

ColPlan col_plan(int64_t outer, int64_t n, int64_t inner) {
  ColPlan p;
  while (p.bx < 32 && p.bx < inner) p.bx *= 2;
  p.by = kThreads / p.bx;
  p.tiles_per_outer = (inner + p.bx - 1) / p.bx;
  p.tiles = outer * p.tiles_per_outer;
  constexpr int64_t kTargetBlocks = 1024;  // a few waves on the largest GPUs
  if (p.tiles < kTargetBlocks) {
    const int64_t want = (kTargetBlocks + p.tiles - 1) / p.tiles;
    const int64_t useful = (n + p.by * 16 - 1) / (p.by * 16);  // >= 16 rows per thread
    p.splits = want < useful ? want : useful;
    if (p.splits < 1) p.splits = 1;
  }
  return p;
}

template <class T, class R>
__global__ void col_tile_kernel(const T* x, typename R::Out* out, typename R::Acc* partial,
                                int64_t outer, int64_t n, int64_t inner, int64_t tiles_per_outer,
                                double correction) {
  using Acc = typename R::Acc;
  __shared__ Acc sh[kThreads];
  const int bx = blockDim.x, by = blockDim.y, tx = threadIdx.x, ty = threadIdx.y;
  const int t = ty * bx + tx;
  const int64_t splits = gridDim.y, split = blockIdx.y;
  const int64_t tiles = outer * tiles_per_outer;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t o = tile / tiles_per_outer;
    const int64_t j = (tile - o * tiles_per_outer) * bx + tx;
    Acc a = R::init();
    if (j < inner) {
      const T* col = x + o * n * inner + j;
      for (int64_t k = split * by + ty; k < n; k += splits * by) R::step(a, col[k * inner], k);
    }
    sh[t] = a;
    __syncthreads();
    for (int w = by / 2; w > 0; w >>= 1) {
      if (ty < w) R::combine(sh[t], sh[t + w * bx]);
      __syncthreads();
    }
    if (ty == 0 && j < inner) {
      const int64_t e = o * inner + j;
      if (splits == 1) out[e] = R::finish(sh[tx], n, correction);
      else partial[e * splits + split] = sh[tx];
    }
    __syncthreads();
  }
}

// One thread per output combines its splits' partials (in split order).
template <class T, class R>
__global__ void finish_each_kernel(typename R::Out* out, const typename R::Acc* partial,
                                   int64_t outputs, int64_t splits, int64_t n, double correction) {
  for (int64_t e = global_tid(); e < outputs; e += grid_stride()) {
    auto a = R::init();
    for (int64_t b = 0; b < splits; ++b) R::combine(a, partial[e * splits + b]);
    out[e] = R::finish(a, n, correction);
  }
}

// cumsum: one thread per (outer, inner) line scanning its n elements in order (consecutive
// threads take consecutive j, so inner > 1 reads coalesce; inner == 1 is correct but strided --
// a block-wide scan would be the next step if a long last-dim cumsum ever matters).
template <class T>
__global__ void cumsum_kernel(const T* x, std::conditional_t<is_float_like_v<T>, T, int64_t>* y,
                              int64_t outer, int64_t n, int64_t inner) {
  using A = scan_acc_t<T>;
  using Out = std::conditional_t<is_float_like_v<T>, T, int64_t>;
  const int64_t lines = outer * inner;
  for (int64_t e = global_tid(); e < lines; e += grid_stride()) {
    const int64_t o = e / inner, j = e - o * inner;
    const int64_t base = o * n * inner + j;
    A s = A(0);
    for (int64_t k = 0; k < n; ++k) {
      s = acc_add(s, cvt<A>(x[base + k * inner]));
      y[base + k * inner] = cvt<Out>(s);
    }
  }
}

// How many blocks share one row (inner == 1): enough to fill the GPU when rows are few and long.
int64_t row_splits(int64_t outer, int64_t n, int64_t inner) {
  if (inner != 1 || n < (int64_t{1} << 16) || outer >= 512) return 1;
  int64_t s = (n + kThreads * 16 - 1) / (kThreads * 16);
  const int64_t cap = 1024 / outer;
  if (s > cap) s = cap;
  return s < 1 ? 1 : s;
}

template <class T, class R>
cudaError_t run(const void* xv, void* outv, int64_t outer, int64_t n, int64_t inner,
                double correction, void* scratch, cudaStream_t s) {
  static_assert(sizeof(typename R::Acc) <= kAccBytes);
  const T* x = static_cast<const T*>(xv);
  auto* out = static_cast<typename R::Out*>(outv);
  auto* partial = static_cast<typename R::Acc*>(scratch);
  const auto capped = [](int64_t v) { return static_cast<unsigned>(v < 65535 ? v : 65535); };
  if (inner == 1 && n <= kWarpRowMax) {
    warp_row_kernel<T, R><<<capped((outer + kWarpsPerBlock - 1) / kWarpsPerBlock), kThreads, 0,
                            s>>>(x, out, outer, n, correction);
  } else if (inner == 1) {
    const int64_t splits = row_splits(outer, n, inner);
    const dim3 grid(static_cast<unsigned>(splits), capped(outer));
    row_kernel<T, R><<<grid, kThreads, 0, s>>>(x, out, partial, outer, n, correction);
    if (splits > 1)
      finish_kernel<T, R><<<capped(outer), kThreads, 0, s>>>(out, partial, outer, splits, n,
                                                            correction);
  } else {
    const ColPlan p = col_plan(outer, n, inner);
    const dim3 block(static_cast<unsigned>(p.bx), static_cast<unsigned>(p.by));
    const dim3 grid(capped(p.tiles), static_cast<unsigned>(p.splits));
    col_tile_kernel<T, R><<<grid, block, 0, s>>>(x, out, partial, outer, n, inner,
                                                 p.tiles_per_outer, correction);
    if (p.splits > 1)
      finish_each_kernel<T, R><<<grid_for(outer * inner), kThreads, 0, s>>>(
          out, partial, outer * inner, p.splits, n, correction);
  }
  return cudaGetLastError();
}

template <class T>
cudaError_t run_op(OpId op, const void* x, void* out, int64_t outer, int64_t n, int64_t inner,
                   double correction, void* scratch, cudaStream_t s) {
  switch (op) {
    case OpId::k_sum:
      return run<T, SumR<T, false>>(x, out, outer, n, inner, correction, scratch, s);
    case OpId::k_mean:
      return run<T, SumR<T, true>>(x, out, outer, n, inner, correction, scratch, s);
    case OpId::k_max:
      return run<T, ExtremeR<T, true, false>>(x, out, outer, n, inner, correction, scratch, s);
    case OpId::k_min:
      return run<T, ExtremeR<T, false, false>>(x, out, outer, n, inner, correction, scratch, s);
    case OpId::k_argmax:
      return run<T, ExtremeR<T, true, true>>(x, out, outer, n, inner, correction, scratch, s);
    case OpId::k_argmin:
      return run<T, ExtremeR<T, false, true>>(x, out, outer, n, inner, correction, scratch, s);
    case OpId::k_var: return run<T, VarR<T>>(x, out, outer, n, inner, correction, scratch, s);
    case OpId::k_logsumexp: return run<T, LseR<T>>(x, out, outer, n, inner, correction, scratch, s);
    default: break;
  }
  return cudaErrorInvalidValue;  // not a reduction
}

}  // namespace

cudaError_t launch_cumsum(int dtype, const void* x, void* out, int64_t outer, int64_t n,
                          int64_t inner, cudaStream_t s) {
  if (outer * n * inner <= 0) return cudaSuccess;
  return dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    using Out = std::conditional_t<is_float_like_v<T>, T, int64_t>;
    cumsum_kernel<T><<<grid_for(outer * inner), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<Out*>(out), outer, n, inner);
    return cudaGetLastError();
  });
}

size_t reduce_scratch_bytes(OpId, int, int64_t outer, int64_t n, int64_t inner) {
  if (inner == 1) {
    if (n <= kWarpRowMax) return 0;
    const int64_t splits = row_splits(outer, n, inner);
    return splits > 1 ? static_cast<size_t>(outer * splits) * kAccBytes : 0;
  }
  const ColPlan p = col_plan(outer, n, inner);
  return p.splits > 1 ? static_cast<size_t>(outer * inner * p.splits) * kAccBytes : 0;
}

cudaError_t launch_reduce(OpId op, int dtype, const void* x, void* out, int64_t outer, int64_t n,
                          int64_t inner, double correction, void* scratch, cudaStream_t s) {
  if (outer * inner <= 0) return cudaSuccess;
  return dispatch_dtype(dtype, [&](auto tag) {
    return run_op<decltype(tag)>(op, x, out, outer, n, inner, correction, scratch, s);
  });
}

}  // namespace gt::worker::cuda
