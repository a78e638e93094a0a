#include "workerd/kernels/layout_plan.h"

namespace gt::worker {

GatherView permute_view(const Shape& in, const OpAttrs& attrs, int out_rank) {
  const auto xs = row_major_strides(in);
  GatherView v;
  for (int d = 0; d < out_rank; ++d) v.stride[d] = xs[attrs.ints[d]];
  return v;
}

GatherView slice_view(const Shape& in, const OpAttrs& attrs, int out_rank) {
  const auto xs = contiguous_strides(in);
  GatherView v;
  for (int d = 0; d < out_rank; ++d) {
    v.stride[d] = xs[d] * attrs.slice_step(d);
    v.base += xs[d] * attrs.slice_start(d);
  }
  return v;
}

GatherView strided_view(const Shape& /*in*/, const OpAttrs& attrs, int out_rank) {
  GatherView v;
  for (int d = 0; d < out_rank; ++d) v.stride[d] = attrs.strided_stride(d);
  v.base = attrs.strided_offset();
  return v;
}

NdIter<2> gather_iter(const Shape& out, const GatherView& v) {
  NdIter<2> it(out);
  it.stride[0] = row_major_strides(out);
  it.stride[1] = v.stride;
  it.base[1] = v.base;
  it.coalesce();
  return it;
}

}  // namespace gt::worker
