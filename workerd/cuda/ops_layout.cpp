// Layout ops on CUDA (workerd/cpu/layout.cpp semantics). They only move elements:
//   reshape  a device copy (the executor normally aliases the storage instead)
//   permute  strided gather; a transposing one goes through 32x32 shared-memory tiles
//   slice    strided gather with per-dim start/step (negative steps walk backwards)
//   cat      one cudaMemcpy2DAsync per input (rows of `extent * inner` elements)
//   expand   broadcasting gather
//   as_strided     strided gather through the attributes' own strides and offset
//   strided_copy_  the same walk as a scatter into the destination, in place
#include "workerd/cuda/cuda_ops.h"
#include "workerd/kernels/layout_plan.h"

namespace gt::worker::cuda {
namespace {

Status reshape_kernel(const KernelArgs& args, OpContext& ctx) {
  const void* src = in_ptr(args, 0);
  void* dst = out_ptr(args);
  const auto n = static_cast<size_t>(args.out.meta.nbytes());
  if (n > 0 && src != dst)
    GT_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, ctx.stream));
  return Status::ok();
}

// The strided operand of a gather iterator (operand 1) as input 0 of a launch descriptor.
NdDesc view_desc(const NdIter<2>& it) {
  NdDesc d;
  d.rank = it.rank;
  for (int k = 0; k < it.rank; ++k) {
    d.shape[k] = it.shape[k];
    d.stride[0][k] = it.stride[1][k];
  }
  d.base[0] = it.base[1];
  return d;
}

// permute, slice and as_strided: gathers through their view (layout_plan.h).
template <GatherView (*kView)(const Shape&, const OpAttrs&, int)>
Status gather_kernel(const KernelArgs& args, OpContext& ctx) {
  const Shape& os = args.out.meta.shape;
  const int64_t n = count(os);
  if (n == 0) return Status::ok();
  const NdIter<2> it = gather_iter(os, kView(in(args, 0).meta.shape, args.attrs, os.rank()));
  const int64_t base = it.base[1];
  const int r = it.rank;
  const int elem = static_cast<int>(dtype_size(in(args, 0).meta.dtype));
  // A transposing gather (the input is contiguous along an output dim j before the last, as
  // after transpose/permute): tiles, as the CPU does, when both tiled extents are worth it.
  int j = -1;
  for (int k = 0; k + 1 < r; ++k)
    if (it.stride[1][k] == 1) j = k;
  if (j >= 0 && it.stride[1][r - 1] != 1 && it.shape[j] >= 8 && it.shape[r - 1] >= 8 &&
      (it.shape[j] + 31) / 32 <= 65535) {
    TiledDesc t;
    t.rows = it.shape[j];
    t.cols = it.shape[r - 1];
    t.in_col_stride = it.stride[1][r - 1];
    t.out_row_stride = it.stride[0][j];
    t.in_base = base;
    for (int k = 0; k + 1 < r; ++k) {
      if (k == j) continue;
      t.batch_shape[t.batch_rank] = it.shape[k];
      t.batch_in_stride[t.batch_rank] = it.stride[1][k];
      t.batch_out_stride[t.batch_rank] = it.stride[0][k];
      ++t.batch_rank;
    }
    GT_LAUNCH(launch_gather_tiled(in_ptr(args, 0), out_ptr(args), elem, t, ctx.stream));
    return Status::ok();
  }
  GT_LAUNCH(launch_gather_nd(in_ptr(args, 0), out_ptr(args), n, elem, view_desc(it), ctx.stream));
  return Status::ok();
}

