// Unary elementwise ops: every op of ops.def whose rule is kUnarySame or kUnaryFloat, with the
// math of workerd/kernels/elementwise_math.h (shared with the CUDA kernels).
//   kUnarySame   same dtype in and out, computed in compute_t<T>
//   kUnaryFloat  computed in float32 (float64 in float64); the output keeps a floating input's
//                dtype, else float32
//                (the shape rule says so); split over threads when large (transcendental)
#include <type_traits>

#include "workerd/cpu/kernels.h"
#include "workerd/cpu/wide_simd.h"
#include "workerd/kernels/elementwise_math.h"
#include "workerd/kernels/elementwise_plan.h"

namespace gt::worker::cpu {
namespace {

template <OpId kOp>
Status unary_same(const KernelArgs& args) {
  const int64_t n = count(args.out.meta.shape);
  dispatch_dtype(args.out.meta.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* a = static_cast<const T*>(in_ptr(args, 0));
    T* o = static_cast<T*>(out_ptr(args));
    split_flat(n, [&](int64_t b, int64_t e) {
      const T* __restrict pa = a + b;
      T* __restrict po = o + b;
      for (int64_t i = 0; i < e - b; ++i)
        po[i] = convert_value<T>(UnaryFn<kOp>::f(convert_value<C>(pa[i])));
    });
  });
  return Status::ok();
}

constexpr int64_t kTranscendentalGrain = 1 << 16;  // elements per thread, at least

template <OpId kOp, class T, class O>
[[gnu::always_inline]] inline void float_rows(const T* __restrict a, O* __restrict o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = convert_value<O>(UnaryFn<kOp>::f(convert_value<math_t<T>>(a[i])));
}
template <OpId kOp, class T, class O>
void float_rows_base(const T* __restrict a, O* __restrict o, int64_t n) {
  float_rows<kOp, T, O>(a, o, n);
}
template <OpId kOp, class T, class O>
GT_WIDE_SIMD_TARGET void float_rows_wide(const T* __restrict a, O* __restrict o, int64_t n) {
  float_rows<kOp, T, O>(a, o, n);
}

template <OpId kOp>
Status unary_float(const KernelArgs& args) {
  const int64_t n = count(args.out.meta.shape);
  return dispatch_dtype(in(args, 0).meta.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using O = std::conditional_t<is_float_like_v<T>, T, float>;
    const T* a = static_cast<const T*>(in_ptr(args, 0));
    O* o = static_cast<O*>(out_ptr(args));
    // (the fused chains' unary steps pick the same loop: wide_simd.h)
    auto rows = wide_simd() ? float_rows_wide<kOp, T, O> : float_rows_base<kOp, T, O>;
    parallel_for(n, kTranscendentalGrain,
                 [&](int64_t begin, int64_t end) { rows(a + begin, o + begin, end - begin); });
    return Status::ok();
  });
}

template <OpId kOp>
Status unary_kernel(const KernelArgs& args) {
  GT_RETURN_IF_ERROR(check_unary_out(args));
  if constexpr (unary_keeps_dtype(kOp)) return unary_same<kOp>(args);
  else return unary_float<kOp>(args);
}

}  // namespace

void register_unary(KernelTable& t) {
  for_each_op([&](auto c) {
    constexpr OpId op = decltype(c)::value;
    if constexpr (is_unary_elementwise(op)) t[static_cast<size_t>(op)] = unary_kernel<op>;
  });
}

}  // namespace gt::worker::cpu
