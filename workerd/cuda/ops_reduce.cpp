// Reductions, cumsum and argsort on CUDA (workerd/cpu/reduce.cpp and reduce_stats.cpp semantics;
// kernels in k_reduce.cu). Output dtypes are re-checked here as the CPU does (workerd/kernels/
// reduce_plan.h), so a shape-rule change cannot make a kernel write the wrong element size.
#include "workerd/cuda/cuda_ops.h"
#include "workerd/kernels/reduce_plan.h"

namespace gt::worker::cuda {
namespace {

template <OpId kOp>
Status reduce_kernel(const KernelArgs& args, OpContext& ctx) {
  const Tensor& x = in(args, 0);
  const ReduceView v = reduce_view(x.meta.shape, args.attrs);
  if (v.outer * v.inner == 0) return Status::ok();
  GT_RETURN_IF_ERROR(check_reduce(args, v));
  const double correction = kOp == OpId::k_var ? args.attrs.real_at(0, 1.0) : 0.0;
  const size_t scratch_bytes = reduce_scratch_bytes(kOp, code(x.meta.dtype), v.outer, v.n, v.inner);
  GT_ASSIGN_OR_RETURN(DeviceTemp scratch, ctx.temp(scratch_bytes));
  GT_LAUNCH(launch_reduce(kOp, code(x.meta.dtype), x.storage->data(), out_ptr(args), v.outer, v.n,
                          v.inner, correction, scratch.get(), ctx.stream));
  return Status::ok();
}

Status cumsum_kernel(const KernelArgs& args, OpContext& ctx) {
  const Tensor& x = in(args, 0);
  const DimSplit v =
      split_at(x.meta.shape, normalized_dim(args.attrs.axis(), x.meta.shape.rank()));
  if (v.outer * v.n * v.inner == 0) return Status::ok();
  GT_RETURN_IF_ERROR(check_reduce(args, v));
  GT_LAUNCH(launch_cumsum(code(x.meta.dtype), x.storage->data(), out_ptr(args), v.outer, v.n,
                          v.inner, ctx.stream));
  return Status::ok();
}

Status argsort_kernel(const KernelArgs& args, OpContext& ctx) {
  const Tensor& x = in(args, 0);
  const DimSplit v =
      split_at(x.meta.shape, normalized_dim(args.attrs.axis(), x.meta.shape.rank()));
  if (v.outer * v.n * v.inner == 0) return Status::ok();
  GT_RETURN_IF_ERROR(check_reduce(args, v));
  GT_LAUNCH(launch_argsort(code(x.meta.dtype), x.storage->data(),
                           static_cast<int64_t*>(out_ptr(args)), v.outer, v.n, v.inner,
                           args.attrs.descending(), ctx.stream));
  return Status::ok();
}

}  // namespace

void register_reduce(KernelTable& t) {
  auto set = [&](OpId op, CudaKernel k) { t[static_cast<size_t>(op)] = k; };
  set(OpId::k_sum, reduce_kernel<OpId::k_sum>);
  set(OpId::k_mean, reduce_kernel<OpId::k_mean>);
  set(OpId::k_max, reduce_kernel<OpId::k_max>);
  set(OpId::k_min, reduce_kernel<OpId::k_min>);
  set(OpId::k_argmax, reduce_kernel<OpId::k_argmax>);
  set(OpId::k_argmin, reduce_kernel<OpId::k_argmin>);
  set(OpId::k_var, reduce_kernel<OpId::k_var>);
  set(OpId::k_logsumexp, reduce_kernel<OpId::k_logsumexp>);
  set(OpId::k_cumsum, cumsum_kernel);
  set(OpId::k_argsort, argsort_kernel);
}

}  // namespace gt::worker::cuda
