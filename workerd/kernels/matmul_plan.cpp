#include "workerd/kernels/matmul_plan.h"

#include "workerd/kernels/nd_iter.h"

namespace gt::worker {

MatmulPlan plan_matmul(const Shape& a0, const Shape& b0) {
  MatmulPlan p;
  Shape a = a0.rank() == 1 ? Shape{1, a0[0]} : a0;
  Shape b = b0.rank() == 1 ? Shape{b0[0], 1} : b0;
  p.m = a[a.rank() - 2];
  p.k = a[a.rank() - 1];
  p.n = b[b.rank() - 1];
  Shape ba, bb;
  for (int i = 0; i < a.rank() - 2; ++i) ba.push_back(a[i]);
  for (int i = 0; i < b.rank() - 2; ++i) bb.push_back(b[i]);
  const Shape batch = broadcast_shapes(ba, bb).value();  // checked by the shape rule
  NdIter<2> it(batch);
  it.stride[0] = broadcast_strides(ba, batch);
  it.stride[1] = broadcast_strides(bb, batch);
  p.a_off.reserve(static_cast<size_t>(batch.numel()));
  p.b_off.reserve(static_cast<size_t>(batch.numel()));
  bool a_dense = true, b_shared = true;
  it.for_each_outer(batch.rank(), [&](const std::array<int64_t, 2>& off) {
    if (off[0] != static_cast<int64_t>(p.a_off.size())) a_dense = false;
    if (off[1] != 0) b_shared = false;
    p.a_off.push_back(off[0] * p.m * p.k);
    p.b_off.push_back(off[1] * p.k * p.n);
  });
  p.folds_into_m = a_dense && b_shared;
  return p;
}

}  // namespace gt::worker
