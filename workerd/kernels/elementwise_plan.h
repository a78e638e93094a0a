// The host-side decisions of the elementwise ops that every backend makes the same way before
// it launches anything (the math itself is elementwise_math.h).
#pragma once

#include "gt/core/dtype.h"
#include "libgtcore/status.h"
#include "workerd/backend.h"
#include "workerd/kernels/kernel_util.h"
#include "workerd/kernels/op_traits.h"

namespace gt::worker {

// A binary elementwise op's operands as the kernels take them: `n` output elements; with
// `scalar_form` the second operand is attrs' scalar (scalar_side() says on which side); both
// operands converted to dtype `p` first. Arithmetic runs in the output dtype (so int / int
// division runs in float), comparisons in promote(a, b), or promote_with_scalar for a scalar.
// True division needs a floating p (the shape rule guarantees it; no kernel divides integers).
struct BinaryOperands {
  int64_t n = 0;
  bool scalar_form = false;
  DType p = DType::kFloat32;
};

inline Result<BinaryOperands> binary_operands(const KernelArgs& args) {
  BinaryOperands b;
  b.n = count(args.out.meta.shape);
  b.scalar_form = args.inputs.size() == 1;
  const DType a = args.inputs[0]->meta.dtype;
  if (!is_comparison(args.op)) b.p = args.out.meta.dtype;
  else if (b.scalar_form) b.p = promote_with_scalar(a, args.attrs.scalar_is_integral());
  else b.p = promote(a, args.inputs[1]->meta.dtype);
  if (b.n > 0 && is_true_division(args.op) && !is_floating(b.p))
    return unimplemented("{}: operand dtype {} is not floating", op_name(args.op),
                         dtype_name(b.p));
  return b;
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
