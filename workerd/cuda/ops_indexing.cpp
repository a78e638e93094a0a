// Indexing ops on CUDA (workerd/cpu/indexing.cpp semantics). Index values are checked on the
// device before anything is written; the result comes back to the host (one stream
// synchronization per indexing op -- the price of reporting OutOfRange on this instruction
// rather than corrupting memory; a later step could defer the check to the next sync point).
#include "workerd/cpu/nd_iter.h"
#include "workerd/cuda/cuda_ops.h"
#include "workerd/dim_split.h"

namespace gt::worker::cuda {
namespace {

using Around = DimSplit;
Around around(const Shape& s, int d) { return split_at(s, d); }

Status check_index(const KernelArgs& args, OpContext& ctx, size_t i, int64_t n, int dim) {
  const Tensor& idx = in(args, i);
  if (idx.meta.dtype != DType::kInt32 && idx.meta.dtype != DType::kInt64)
    return invalid_argument("{}: index dtype {} is not int32/int64", op_name(args.op),
                            dtype_name(idx.meta.dtype));
  GT_ASSIGN_OR_RETURN(int64_t bad, ctx.first_bad_index(idx, n));
  if (bad < 0) return Status::ok();
  GT_ASSIGN_OR_RETURN(int64_t v, ctx.index_value(idx, bad));
  return out_of_range("{}: index {} is out of bounds for dimension {} with size {}",
                      op_name(args.op), v, dim, n);
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
  const Tensor& x = in(args, 0);
  const Tensor& index = in(args, 1);
  const int d = normalized_dim(args.attrs.axis(), x.meta.shape.rank());
  const Around a = around(x.meta.shape, d);
  const int64_t k = count(index.meta.shape);
  GT_RETURN_IF_ERROR(check_index(args, ctx, 1, a.n, d));
  GT_LAUNCH(launch_index_select(x.storage->data(), index.storage->data(), code(index.meta.dtype),
                                out_ptr(args), a.outer, a.n, k, a.inner,
                                static_cast<int>(dtype_size(x.meta.dtype)), ctx.stream));
  return Status::ok();
}

// The index's positions (contiguous) with another same-rank tensor's strides, 0 along `dim`.
NdDesc index_desc(const Shape& index_shape, std::initializer_list<std::array<int64_t, kMaxRank>> st,
                  int d) {
  cpu::NdIter<3> it(index_shape);
  it.stride[0] = contiguous_strides(index_shape);
  int p = 1;
  for (const auto& s : st) {
    it.stride[p] = s;
    if (index_shape.rank() > 0 && p == 1) it.stride[p][d] = 0;
    ++p;
  }
  it.coalesce();
  NdDesc desc;
  desc.rank = it.rank;
  for (int k = 0; k < it.rank; ++k) {
    desc.shape[k] = it.shape[k];
    desc.stride[0][k] = it.stride[1][k];
    desc.stride[1][k] = it.stride[2][k];
  }
  return desc;
}

Status gather_kernel(const KernelArgs& args, OpContext& ctx) {
  const Tensor& x = in(args, 0);
  const Tensor& index = in(args, 1);
  const Shape& xs = x.meta.shape;
  const int d = normalized_dim(args.attrs.axis(), xs.rank());
  const int64_t n = xs.rank() == 0 ? 1 : xs[d];
  GT_RETURN_IF_ERROR(check_index(args, ctx, 1, n, d));
  const int64_t cnt = count(index.meta.shape);
  if (cnt == 0) return Status::ok();
  const auto xst = contiguous_strides(xs);
  const int64_t dim_stride = xs.rank() == 0 ? 0 : xst[d];
  GT_LAUNCH(launch_gather_index(x.storage->data(), index.storage->data(), code(index.meta.dtype),
                                out_ptr(args), cnt, static_cast<int>(dtype_size(x.meta.dtype)),
                                dim_stride, index_desc(index.meta.shape, {xst}, d), ctx.stream));
  return Status::ok();
}

Status scatter_add_kernel(const KernelArgs& args, OpContext& ctx) {
  const Tensor& x = in(args, 0);
  const Tensor& index = in(args, 1);
  const Tensor& src = in(args, 2);
  const Shape& xs = x.meta.shape;
  const int d = normalized_dim(args.attrs.axis(), xs.rank());
  const int64_t n = xs.rank() == 0 ? 1 : xs[d];
  GT_RETURN_IF_ERROR(check_index(args, ctx, 1, n, d));
  GT_RETURN_IF_ERROR(copy_x(args, ctx));
  const int64_t cnt = count(index.meta.shape);
  if (cnt == 0) return Status::ok();
  const auto xst = contiguous_strides(xs);
  const auto sst = contiguous_strides(src.meta.shape);
  const int64_t dim_stride = xs.rank() == 0 ? 0 : xst[d];
  GT_LAUNCH(launch_scatter_add(out_ptr(args), index.storage->data(), code(index.meta.dtype),
                               src.storage->data(), code(x.meta.dtype), cnt, dim_stride,
                               index_desc(index.meta.shape, {xst, sst}, d), ctx.stream));
  return Status::ok();
}

Status index_add_kernel(const KernelArgs& args, OpContext& ctx) {
  const Tensor& x = in(args, 0);
  const Tensor& index = in(args, 1);
  const Tensor& src = in(args, 2);
  const int d = normalized_dim(args.attrs.axis(), x.meta.shape.rank());
  const Around a = around(x.meta.shape, d);
  const int64_t k = count(index.meta.shape);
  GT_RETURN_IF_ERROR(check_index(args, ctx, 1, a.n, d));
  GT_RETURN_IF_ERROR(copy_x(args, ctx));
  GT_LAUNCH(launch_index_add(out_ptr(args), index.storage->data(), code(index.meta.dtype),
                             src.storage->data(), code(x.meta.dtype), a.outer, a.n, k, a.inner,
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
  GT_ASSIGN_OR_RETURN(int64_t bad, ctx.first_bad_index(labels, classes));
  if (bad >= 0) {
    GT_ASSIGN_OR_RETURN(int64_t v, ctx.index_value(labels, bad));
    return out_of_range("one_hot: class value {} is out of range for num_classes = {}", v,
                        classes);
  }
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
