// Creation ops on CUDA (workerd/cpu/creation.cpp semantics; the host uploads from_host and
// host_chunk are no kernels: workerd/backend.cpp, through CudaBackend::write_bytes).
//   zeros                cudaMemsetAsync
//   ones/full            the value converted on the host like a cast, written as a bit pattern
//   arange/rand/randn    kernels (k_creation.cu); rand/randn share philox.h with the CPU
#include "workerd/cuda/cuda_ops.h"

namespace gt::worker::cuda {
namespace {

Status zeros_kernel(const KernelArgs& args, OpContext& ctx) {
  const auto nbytes = static_cast<size_t>(args.out.meta.nbytes());
  if (nbytes > 0) GT_CUDA_CHECK(cudaMemsetAsync(out_ptr(args), 0, nbytes, ctx.stream));
  return Status::ok();
}

Status fill(const KernelArgs& args, OpContext& ctx, double value) {
  const DType dt = args.out.meta.dtype;
  GT_LAUNCH(launch_fill_bits(out_ptr(args), count(args.out.meta.shape),
                             static_cast<int>(dtype_size(dt)), value_bits(value, dt), ctx.stream));
  return Status::ok();
}
Status ones_kernel(const KernelArgs& args, OpContext& ctx) { return fill(args, ctx, 1.0); }
Status full_kernel(const KernelArgs& args, OpContext& ctx) {
  // int64 with an exact integer fill value (when the client sent one): exact beyond 2^53,
  // where the double is not (as the CPU worker).
  if (auto e = args.attrs.fill_exact(); e && args.out.meta.dtype == DType::kInt64) {
    GT_LAUNCH(launch_fill_bits(out_ptr(args), count(args.out.meta.shape), 8,
                               static_cast<uint64_t>(*e), ctx.stream));
    return Status::ok();
  }
  return fill(args, ctx, args.attrs.real_at(0));
}

Status arange_kernel(const KernelArgs& args, OpContext& ctx) {
  GT_LAUNCH(launch_arange(out_ptr(args), code(args.out.meta.dtype), count(args.out.meta.shape),
                          args.attrs.real_at(0), args.attrs.real_at(2), ctx.stream));
  return Status::ok();
}

template <bool kNormal>
Status random_kernel(const KernelArgs& args, OpContext& ctx) {
  if (!is_floating(args.out.meta.dtype))
    return unimplemented("{}: dtype {}", op_name(args.op), dtype_name(args.out.meta.dtype));
  // A shard of a random tensor (ints {seed, counter, axis, offset, global extent}): element i
  // takes the value of its position in the whole tensor (same as the CPU worker).
  ShardIndexDesc shard;
  if (auto rs = args.attrs.random_shard()) {
    if (rs->axis < 0 || rs->axis >= args.out.meta.shape.rank())
      return invalid_argument("{}: shard axis {} out of range", op_name(args.op), rs->axis);
    const DimSplit g = split_at(args.out.meta.shape, rs->axis);
    shard.local = g.n;
    shard.offset = rs->offset;
    shard.global = rs->global;
    shard.inner = g.inner;
  }
  GT_LAUNCH(launch_random(out_ptr(args), code(args.out.meta.dtype), count(args.out.meta.shape),
                          kNormal, args.attrs.seed(), args.attrs.counter(), shard, ctx.stream));
  return Status::ok();
}

}  // namespace

void register_creation(KernelTable& t) {
  auto set = [&](OpId op, CudaKernel k) { t[static_cast<size_t>(op)] = k; };
  set(OpId::k_zeros, zeros_kernel);
  set(OpId::k_ones, ones_kernel);
  set(OpId::k_full, full_kernel);
  set(OpId::k_arange, arange_kernel);
  set(OpId::k_rand, random_kernel<false>);
  set(OpId::k_randn, random_kernel<true>);
}

}  // namespace gt::worker::cuda
