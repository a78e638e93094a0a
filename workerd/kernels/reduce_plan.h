// The host-side checks of the reductions that every backend makes the same way (the loops and
// device kernels differ; the geometry is dim_split.h's [outer, n, inner]).
#pragma once

#include "gt/core/dtype.h"
#include "libgtcore/status.h"
#include "workerd/backend.h"
#include "workerd/dim_split.h"
#include "workerd/kernels/op_traits.h"

namespace gt::worker {

// A reduction's output dtype for input dtype `in`, from its shape rule: sum (and the scan
// cumsum) gives int64 for integer and bool inputs, argmax/argmin int64, max/min the input's
// dtype, the others (mean, var, logsumexp) float32; floating inputs keep their dtype except for
// the index reductions.
inline DType reduce_out_dtype(OpId op, DType in) {
  switch (op_rule(op)) {
    case ShapeRule::kReduceIndex:
    case ShapeRule::kArgsort: return DType::kInt64;
    case ShapeRule::kReduceSame: return in;
    case ShapeRule::kReduceSum:
    case ShapeRule::kCumsum: return is_floating(in) ? in : DType::kInt64;
    default: return is_floating(in) ? in : DType::kFloat32;
  }
}

// What a reduction kernel checks before it runs on view `v` of its input: an extreme (max, min,
// argmax, argmin) has elements to pick from, and the output dtype is reduce_out_dtype's (the
// shape rule's, checked again: kernels read and write exactly these types).
inline Status check_reduce(const KernelArgs& args, const DimSplit& v) {
  const ShapeRule rule = op_rule(args.op);
  const bool extreme = rule == ShapeRule::kReduceSame || rule == ShapeRule::kReduceIndex;
  if (extreme && v.n == 0)
    return invalid_argument("{}: cannot reduce zero elements", op_name(args.op));
  const DType in = args.inputs[0]->meta.dtype;
  if (args.out.meta.dtype != reduce_out_dtype(args.op, in))
    return unimplemented("{}: output dtype {} for input {}", op_name(args.op),
                         dtype_name(args.out.meta.dtype), dtype_name(in));
  return Status::ok();
}

}  // namespace gt::worker
