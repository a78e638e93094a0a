// The host-side decisions of the elementwise ops that every backend makes the same way before
// it launches anything (the math itself is elementwise_math.h).
#pragma once

#include <optional>

#include "gt/core/dtype.h"
#include "libgtcore/status.h"
#include "workerd/backend.h"
#include "workerd/kernels/convert.h"
#include "workerd/kernels/kernel_util.h"
#include "workerd/kernels/op_traits.h"

namespace gt::worker {

// A scalar attribute (a binary op's scalar operand, a fill value, a clamp bound) converted to
// dtype `dt` before any arithmetic, as PyTorch converts a Python scalar to the op's dtype: an
// integer wraps into int32 (int32 + 2**40 adds 0), a floating value rounds to float16 /
// bfloat16 / float32 (float16 * 70000. multiplies by inf), anything is 0 or 1 for bool. `value`
// is then exactly representable in dt; `exact` is the int64 value itself (int64 and int32 dt),
// which kernels use for int64 since a double loses integers beyond 2^53. `exact_in`: the
// scalar as an exact integer, when it is one.
struct ScalarIn {
  double value = 0;
  int64_t exact = 0;
};

inline ScalarIn scalar_in(DType dt, double value, std::optional<int64_t> exact_in) {
  ScalarIn r;
  switch (dt) {
    case DType::kInt64:
      r.exact = exact_in ? *exact_in : float_to_int<int64_t>(value);
      break;
    case DType::kInt32:  // two's complement wraparound (C++20), as a cast of the int64 scalar
      r.exact = exact_in ? static_cast<int32_t>(static_cast<uint32_t>(*exact_in))
                         : float_to_int<int32_t>(value);
      break;
    case DType::kInt8:  // wraps as int32 does
      r.exact = exact_in ? static_cast<int8_t>(static_cast<uint8_t>(*exact_in)) : float_to_int<int8_t>(value);
      break;
    case DType::kUInt8:
      r.exact = exact_in ? static_cast<uint8_t>(*exact_in) : float_to_int<uint8_t>(value);
      break;
    case DType::kBool:
      r.exact = (exact_in ? *exact_in != 0 : value != 0) ? 1 : 0;
      break;
    case DType::kFloat64:
      r.value = exact_in ? static_cast<double>(*exact_in) : value;
      return r;
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16: {
      const float f = exact_in ? static_cast<float>(*exact_in) : static_cast<float>(value);
      r.value = dt == DType::kFloat32   ? static_cast<double>(f)
                : dt == DType::kFloat16 ? static_cast<double>(convert_value<float>(convert_value<half>(f)))
                                        : static_cast<double>(static_cast<float>(bfloat16(f)));
      return r;
    }
  }
  r.value = static_cast<double>(r.exact);
  return r;
}

// A binary elementwise op's operands as the kernels take them: `n` output elements; with
// `scalar_form` the second operand is attrs' scalar (scalar_side() says on which side), as
// `scalar`; both operands converted to dtype `p` first. Arithmetic runs in the output dtype (so
// int / int division runs in float), comparisons in the operands' promoted dtype (a zero-dim
// tensor or a scalar counting less than a tensor with dims, as the shape rule's). True division
// needs a floating p (the shape rule guarantees it; no kernel divides integers).
struct BinaryOperands {
  int64_t n = 0;
  bool scalar_form = false;
  DType p = DType::kFloat32;
  ScalarIn scalar;  // scalar_form: the scalar converted to p
};

inline Result<BinaryOperands> binary_operands(const KernelArgs& args) {
  BinaryOperands b;
  b.n = count(args.out.meta.shape);
  b.scalar_form = args.inputs.size() == 1;
  const TensorMeta& a = args.inputs[0]->meta;
  if (!is_comparison(args.op)) {
    b.p = args.out.meta.dtype;
  } else if (b.scalar_form) {
    if (!args.attrs.scalar_kind_valid())
      return invalid_argument("{}: bad scalar kind", op_name(args.op));
    b.p = promote_with_scalar(a.dtype, args.attrs.scalar_kind());
  } else {
    const TensorMeta& o = args.inputs[1]->meta;
    b.p = promote_ranked(a.dtype, a.shape.rank() == 0, o.dtype, o.shape.rank() == 0);
  }
  if (b.scalar_form)
    b.scalar = scalar_in(b.p, args.attrs.scalar(),
                         args.attrs.scalar_is_integral() ? args.attrs.scalar_exact() : std::nullopt);
  if (b.n > 0 && is_true_division(args.op) && !is_floating(b.p))
    return unimplemented("{}: operand dtype {} is not floating", op_name(args.op),
                         dtype_name(b.p));
  return b;
}

// clamp's bounds converted to the output dtype (the shape rule has checked that they fit);
// integral bounds use their exact integers when the client sent them.
struct ClampBounds {
  ScalarIn lo, hi;
};

inline ClampBounds clamp_bounds(const OpAttrs& a, DType dt) {
  const bool integral = a.bounds_integral();
  return {scalar_in(dt, a.clamp_min(), integral ? a.clamp_min_exact() : std::nullopt),
          scalar_in(dt, a.clamp_max(), integral ? a.clamp_max_exact() : std::nullopt)};
}

// The output dtype a unary elementwise op gives for input dtype `in` (its shape rule's, checked
// again by the kernels: they read and write exactly these types).
inline DType unary_out_dtype(OpId op, DType in) {
  return unary_keeps_dtype(op) || is_floating(in) ? in : DType::kFloat32;
}

inline Status check_unary_out(const KernelArgs& args) {
  const DType in = args.inputs[0]->meta.dtype;
  if (args.out.meta.dtype != unary_out_dtype(args.op, in))
    return unimplemented("unary op: unexpected output dtype {} for input {}",
                         dtype_name(args.out.meta.dtype), dtype_name(in));
  return Status::ok();
}

// How copy_(dst, src) reads its source (src is broadcast to dst's shape and converted to dst's
// dtype; it may share dst's storage, as a reshape alias does).
enum class CopySource {
  kNothing,    // nothing to do: dst is empty, or src is dst's own bytes in the same shape
  kConverted,  // another dtype: read a converted temporary (a fresh buffer, no aliasing left)
  kStaged,     // src's bytes overlap dst's: read a copy of them
  kDirect,     // read src where it is
};

inline CopySource copy_source(const KernelArgs& args) {
  const Tensor& dst = args.out;
  const Tensor& src = *args.inputs[1];
  const int64_t n = count(dst.meta.shape);
  if (n == 0) return CopySource::kNothing;
  if (src.meta.dtype != dst.meta.dtype) return CopySource::kConverted;
  const void* sp = src.storage->data();
  const void* dp = dst.storage->data();
  if (!overlaps(sp, static_cast<size_t>(src.meta.nbytes()), dp,
                static_cast<size_t>(n) * dtype_size(dst.meta.dtype)))
    return CopySource::kDirect;
  if (sp == dp && count(src.meta.shape) == n) return CopySource::kNothing;  // onto itself
  return CopySource::kStaged;
}

}  // namespace gt::worker
