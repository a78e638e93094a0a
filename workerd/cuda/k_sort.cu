// argsort on CUDA (workerd/cpu/sort.cpp semantics): the stable permutation of each line of x
// viewed as [outer, n, inner], in workerd/kernels/sort_order.h's order, so both backends give
// the same indices. Each element finds its own rank by counting the elements of its line that
// sort before it (equal ones before it in input order count too) and writes its position
// there: no temporary memory and an exact stable result, at O(n) work per element -- fine for
// the class/feature-length lines sort and topk are used on; a merge or radix sort (CUB's
// segmented sort) is the step up for lines of hundreds of thousands of elements.
#include "workerd/cuda/cuda_common.cuh"
#include "workerd/kernels/sort_order.h"

namespace gt::worker::cuda {
namespace {

template <class T, bool kDescending>
__global__ void argsort_rank_kernel(const T* x, int64_t* out, int64_t outer, int64_t n,
                                    int64_t inner) {
  using C = compute_t<T>;
  const int64_t total = outer * n * inner;
  for (int64_t e = global_tid(); e < total; e += grid_stride()) {
    const int64_t o = e / (n * inner);
    const int64_t rest = e - o * n * inner;
    const int64_t k = rest / inner, j = rest - k * inner;
    const T* line = x + o * n * inner + j;
    const C mine = cvt<C>(line[k * inner]);
    int64_t rank = 0;
    for (int64_t m = 0; m < n; ++m) {
      const C other = cvt<C>(line[m * inner]);
      if (sorts_before<kDescending>(other, mine) ||
          (m < k && !sorts_before<kDescending>(mine, other)))
        ++rank;
    }
    out[o * n * inner + rank * inner + j] = k;
  }
}

}  // namespace

cudaError_t launch_argsort(int dtype, const void* x, int64_t* out, int64_t outer, int64_t n,
                           int64_t inner, bool descending, cudaStream_t s) {
  if (outer * n * inner <= 0) return cudaSuccess;
  return dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x);
    if (descending)
      argsort_rank_kernel<T, true><<<grid_for(outer * n * inner), kThreads, 0, s>>>(px, out, outer,
                                                                                    n, inner);
    else
      argsort_rank_kernel<T, false><<<grid_for(outer * n * inner), kThreads, 0, s>>>(px, out, outer,
                                                                                     n, inner);
    return cudaGetLastError();
  });
}

}  // namespace gt::worker::cuda
