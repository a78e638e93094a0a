// Layout ops. They only move elements, so they run on the unsigned integer type of the element
// size (four instantiations cover every dtype), except cat, which converts inputs of other
// dtypes to the output dtype.
//   reshape  copies the bytes (the executor normally aliases the storage instead)
//   permute  strided gather over the coalesced output; a transposing inner pair of dims goes
//            through 32x32 tiles so neither side is walked with a large stride for long
//   slice    per dim start/step (negative steps walk backwards), a strided gather
//   cat      row copies into [outer, sum of extents * inner]
//   expand   the broadcasting copy (kernel_util.cpp)
#include <algorithm>
#include <cstring>

#include "workerd/cpu/kernels.h"

namespace gt::worker::cpu {
namespace {

Status reshape_kernel(const KernelArgs& args) {
  const void* src = in_ptr(args, 0);
  void* dst = out_ptr(args);
  const auto n = static_cast<size_t>(args.out.meta.nbytes());
  if (n > 0 && src != dst) std::memmove(dst, src, n);
  return Status::ok();
}

// Gathers `it` (operand 0: contiguous dst, operand 1: src) element by element.
template <class U>
void gather(const NdIter<2>& it, const U* src, U* dst) {
  const int r = it.rank;
  const bool transpose = r >= 2 && it.stride[1][r - 1] != 1 && it.stride[1][r - 2] != 0 &&
                         it.shape[r - 1] >= 8 && it.shape[r - 2] >= 8;
  if (!transpose) {
    it.for_each_row([&](const std::array<int64_t, 2>& off, int64_t n,
                        const std::array<int64_t, 2>& st) {
      U* o = dst + off[0];
      const U* a = src + off[1];
      if (st[1] == 1) std::memcpy(o, a, static_cast<size_t>(n) * sizeof(U));
      else for (int64_t i = 0; i < n; ++i) o[i] = a[i * st[1]];
    });
    return;
  }
  // The last two dims as [rows, cols] tiles: dst row stride `cols`, src strides (s0, s1).
  constexpr int64_t kTile = 32;
  const int64_t rows = it.shape[r - 2], cols = it.shape[r - 1];
  const int64_t d0 = it.stride[0][r - 2], s0 = it.stride[1][r - 2], s1 = it.stride[1][r - 1];
  it.for_each_outer(r - 2, [&](const std::array<int64_t, 2>& off) {
    U* o = dst + off[0];
    const U* a = src + off[1];
    for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
      const int64_t i1 = std::min(rows, i0 + kTile);
      for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
        const int64_t j1 = std::min(cols, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = j0; j < j1; ++j) o[i * d0 + j] = a[i * s0 + j * s1];
      }
    }
  });
}

void run_gather(NdIter<2>& it, const void* src, void* dst, size_t elem_size) {
  it.coalesce();
  dispatch_size(elem_size, [&](auto tag) {
    using U = typename decltype(tag)::type;
    gather<U>(it, static_cast<const U*>(src), static_cast<U*>(dst));
  });
}

Status permute_kernel(const KernelArgs& args) {
  const Tensor& x = in(args, 0);
  const Shape& os = args.out.meta.shape;
  if (count(os) == 0) return Status::ok();
  const auto xs = row_major_strides(x.meta.shape);
  NdIter<2> it(os);
  it.stride[0] = row_major_strides(os);
  for (int d = 0; d < os.rank(); ++d) it.stride[1][d] = xs[args.attrs.ints[d]];
  run_gather(it, x.storage->data(), out_ptr(args), dtype_size(x.meta.dtype));
  return Status::ok();
}

Status slice_kernel(const KernelArgs& args) {
  const Tensor& x = in(args, 0);
  const Shape& os = args.out.meta.shape;
  if (count(os) == 0) return Status::ok();
  const auto xs = contiguous_strides(x.meta.shape);
  NdIter<2> it(os);
  it.stride[0] = row_major_strides(os);
  for (int d = 0; d < os.rank(); ++d) {
    it.stride[1][d] = xs[d] * args.attrs.slice_step(d);
    it.base[1] += xs[d] * args.attrs.slice_start(d);
  }
  run_gather(it, x.storage->data(), out_ptr(args), dtype_size(x.meta.dtype));
  return Status::ok();
}

Status cat_kernel(const KernelArgs& args) {
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
    TempBuffer tmp;
    const auto* src = static_cast<const unsigned char*>(as_dtype(t, dt, tmp));
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + static_cast<size_t>(o * out_row + at) * es,
                  src + static_cast<size_t>(o * row) * es, static_cast<size_t>(row) * es);
    at += row;
  }
  return Status::ok();
}

// expand: the input broadcast to the target shape, materialized.
Status expand_kernel(const KernelArgs& args) {
  const Tensor& x = in(args, 0);
  broadcast_copy(x.storage->data(), x.meta.shape, out_ptr(args), args.out.meta.shape,
                 dtype_size(x.meta.dtype));
  return Status::ok();
}

}  // namespace

void register_layout(KernelTable& t) {
  auto set = [&](OpId op, CpuKernel k) { t[static_cast<size_t>(op)] = k; };
  set(OpId::k_reshape, reshape_kernel);
  set(OpId::k_permute, permute_kernel);
  set(OpId::k_slice, slice_kernel);
  set(OpId::k_cat, cat_kernel);
  set(OpId::k_expand, expand_kernel);
}

}  // namespace gt::worker::cpu