// strided_copy_(dst, src): dst.flat[offset + sum_d i_d * stride_d] = src[i], only those
// positions (the executor has already given dst private bytes). A source sharing dst's bytes is
// read from a copy: the scatter would overwrite elements it has yet to read.
Status strided_copy_kernel(const KernelArgs& args, OpContext& ctx) {
  Tensor& dst = args.out;
  const Tensor& src = in(args, 1);
  const Shape& sizes = src.meta.shape;  // == the attributes' sizes (shape rule)
  const int64_t n = count(sizes);
  if (n == 0) return Status::ok();
  const size_t es = dtype_size(dst.meta.dtype);
  const auto src_bytes = static_cast<size_t>(src.meta.nbytes());
  const void* sp = src.storage->data();
  auto* dp = static_cast<unsigned char*>(dst.storage->data());
  DeviceTemp tmp;
  if (overlaps(sp, src_bytes, dp, static_cast<size_t>(dst.meta.nbytes()))) {
    GT_ASSIGN_OR_RETURN(tmp, ctx.temp(src_bytes));
    GT_CUDA_CHECK(cudaMemcpyAsync(tmp.get(), sp, src_bytes, cudaMemcpyDeviceToDevice, ctx.stream));
    sp = tmp.get();
  }
  const NdIter<2> it = gather_iter(sizes, strided_view(dst.meta.shape, args.attrs, sizes.rank()));
  if (it.rank == 1 && it.stride[1][0] == 1) {  // one contiguous run of positions
    GT_CUDA_CHECK(cudaMemcpyAsync(dp + static_cast<size_t>(it.base[1]) * es, sp, src_bytes,
                                  cudaMemcpyDeviceToDevice, ctx.stream));
    return Status::ok();
  }
  GT_LAUNCH(launch_scatter_nd(sp, dp, n, static_cast<int>(es), view_desc(it), ctx.stream));
  return Status::ok();
}

Status expand_kernel(const KernelArgs& args, OpContext& ctx) {
  const Tensor& x = in(args, 0);
  const Shape& os = args.out.meta.shape;
  const int64_t n = count(os);
  if (n == 0) return Status::ok();
  if (count(x.meta.shape) == n) {
    GT_CUDA_CHECK(cudaMemcpyAsync(out_ptr(args), x.storage->data(),
                                  static_cast<size_t>(args.out.meta.nbytes()),
                                  cudaMemcpyDeviceToDevice, ctx.stream));
    return Status::ok();
  }
  GT_LAUNCH(launch_gather_nd(x.storage->data(), out_ptr(args), n,
                             static_cast<int>(dtype_size(x.meta.dtype)),
                             broadcast_desc(os, {&x.meta.shape}), ctx.stream));
  return Status::ok();
}

// cat: every input converted to the output dtype, then one 2-D copy per input (layout_plan.h's
// blocks).
Status cat_kernel(const KernelArgs& args, OpContext& ctx) {
  const DType dt = args.out.meta.dtype;
  const size_t es = dtype_size(dt);
  auto* dst = static_cast<unsigned char*>(out_ptr(args));
  return for_each_cat_block(args, [&](const CatBlock& b) -> Status {
    DeviceTemp tmp;
    GT_ASSIGN_OR_RETURN(const void* src, ctx.as_dtype(*b.input, dt, tmp));
    if (b.outer == 1) {  // one block: a plain copy (no 2-D pitch limits)
      GT_CUDA_CHECK(cudaMemcpyAsync(dst + static_cast<size_t>(b.at) * es, src,
                                    static_cast<size_t>(b.row) * es, cudaMemcpyDeviceToDevice,
                                    ctx.stream));
      return Status::ok();
    }
    GT_CUDA_CHECK(cudaMemcpy2DAsync(dst + static_cast<size_t>(b.at) * es,
                                    static_cast<size_t>(b.out_row) * es, src,
                                    static_cast<size_t>(b.row) * es,
                                    static_cast<size_t>(b.row) * es,
                                    static_cast<size_t>(b.outer), cudaMemcpyDeviceToDevice,
                                    ctx.stream));
    return Status::ok();
  });
}

}  // namespace

void register_layout(KernelTable& t) {
  auto set = [&](OpId op, CudaKernel k) { t[static_cast<size_t>(op)] = k; };
  set(OpId::k_reshape, reshape_kernel);
  set(OpId::k_permute, gather_kernel<permute_view>);
  set(OpId::k_slice, gather_kernel<slice_view>);
  set(OpId::k_cat, cat_kernel);
  set(OpId::k_expand, expand_kernel);
  set(OpId::k_as_strided, gather_kernel<strided_view>);
  set(OpId::k_strided_copy_, strided_copy_kernel);
}

}  // namespace gt::worker::cuda
