// The geometry of the layout ops, the same on every backend; only the copies differ (loops on
// the CPU, gather kernels and 2-D copies on CUDA).
#pragma once

#include <array>
#include <cstdint>

#include "libgtcore/op_attrs.h"
#include "libgtcore/shape.h"
#include "libgtcore/status.h"
#include "workerd/backend.h"
#include "workerd/dim_split.h"
#include "workerd/kernels/kernel_util.h"
#include "workerd/kernels/nd_iter.h"

namespace gt::worker {

// Where each output element of a gathering layout op (permute, slice, as_strided) is read:
// input element base + sum_d idx_d * stride[d] for output multi-index idx.
struct GatherView {
  std::array<int64_t, kMaxRank> stride{};
  int64_t base = 0;
};
GatherView permute_view(const Shape& in, const OpAttrs& attrs, int out_rank);
GatherView slice_view(const Shape& in, const OpAttrs& attrs, int out_rank);  // negative steps too
// as_strided / strided_copy_: the attributes' own offset and per-dim strides (any sign, zero
// too) over the flat elements of `in`; the shape rule has put every position inside it.
GatherView strided_view(const Shape& in, const OpAttrs& attrs, int out_rank);

// The coalesced iterator of a gather over `out`: operand 0 the contiguous output, operand 1
// the input (base[1] = v.base). strided_copy_ walks the same iterator the other way round:
// operand 0 is its contiguous source, operand 1 the positions it writes.
NdIter<2> gather_iter(const Shape& out, const GatherView& v);

// cat as block copies: the output viewed as [outer, out_row] (out_row = its extent along the
// axis times the inner extent); input `input` fills columns [at, at + row) of every output row
// from its own [outer, row] elements, in input order. Inputs without elements are skipped.
struct CatBlock {
  const Tensor* input;
  int64_t outer, row, out_row, at;
};

// Calls f(const CatBlock&) -> Status for every block (nothing for an empty output); stops at
// the first error.
template <class F>
Status for_each_cat_block(const KernelArgs& args, F&& f) {
  const Shape& os = args.out.meta.shape;
  if (count(os) == 0) return Status::ok();
  const int axis = normalized_dim(args.attrs.axis(), os.rank());
  const DimSplit split = split_at(os, axis);
  CatBlock b{nullptr, split.outer, 0, os[axis] * split.inner, 0};
  for (const Tensor* t : args.inputs) {
    b.input = t;
    b.row = t->meta.shape[axis] * split.inner;
    if (b.row == 0) continue;
    GT_RETURN_IF_ERROR(f(b));
    b.at += b.row;
  }
  return Status::ok();
}

}  // namespace gt::worker
