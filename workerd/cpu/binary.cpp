// Binary elementwise ops with numpy broadcasting: add sub mul div pow maximum minimum and the
// comparisons eq ne lt le gt ge.
//
// Both operands are first brought to one operand dtype P (arithmetic: the output dtype, so int /
// int division runs in float; comparisons: promote(a, b) or promote_with_scalar) and computed in
// compute_t<P> (float for float16/bfloat16, int32 for bool). Loops, fastest first: same-shape
// operands and a scalar operand (attribute or one-element tensor) are tight loops the compiler
// vectorizes; everything else goes through the coalesced N-d iterator, whose inner rows again
// use contiguous or scalar loops when the strides allow (e.g. a bias added to every row).
//
// Conventions: integer add/sub/mul/pow wrap around (two's complement); integer pow with a
// negative exponent is 0 unless the base is 1 (-> 1) or -1 (-> +-1 by parity); maximum/minimum
// propagate NaN like torch.maximum; bool add/mul/maximum/minimum are or/and/or/and.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "workerd/cpu/kernels.h"

namespace gt::worker::cpu {
namespace {

template <class C>
using unsigned_of = std::make_unsigned_t<C>;

struct AddOp {
  static constexpr bool kCompare = false;
  template <class C> static C f(C a, C b) {
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(static_cast<unsigned_of<C>>(a) + static_cast<unsigned_of<C>>(b));
    else return a + b;
  }
};
struct SubOp {
  static constexpr bool kCompare = false;
  template <class C> static C f(C a, C b) {
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(static_cast<unsigned_of<C>>(a) - static_cast<unsigned_of<C>>(b));
    else return a - b;
  }
};
struct MulOp {
  static constexpr bool kCompare = false;
  template <class C> static C f(C a, C b) {
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(static_cast<unsigned_of<C>>(a) * static_cast<unsigned_of<C>>(b));
    else return a * b;
  }
};
struct DivOp {  // only ever run with a floating operand dtype (the shape rule makes out float)
  static constexpr bool kCompare = false;
  template <class C> static C f(C a, C b) {
    if constexpr (std::is_integral_v<C>)
      return float_to_int<C>(static_cast<double>(a) / static_cast<double>(b));
    else return a / b;
  }
};
struct PowOp {
  static constexpr bool kCompare = false;
  template <class C> static C f(C base, C e) {
    if constexpr (std::is_integral_v<C>) {
      if (e < 0) return base == 1 ? C(1) : base == -1 ? ((e & 1) ? C(-1) : C(1)) : C(0);
      using U = unsigned_of<C>;
      U r = 1, b = static_cast<U>(base);
      for (; e != 0; e >>= 1) {
        if (e & 1) r = static_cast<U>(r * b);
        b = static_cast<U>(b * b);
      }
      return static_cast<C>(r);
    } else {
      return std::pow(base, e);
    }
  }
};
struct MaxOp {
  static constexpr bool kCompare = false;
  template <class C> static C f(C a, C b) { return (a > b || is_nan(a)) ? a : b; }
};
struct MinOp {
  static constexpr bool kCompare = false;
  template <class C> static C f(C a, C b) { return (a < b || is_nan(a)) ? a : b; }
};
#define GT_CMP_OP(Name, expr)                                   \
  struct Name {                                                 \
    static constexpr bool kCompare = true;                      \
    template <class C> static bool f(C a, C b) { return expr; } \
  };
GT_CMP_OP(EqOp, a == b)
GT_CMP_OP(NeOp, a != b)
GT_CMP_OP(LtOp, a < b)
GT_CMP_OP(LeOp, a <= b)
GT_CMP_OP(GtOp, a > b)
GT_CMP_OP(GeOp, a >= b)
#undef GT_CMP_OP

template <class Op, class T, class O>
inline O apply(compute_t<T> a, compute_t<T> b) {
  return convert_value<O>(Op::template f<compute_t<T>>(a, b));
}

template <class Op, class T, class O>
void loop_same(const T* __restrict a, const T* __restrict b, O* __restrict o, int64_t n) {
  using C = compute_t<T>;
  for (int64_t i = 0; i < n; ++i)
    o[i] = apply<Op, T, O>(convert_value<C>(a[i]), convert_value<C>(b[i]));
}

template <class Op, class T, class O>
void loop_scalar_right(const T* __restrict a, compute_t<T> s, O* __restrict o, int64_t n) {
  using C = compute_t<T>;
  for (int64_t i = 0; i < n; ++i) o[i] = apply<Op, T, O>(convert_value<C>(a[i]), s);
}

template <class Op, class T, class O>
void loop_scalar_left(compute_t<T> s, const T* __restrict b, O* __restrict o, int64_t n) {
  using C = compute_t<T>;
  for (int64_t i = 0; i < n; ++i) o[i] = apply<Op, T, O>(s, convert_value<C>(b[i]));
}

template <class Op, class T, class O>
void loop_broadcast(const T* a, const Shape& sa, const T* b, const Shape& sb, O* o,
                    const Shape& so) {
  using C = compute_t<T>;
  NdIter<3> it = broadcast_iter<3>(so, {&sa, &sb});
  it.for_each_row([&](const std::array<int64_t, 3>& off, int64_t n,
                      const std::array<int64_t, 3>& st) {
    O* po = o + off[0];
    const T* pa = a + off[1];
    const T* pb = b + off[2];
    if (st[1] == 1 && st[2] == 1) {
      loop_same<Op, T, O>(pa, pb, po, n);
    } else if (st[1] == 1 && st[2] == 0) {
      loop_scalar_right<Op, T, O>(pa, convert_value<C>(*pb), po, n);
    } else if (st[1] == 0 && st[2] == 1) {
      loop_scalar_left<Op, T, O>(convert_value<C>(*pa), pb, po, n);
    } else {
      for (int64_t i = 0; i < n; ++i)
        po[i] = apply<Op, T, O>(convert_value<C>(pa[i * st[1]]), convert_value<C>(pb[i * st[2]]));
    }
  });
}

template <class Op>
Status binary_kernel(const KernelArgs& args) {
  const Tensor& a = in(args, 0);
  const Tensor& out = args.out;
  const int64_t n = count(out.meta.shape);
  if (n == 0) return Status::ok();
  const bool scalar_form = args.inputs.size() == 1;
  DType p;
  if (!Op::kCompare) p = out.meta.dtype;
  else if (scalar_form) p = promote_with_scalar(a.meta.dtype, args.attrs.scalar_is_integral());
  else p = promote(a.meta.dtype, in(args, 1).meta.dtype);
  if (std::is_same_v<Op, DivOp> && !is_floating(p))
    return unimplemented("div: operand dtype {} is not floating", dtype_name(p));

  TempBuffer ta, tb;
  const void* pa = as_dtype(a, p, ta);
  const void* pb = scalar_form ? nullptr : as_dtype(in(args, 1), p, tb);
  dispatch_dtype(p, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using O = std::conditional_t<Op::kCompare, bool, T>;
    using C = compute_t<T>;
    const T* xa = static_cast<const T*>(pa);
    const T* xb = static_cast<const T*>(pb);
    O* xo = static_cast<O*>(out.storage->data());
    if (scalar_form) {
      C s = convert_value<C>(args.attrs.scalar());
      if constexpr (std::is_same_v<C, int64_t>)
        if (auto e = args.attrs.scalar_exact()) s = *e;
      if (args.attrs.scalar_side() == ScalarSide::kLeft) loop_scalar_left<Op, T, O>(s, xa, xo, n);
      else loop_scalar_right<Op, T, O>(xa, s, xo, n);
      return;
    }
    const Shape& sa = a.meta.shape;
    const Shape& sb = in(args, 1).meta.shape;
    const Shape& so = out.meta.shape;
    const int64_t na = count(sa), nb = count(sb);
    if (na == n && nb == n) loop_same<Op, T, O>(xa, xb, xo, n);
    else if (na == n && nb == 1) loop_scalar_right<Op, T, O>(xa, convert_value<C>(*xb), xo, n);
    else if (na == 1 && nb == n) loop_scalar_left<Op, T, O>(convert_value<C>(*xa), xb, xo, n);
    else loop_broadcast<Op, T, O>(xa, sa, xb, sb, xo, so);
  });
  return Status::ok();
}

}  // namespace

void register_binary(KernelTable& t) {
  auto set = [&](OpId op, CpuKernel k) { t[static_cast<size_t>(op)] = k; };
  set(OpId::k_add, binary_kernel<AddOp>);
  set(OpId::k_sub, binary_kernel<SubOp>);
  set(OpId::k_mul, binary_kernel<MulOp>);
  set(OpId::k_div, binary_kernel<DivOp>);
  set(OpId::k_pow, binary_kernel<PowOp>);
  set(OpId::k_maximum, binary_kernel<MaxOp>);
  set(OpId::k_minimum, binary_kernel<MinOp>);
  set(OpId::k_eq, binary_kernel<EqOp>);
  set(OpId::k_ne, binary_kernel<NeOp>);
  set(OpId::k_lt, binary_kernel<LtOp>);
  set(OpId::k_le, binary_kernel<LeOp>);
  set(OpId::k_gt, binary_kernel<GtOp>);
  set(OpId::k_ge, binary_kernel<GeOp>);
}

}  // namespace gt::worker::cpu
