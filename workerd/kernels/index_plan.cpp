#include "workerd/kernels/index_plan.h"

#include "workerd/kernels/kernel_util.h"

namespace gt::worker {

IndexPlan plan_index(const KernelArgs& args) {
  const Shape& xs = args.inputs[0]->meta.shape;
  IndexPlan p;
  p.dim = normalized_dim(args.attrs.axis(), xs.rank());
  p.around = split_at(xs, p.dim);
  p.extent = p.around.n;
  p.count = count(args.inputs[1]->meta.shape);
  p.x_strides = contiguous_strides(xs);
  p.dim_stride = xs.rank() == 0 ? 0 : p.x_strides[p.dim];
  return p;
}

}  // namespace gt::worker
