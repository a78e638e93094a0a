// Binary elementwise kernels: add sub mul div pow maximum minimum and the comparisons, on
// operands already converted to one operand dtype P (the host does that), computed in
// compute_t<P> exactly as workerd/cpu/binary.cpp: integer add/sub/mul/pow wrap, integer pow with
// a negative exponent follows the CPU rule, maximum/minimum propagate NaN, bool arithmetic runs
// in int32 and is converted back with != 0.
//
// Loops: contiguous same-shape operands use 4-element vector loads/stores when every pointer is
// aligned (the allocator gives 256-byte aligned blocks); a scalar operand and the general
// broadcasting case (NdDesc) are plain grid-stride loops.
#include "workerd/cuda/cuda_common.cuh"

namespace gt::worker::cuda {
namespace {

template <class C>
using unsigned_of = std::make_unsigned_t<C>;

template <BinOp kOp, class C>
__device__ __forceinline__ auto apply(C a, C b) {
  if constexpr (kOp == BinOp::kAdd || kOp == BinOp::kSub || kOp == BinOp::kMul) {
    if constexpr (std::is_integral_v<C>) {
      using U = unsigned_of<C>;
      const U x = static_cast<U>(a), y = static_cast<U>(b);
      if constexpr (kOp == BinOp::kAdd) return static_cast<C>(x + y);
      else if constexpr (kOp == BinOp::kSub) return static_cast<C>(x - y);
      else return static_cast<C>(x * y);
    } else {
      if constexpr (kOp == BinOp::kAdd) return a + b;
      else if constexpr (kOp == BinOp::kSub) return a - b;
      else return a * b;
    }
  } else if constexpr (kOp == BinOp::kDiv) {
    if constexpr (std::is_integral_v<C>)
      return float_to_int<C>(static_cast<double>(a) / static_cast<double>(b));
    else return a / b;
  } else if constexpr (kOp == BinOp::kPow) {
    if constexpr (std::is_integral_v<C>) {
      C e = b;
      if (e < 0) return a == 1 ? C(1) : a == -1 ? ((e & 1) ? C(-1) : C(1)) : C(0);
      using U = unsigned_of<C>;
      U r = 1, x = static_cast<U>(a);
      for (; e != 0; e >>= 1) {
        if (e & 1) r = static_cast<U>(r * x);
        x = static_cast<U>(x * x);
      }
      return static_cast<C>(r);
    } else {
      return powf(a, b);
    }
  } else if constexpr (kOp == BinOp::kMax) {
    return (a > b || is_nan(a)) ? a : b;
  } else if constexpr (kOp == BinOp::kMin) {
    return (a < b || is_nan(a)) ? a : b;
  } else if constexpr (kOp == BinOp::kEq) {
    return a == b;
  } else if constexpr (kOp == BinOp::kNe) {
    return a != b;
  } else if constexpr (kOp == BinOp::kLt) {
    return a < b;
  } else if constexpr (kOp == BinOp::kLe) {
    return a <= b;
  } else if constexpr (kOp == BinOp::kGt) {
    return a > b;
  } else {
    return a >= b;
  }
}

constexpr bool is_compare(BinOp op) { return op >= BinOp::kEq; }

template <BinOp kOp, class T>
using out_of = std::conditional_t<is_compare(kOp), bool, T>;

template <BinOp kOp, class T>
__device__ __forceinline__ out_of<kOp, T> elem(T a, T b) {
  using C = compute_t<T>;
  return cvt<out_of<kOp, T>>(apply<kOp, C>(cvt<C>(a), cvt<C>(b)));
}

template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

template <BinOp kOp, class T>
__global__ void same_vec_kernel(const T* a, const T* b, out_of<kOp, T>* o, int64_t n) {
  using O = out_of<kOp, T>;
  constexpr int V = 4;
  const int64_t nv = n / V;
  const auto* va = reinterpret_cast<const Vec<T, V>*>(a);
  const auto* vb = reinterpret_cast<const Vec<T, V>*>(b);
  auto* vo = reinterpret_cast<Vec<O, V>*>(o);
  for (int64_t i = global_tid(); i < nv; i += grid_stride()) {
    const Vec<T, V> x = va[i], y = vb[i];
    Vec<O, V> r;
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = elem<kOp, T>(x.v[j], y.v[j]);
    vo[i] = r;
  }
  const int64_t t = nv * V + global_tid();
  if (t < n) o[t] = elem<kOp, T>(a[t], b[t]);
}

template <BinOp kOp, class T>
__global__ void same_kernel(const T* a, const T* b, out_of<kOp, T>* o, int64_t n) {
  for (int64_t i = global_tid(); i < n; i += grid_stride()) o[i] = elem<kOp, T>(a[i], b[i]);
}

template <BinOp kOp, class T, bool kLeft>
__global__ void scalar_kernel(const T* a, double scalar, bool has_exact, int64_t exact,
                              out_of<kOp, T>* o, int64_t n) {
  using C = compute_t<T>;
  C s = cvt<C>(scalar);
  if constexpr (std::is_same_v<C, int64_t>) {
    if (has_exact) s = exact;
  }
  for (int64_t i = global_tid(); i < n; i += grid_stride()) {
    const C x = cvt<C>(a[i]);
    o[i] = cvt<out_of<kOp, T>>(kLeft ? apply<kOp, C>(s, x) : apply<kOp, C>(x, s));
  }
}

template <BinOp kOp, class T>
__global__ void nd_kernel(const T* a, const T* b, out_of<kOp, T>* o, int64_t n, NdDesc d) {
  for (int64_t i = global_tid(); i < n; i += grid_stride()) {
    int64_t off[2];
    nd_offsets<2>(d, i, off);
    o[i] = elem<kOp, T>(a[off[0]], b[off[1]]);
  }
}

bool aligned(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

template <BinOp kOp, class T>
cudaError_t run(const BinaryArgs& x, cudaStream_t s) {
  using O = out_of<kOp, T>;
  const T* a = static_cast<const T*>(x.a);
  const T* b = static_cast<const T*>(x.b);
  O* o = static_cast<O*>(x.out);
  const int64_t n = x.n;
  switch (x.mode) {
    case 0:
      if (aligned(a, sizeof(T) * 4) && aligned(b, sizeof(T) * 4) && aligned(o, sizeof(O) * 4))
        same_vec_kernel<kOp, T><<<grid_for(n, 4), kThreads, 0, s>>>(a, b, o, n);
      else same_kernel<kOp, T><<<grid_for(n), kThreads, 0, s>>>(a, b, o, n);
      break;
    case 1:
      scalar_kernel<kOp, T, false>
          <<<grid_for(n), kThreads, 0, s>>>(a, x.scalar, x.has_exact, x.exact, o, n);
      break;
    case 2:
      scalar_kernel<kOp, T, true>
          <<<grid_for(n), kThreads, 0, s>>>(a, x.scalar, x.has_exact, x.exact, o, n);
      break;
    default:
      nd_kernel<kOp, T><<<grid_for(n), kThreads, 0, s>>>(a, b, o, n, for_count(x.nd, n));
      break;
  }
  return cudaGetLastError();
}

template <BinOp kOp>
cudaError_t run_op(const BinaryArgs& x, cudaStream_t s) {
  return dispatch_dtype(x.p, [&](auto tag) { return run<kOp, decltype(tag)>(x, s); });
}

}  // namespace

cudaError_t launch_binary(const BinaryArgs& x, cudaStream_t s) {
  if (x.n <= 0) return cudaSuccess;
  switch (x.op) {
    case BinOp::kAdd: return run_op<BinOp::kAdd>(x, s);
    case BinOp::kSub: return run_op<BinOp::kSub>(x, s);
    case BinOp::kMul: return run_op<BinOp::kMul>(x, s);
    case BinOp::kDiv: return run_op<BinOp::kDiv>(x, s);
    case BinOp::kPow: return run_op<BinOp::kPow>(x, s);
    case BinOp::kMax: return run_op<BinOp::kMax>(x, s);
    case BinOp::kMin: return run_op<BinOp::kMin>(x, s);
    case BinOp::kEq: return run_op<BinOp::kEq>(x, s);
    case BinOp::kNe: return run_op<BinOp::kNe>(x, s);
    case BinOp::kLt: return run_op<BinOp::kLt>(x, s);
    case BinOp::kLe: return run_op<BinOp::kLe>(x, s);
    case BinOp::kGt: return run_op<BinOp::kGt>(x, s);
    case BinOp::kGe: return run_op<BinOp::kGe>(x, s);
  }
  return cudaErrorInvalidValue;
}

}  // namespace gt::worker::cuda
