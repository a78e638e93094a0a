// Binary elementwise ops with numpy broadcasting: every op of ops.def whose rule is kArith,
// kTrueDiv or kCompare, with the math of workerd/kernels/elementwise_math.h (shared with the
// CUDA kernels, conventions there).
//
// Both operands are first brought to one operand dtype P (binary_operands(): arithmetic in
// the output dtype, so int / int division runs in float; comparisons in the promoted dtype;
// a scalar operand converted to P first, as PyTorch does) and computed in compute_t<P> (float for float16/bfloat16, int32 for
// bool). Loops, fastest first: same-shape operands and a scalar operand (attribute or
// one-element tensor) are tight loops the compiler vectorizes; everything else goes through the
// coalesced N-d iterator, whose inner rows again use contiguous or scalar loops when the strides
// allow (e.g. a bias added to every row).
#include <type_traits>

#include "workerd/cpu/kernels.h"
#include "workerd/kernels/elementwise_math.h"
#include "workerd/kernels/elementwise_plan.h"

namespace gt::worker::cpu {
namespace {

template <class Op, class T, class O>
inline O apply(compute_t<T> a, compute_t<T> b) {
  return convert_value<O>(Op::f(a, b));
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
  split_for_each_row(it, [&](const std::array<int64_t, 3>& off, int64_t n,
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

// Integer // and % refuse a zero divisor, as PyTorch's CPU kernels do (ZeroDivisionError): a
// wrong number would otherwise flow on silently.
constexpr bool refuses_zero_divisor(OpId op) {
  return op == OpId::k_floor_divide || op == OpId::k_remainder;
}
template <class T>
bool any_zero(const T* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (p[i] == T(0)) return true;
  return false;
}

template <OpId kOp>
Status binary_kernel(const KernelArgs& args) {
  using Op = BinaryFn<kOp>;
  GT_ASSIGN_OR_RETURN(const BinaryOperands ops, binary_operands(args));
  const int64_t n = ops.n;
  if (n == 0) return Status::ok();
  const bool scalar_form = ops.scalar_form;
  const DType p = ops.p;
  const Tensor& a = in(args, 0);
  const Tensor& out = args.out;

  TempBuffer ta, tb;
  const void* pa = as_dtype(a, p, ta);
  const void* pb = scalar_form ? nullptr : as_dtype(in(args, 1), p, tb);
  Status refused = Status::ok();
  dispatch_dtype(p, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using O = std::conditional_t<is_comparison(kOp), bool, T>;
    using C = compute_t<T>;
    const T* xa = static_cast<const T*>(pa);
    const T* xb = static_cast<const T*>(pb);
    O* xo = static_cast<O*>(out.storage->data());
    // One value against n elements (a scalar attribute or a one-element tensor), split over the
    // compute pool: s on the left (s op x) or on the right (x op s).
    auto scalar_pass = [&](bool left, C s, const T* x) {
      split_flat(n, [&](int64_t b, int64_t e) {
        if (left) loop_scalar_left<Op, T, O>(s, x + b, xo + b, e - b);
        else loop_scalar_right<Op, T, O>(x + b, s, xo + b, e - b);
      });
    };
    if (scalar_form) {
      // The scalar already converted to P (ops.scalar: integers wrapped, floats rounded).
      C s = convert_value<C>(ops.scalar.value);
      if constexpr (std::is_same_v<C, int64_t>) s = ops.scalar.exact;
      if constexpr (refuses_zero_divisor(kOp) && std::is_integral_v<C>) {
        const bool right = args.attrs.scalar_side() == ScalarSide::kRight;
        if (right ? s == C(0) : any_zero(xa, n)) {
          refused = invalid_argument("{}: integer division by zero", op_name(kOp));
          return;
        }
      }
      if constexpr (kOp == OpId::k_pow && std::is_floating_point_v<C>) {
        const double e = args.attrs.scalar_is_integral() && args.attrs.scalar_exact()
                             ? static_cast<double>(*args.attrs.scalar_exact())
                             : args.attrs.scalar();
        if (args.attrs.scalar_side() == ScalarSide::kRight && pow_exponent_needs_double(e)) {
          for (int64_t i = 0; i < n; ++i)
            xo[i] = convert_value<O>(pow_double_exponent(convert_value<C>(xa[i]), e));
          return;
        }
      }
      scalar_pass(args.attrs.scalar_side() == ScalarSide::kLeft, s, xa);
      return;
    }
    const Shape& sa = a.meta.shape;
    const Shape& sb = in(args, 1).meta.shape;
    const Shape& so = out.meta.shape;
    const int64_t na = count(sa), nb = count(sb);
    if constexpr (refuses_zero_divisor(kOp) && std::is_integral_v<C>) {
      if (any_zero(xb, nb)) {
        refused = invalid_argument("{}: integer division by zero", op_name(kOp));
        return;
      }
    }
    if (na == n && nb == n)
      split_flat(n, [&](int64_t b, int64_t e) {
        loop_same<Op, T, O>(xa + b, xb + b, xo + b, e - b);
      });
    else if (na == n && nb == 1) scalar_pass(false, convert_value<C>(*xb), xa);
    else if (na == 1 && nb == n) scalar_pass(true, convert_value<C>(*xa), xb);
    else loop_broadcast<Op, T, O>(xa, sa, xb, sb, xo, so);
  });
  return refused;
}

}  // namespace

void register_binary(KernelTable& t) {
  for_each_op([&](auto c) {
    constexpr OpId op = decltype(c)::value;
    if constexpr (is_binary_elementwise(op)) t[static_cast<size_t>(op)] = binary_kernel<op>;
  });
}

}  // namespace gt::worker::cpu
