// Indexing ops on CUDA (workerd/cpu/indexing.cpp semantics). Index values are data: they are
// checked on the device, without a host round trip, and a bad one is reported asynchronously
// (OpContext::check_indices): the result is poisoned and the error raised at the session's next
// sync point. The kernels skip bad indices, so nothing is read or written out of bounds.
#include "workerd/cuda/cuda_ops.h"
#include "workerd/dim_split.h"
#include "workerd/kernels/index_plan.h"

namespace gt::worker::cuda {
namespace {

// The index tensor's values against the plan's extent (on the device; reported asynchronously).
Status check_index(const KernelArgs& args, OpContext& ctx, const IndexPlan& p) {
  const Tensor& idx = in(args, 1);
  if (idx.meta.dtype != DType::kInt32 && idx.meta.dtype != DType::kInt64)
    return invalid_argument("{}: index dtype {} is not int32/int64", op_name(args.op),
                            dtype_name(idx.meta.dtype));
  const OpId op = args.op;
  const int64_t dim = p.dim, extent = p.extent;
  return ctx.check_indices(idx, extent, [op, dim, extent](int64_t v) {
    return out_of_range("{}: index {} is out of bounds for dimension {} with size {}",
                        op_name(op), v, dim, extent);
  });
}

Status copy_x(const KernelArgs& args, OpContext& ctx) {
  const Tensor& x = in(args, 0);
  const auto nbytes = static_cast<size_t>(x.meta.nbytes());
  if (nbytes > 0 && x.storage->data() != out_ptr(args))
    GT_CUDA_CHECK(cudaMemcpyAsync(out_ptr(args), x.storage->data(), nbytes,
                                  cudaMemcpyDeviceToDevice, ctx.stream));
  return Status::ok();
}

Status index_select_kernel(const KernelArgs& args, OpContext& ctx) {
  const IndexPlan p = plan_index(args);
  GT_RETURN_IF_ERROR(check_index(args, ctx, p));
  const Tensor& x = in(args, 0);
  const Tensor& index = in(args, 1);
  const DimSplit& a = p.around;
  GT_LAUNCH(launch_index_select(x.storage->data(), index.storage->data(), code(index.meta.dtype),
                                out_ptr(args), a.outer, a.n, p.count, a.inner,
                                static_cast<int>(dtype_size(x.meta.dtype)), ctx.stream));
  return Status::ok();
}

// index_iter's positions as a launch descriptor: operand 0 of the NdDesc is x (or out), 1 src.
template <int N>
NdDesc index_desc(const NdIter<N>& it) {
  NdDesc desc;
  desc.rank = it.rank;
  for (int k = 0; k < it.rank; ++k) {
    desc.shape[k] = it.shape[k];
    for (int q = 0; q + 1 < N; ++q) desc.stride[q][k] = it.stride[q + 1][k];
  }
  return desc;
}

Status gather_kernel(const KernelArgs& args, OpContext& ctx) {
  const IndexPlan p = plan_index(args);
  GT_RETURN_IF_ERROR(check_index(args, ctx, p));
  if (p.count == 0) return Status::ok();
  const Tensor& x = in(args, 0);
  const Tensor& index = in(args, 1);
  const NdDesc desc = index_desc(index_iter<2>(index.meta.shape, {p.x_strides}, p.dim));
  GT_LAUNCH(launch_gather_index(x.storage->data(), index.storage->data(), code(index.meta.dtype),
                                out_ptr(args), p.count, static_cast<int>(dtype_size(x.meta.dtype)),
                                p.dim_stride, p.extent, desc, ctx.stream));
  return Status::ok();
}

Status scatter_add_kernel(const KernelArgs& args, OpContext& ctx) {
  const IndexPlan p = plan_index(args);
  GT_RETURN_IF_ERROR(check_index(args, ctx, p));
  GT_RETURN_IF_ERROR(copy_x(args, ctx));
  if (p.count == 0) return Status::ok();
  const Tensor& x = in(args, 0);
  const Tensor& index = in(args, 1);
  const Tensor& src = in(args, 2);
  const NdDesc desc = index_desc(
      index_iter<3>(index.meta.shape, {p.x_strides, contiguous_strides(src.meta.shape)}, p.dim));
  GT_LAUNCH(launch_scatter_add(out_ptr(args), index.storage->data(), code(index.meta.dtype),
                               src.storage->data(), code(x.meta.dtype), p.count, p.dim_stride,
                               p.extent, desc, ctx.stream));
  return Status::ok();
}

Status index_add_kernel(const KernelArgs& args, OpContext& ctx) {
  const IndexPlan p = plan_index(args);
  GT_RETURN_IF_ERROR(check_index(args, ctx, p));
  GT_RETURN_IF_ERROR(copy_x(args, ctx));
  const Tensor& x = in(args, 0);
  const DimSplit& a = p.around;
  GT_LAUNCH(launch_index_add(out_ptr(args), in_ptr(args, 1), code(in(args, 1).meta.dtype),
                             in_ptr(args, 2), code(x.meta.dtype), a.outer, a.n, p.count, a.inner,
                             ctx.stream));
  return Status::ok();
}

Status one_hot_kernel(const KernelArgs& args, OpContext& ctx) {
  const Tensor& labels = in(args, 0);
  const Shape& os = args.out.meta.shape;
  const int64_t classes = os[os.rank() - 1];
  if (labels.meta.dtype != DType::kInt32 && labels.meta.dtype != DType::kInt64)
    return invalid_argument("one_hot: label dtype {} is not int32/int64",
                            dtype_name(labels.meta.dtype));
  GT_RETURN_IF_ERROR(ctx.check_indices(labels, classes, [classes](int64_t v) {
    return out_of_range("one_hot: class value {} is out of range for num_classes = {}", v,
                        classes);
  }));
  const int64_t total = count(os);
  if (total == 0) return Status::ok();
  GT_CUDA_CHECK(cudaMemsetAsync(out_ptr(args), 0, static_cast<size_t>(total) * sizeof(int64_t),
                                ctx.stream));
  GT_LAUNCH(launch_one_hot(labels.storage->data(), code(labels.meta.dtype),
                           count(labels.meta.shape), classes, static_cast<int64_t*>(out_ptr(args)),
                           ctx.stream));
  return Status::ok();
}

}  // namespace

void register_indexing(KernelTable& t) {
  auto set = [&](OpId op, CudaKernel k) { t[static_cast<size_t>(op)] = k; };
  set(OpId::k_index_select, index_select_kernel);
  set(OpId::k_gather, gather_kernel);
  set(OpId::k_scatter_add, scatter_add_kernel);
  set(OpId::k_index_add, index_add_kernel);
  set(OpId::k_one_hot, one_hot_kernel);
}

}  // namespace gt::worker::cuda
