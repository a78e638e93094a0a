// Reductions on CUDA (workerd/cpu/reduce.cpp and reduce_stats.cpp semantics; kernels in
// k_reduce.cu). Output dtypes are re-checked here as the CPU does, so a shape-rule change cannot
// make a kernel write the wrong element size.
#include "workerd/cuda/cuda_ops.h"

namespace gt::worker::cuda {
namespace {

DType want_dtype(RedOp op, DType in) {
  const bool fl = is_floating(in);
  switch (op) {
    case RedOp::kSum: return fl ? in : DType::kInt64;
    case RedOp::kMean: return fl ? in : DType::kFloat32;
    case RedOp::kMax:
    case RedOp::kMin: return in;
    case RedOp::kArgMax:
    case RedOp::kArgMin: return DType::kInt64;
    case RedOp::kVar:
    case RedOp::kLogSumExp: return fl ? in : DType::kFloat32;
  }
  return in;
}

template <RedOp kOp>
Status reduce_kernel(const KernelArgs& args, OpContext& ctx) {
  const Tensor& x = in(args, 0);
  const ReduceView v = reduce_view(x.meta.shape, args.attrs);
  if (v.outer * v.inner == 0) return Status::ok();
  constexpr bool kExtreme = kOp == RedOp::kMax || kOp == RedOp::kMin || kOp == RedOp::kArgMax ||
                            kOp == RedOp::kArgMin;
  if (kExtreme && v.n == 0)
    return invalid_argument("{}: cannot reduce zero elements", op_name(args.op));
  if (args.out.meta.dtype != want_dtype(kOp, x.meta.dtype))
    return unimplemented("{}: output dtype {} for input {}", op_name(args.op),
                         dtype_name(args.out.meta.dtype), dtype_name(x.meta.dtype));
  const double correction = kOp == RedOp::kVar ? args.attrs.real_at(0, 1.0) : 0.0;
  const size_t scratch_bytes = reduce_scratch_bytes(kOp, code(x.meta.dtype), v.outer, v.n, v.inner);
  GT_ASSIGN_OR_RETURN(DeviceTemp scratch, ctx.temp(scratch_bytes));
  GT_LAUNCH(launch_reduce(kOp, code(x.meta.dtype), x.storage->data(), out_ptr(args), v.outer, v.n,
                          v.inner, correction, scratch.get(), ctx.stream));
  return Status::ok();
}

}  // namespace

void register_reduce(KernelTable& t) {
  auto set = [&](OpId op, CudaKernel k) { t[static_cast<size_t>(op)] = k; };
  set(OpId::k_sum, reduce_kernel<RedOp::kSum>);
  set(OpId::k_mean, reduce_kernel<RedOp::kMean>);
  set(OpId::k_max, reduce_kernel<RedOp::kMax>);
  set(OpId::k_min, reduce_kernel<RedOp::kMin>);
  set(OpId::k_argmax, reduce_kernel<RedOp::kArgMax>);
  set(OpId::k_argmin, reduce_kernel<RedOp::kArgMin>);
  set(OpId::k_var, reduce_kernel<RedOp::kVar>);
  set(OpId::k_logsumexp, reduce_kernel<RedOp::kLogSumExp>);
}

}  // namespace gt::worker::cuda
