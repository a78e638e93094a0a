// The geometry of the indexing ops (x = input 0, index = input 1), the same on every backend.
// Index VALUES are data the shape rule cannot see: each backend checks that all of them lie in
// [0, extent) its own way (a loop, a device kernel) before it writes anything.
#pragma once

#include <array>
#include <cstdint>

#include "libgtcore/shape.h"
#include "workerd/backend.h"
#include "workerd/dim_split.h"
#include "workerd/kernels/nd_iter.h"

namespace gt::worker {

struct IndexPlan {
  int dim = 0;           // x's indexed dim (normalized)
  int64_t extent = 1;    // x's extent along it (1 for a 0-d x): index values lie in [0, extent)
  int64_t count = 0;     // index values
  DimSplit around;       // x as [outer, extent, inner] around dim (index_select, index_add)
  std::array<int64_t, kMaxRank> x_strides{};  // x's contiguous strides (gather, scatter_add)
  int64_t dim_stride = 0;                     // x_strides[dim] (0 for a 0-d x)
};

IndexPlan plan_index(const KernelArgs& args);

// An iterator over the index's positions (operand 0, contiguous) and N - 1 tensors of its rank
// with strides `st` (operands 1..); operand 1's stride along `dim` is 0: its position there is
// the index value (times IndexPlan::dim_stride).
template <int N>
NdIter<N> index_iter(const Shape& index_shape,
                     const std::array<std::array<int64_t, kMaxRank>, N - 1>& st, int dim) {
  NdIter<N> it(index_shape);
  it.stride[0] = contiguous_strides(index_shape);
  for (int p = 1; p < N; ++p) it.stride[p] = st[p - 1];
  if (index_shape.rank() > 0) it.stride[1][dim] = 0;
  it.coalesce();
  return it;
}

}  // namespace gt::worker
