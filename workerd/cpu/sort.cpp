// argsort on the CPU: each line along the dim ([outer, n, inner], dim_split.h) is sorted by a
// stable sort of its positions in the order of workerd/kernels/sort_order.h. Lines are
// independent and a sort is compute-bound, so long inputs are split over threads by line.
#include <algorithm>
#include <numeric>
#include <vector>

#include "workerd/cpu/kernels.h"
#include "workerd/kernels/reduce_plan.h"
#include "workerd/kernels/sort_order.h"

namespace gt::worker::cpu {
namespace {

template <class T, bool kDescending>
void argsort_lines(const T* x, int64_t* out, const DimSplit& v, int64_t first, int64_t last) {
  using C = compute_t<T>;
  std::vector<C> keys(static_cast<size_t>(v.n));
  std::vector<int64_t> order(static_cast<size_t>(v.n));
  for (int64_t line = first; line < last; ++line) {
    const int64_t o = line / v.inner, j = line % v.inner;
    const int64_t base = o * v.n * v.inner + j;
    for (int64_t k = 0; k < v.n; ++k) keys[k] = convert_value<C>(x[base + k * v.inner]);
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return sorts_before<kDescending>(keys[a], keys[b]);
    });
    for (int64_t k = 0; k < v.n; ++k) out[base + k * v.inner] = order[k];
  }
}

Status argsort_kernel(const KernelArgs& args) {
  const Tensor& x = in(args, 0);
  const DimSplit v = split_at(x.meta.shape, normalized_dim(args.attrs.axis(), x.meta.shape.rank()));
  if (v.outer * v.n * v.inner == 0) return Status::ok();
  GT_RETURN_IF_ERROR(check_reduce(args, v));
  auto* out = static_cast<int64_t*>(out_ptr(args));
  const bool descending = args.attrs.descending();
  return dispatch_dtype(x.meta.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* px = static_cast<const T*>(in_ptr(args, 0));
    // About n log n comparisons per line: split when there are >= 2 * 2^16 element-steps.
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(v.n, 1));
    parallel_for(v.outer * v.inner, grain, [&](int64_t b, int64_t e) {
      if (descending) argsort_lines<T, true>(px, out, v, b, e);
      else argsort_lines<T, false>(px, out, v, b, e);
    });
    return Status::ok();
  });
}

}  // namespace

void register_sort(KernelTable& t) { t[static_cast<size_t>(OpId::k_argsort)] = argsort_kernel; }

}  // namespace gt::worker::cpu
