// Layout ops on CUDA (workerd/cpu/layout.cpp semantics). They only move elements:
//   reshape  a device copy (the executor normally aliases the storage instead)
//   permute  strided gather; a transposing one goes through 32x32 shared-memory tiles
//   slice    strided gather with per-dim start/step (negative steps walk backwards)
//   cat      one cudaMemcpy2DAsync per input (rows of `extent * inner` elements)
//   expand   broadcasting gather
#include "workerd/cpu/nd_iter.h"
#include "workerd/cuda/cuda_ops.h"

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

// Gathers over the output shape with `src_strides` (input elements per output dim), coalesced.
Status gather(const KernelArgs& args, OpContext& ctx,
              const std::array<int64_t, kMaxRank>& src_strides, int64_t base) {
  const Shape& os = args.out.meta.shape;
  const int64_t n = count(os);
  if (n == 0) return Status::ok();
  cpu::NdIter<2> it(os);
  it.stride[0] = cpu::row_major_strides(os);
  it.stride[1] = src_strides;
  it.coalesce();
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
  NdDesc d;
  d.rank = it.rank;
  for (int k = 0; k < it.rank; ++k) {
    d.shape[k] = it.shape[k];
    d.stride[0][k] = it.stride[1][k];
  }
  d.base[0] = base;
  GT_LAUNCH(launch_gather_nd(in_ptr(args, 0), out_ptr(args), n,
                             static_cast<int>(dtype_size(in(args, 0).meta.dtype)), d, ctx.stream));
  return Status::ok();
}

Status permute_kernel(const KernelArgs& args, OpContext& ctx) {
  const Shape& os = args.out.meta.shape;
  const auto xs = cpu::row_major_strides(in(args, 0).meta.shape);
  std::array<int64_t, kMaxRank> st{};
  for (int d = 0; d < os.rank(); ++d) st[d] = xs[args.attrs.ints[d]];
  return gather(args, ctx, st, 0);
}

Status slice_kernel(const KernelArgs& args, OpContext& ctx) {
  const Shape& os = args.out.meta.shape;
  const auto xs = contiguous_strides(in(args, 0).meta.shape);
  std::array<int64_t, kMaxRank> st{};
  int64_t base = 0;
  for (int d = 0; d < os.rank(); ++d) {
    st[d] = xs[d] * args.attrs.slice_step(d);
    base += xs[d] * args.attrs.slice_start(d);
  }
  return gather(args, ctx, st, base);
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

Status cat_kernel(const KernelArgs& args, OpContext& ctx) {
  const Tensor& out = args.out;
  const Shape& os = out.meta.shape;
  if (count(os) == 0) return Status::ok();
  const int axis = normalized_dim(args.attrs.axis(), os.rank());
  const DimSplit split = split_at(os, axis);
  const int64_t outer = split.outer, inner = split.inner;
  const DType dt = out.meta.dtype;
  const size_t es = dtype_size(dt);
  const int64_t out_row = os[axis] * inner;
  auto* dst = static_cast<unsigned char*>(out.storage->data());
  int64_t at = 0;  // element offset of this input's block within an output row
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    const Tensor& t = in(args, i);
    const int64_t row = t.meta.shape[axis] * inner;
    if (row == 0) continue;
    DeviceTemp tmp;
    GT_ASSIGN_OR_RETURN(const void* src, ctx.as_dtype(t, dt, tmp));
    if (outer == 1) {  // one block: a plain copy (no 2-D pitch limits)
      GT_CUDA_CHECK(cudaMemcpyAsync(dst + static_cast<size_t>(at) * es, src,
                                    static_cast<size_t>(row) * es, cudaMemcpyDeviceToDevice,
                                    ctx.stream));
      at += row;
      continue;
    }
    GT_CUDA_CHECK(cudaMemcpy2DAsync(dst + static_cast<size_t>(at) * es,
                                    static_cast<size_t>(out_row) * es, src,
                                    static_cast<size_t>(row) * es, static_cast<size_t>(row) * es,
                                    static_cast<size_t>(outer), cudaMemcpyDeviceToDevice,
                                    ctx.stream));
    at += row;
  }
  return Status::ok();
}

}  // namespace

void register_layout(KernelTable& t) {
  auto set = [&](OpId op, CudaKernel k) { t[static_cast<size_t>(op)] = k; };
  set(OpId::k_reshape, reshape_kernel);
  set(OpId::k_permute, permute_kernel);
  set(OpId::k_slice, slice_kernel);
  set(OpId::k_cat, cat_kernel);
  set(OpId::k_expand, expand_kernel);
}

}  // namespace gt::worker::cuda
