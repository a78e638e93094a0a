// Layout ops. They only move elements, so they run on the unsigned integer type of the element
// size (four instantiations cover every dtype), except cat, which converts inputs of other
// dtypes to the output dtype.
//   reshape  copies the bytes (the executor normally aliases the storage instead)
//   permute  strided gather over the coalesced output; a transposing inner pair of dims goes
//            through 32x32 tiles so neither side is walked with a large stride for long (4x4
//            SSE blocks inside them for 4-byte elements)
//   slice    per dim start/step (negative steps walk backwards), a strided gather
//   cat      row copies into [outer, sum of extents * inner]
//   expand   the broadcasting copy (kernel_util.cpp)
//   as_strided     a strided gather through the attributes' own strides and offset
//   strided_copy_  the same walk as a scatter into the destination, in place
#include <algorithm>
#include <cstring>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "workerd/cpu/kernels.h"
#include "workerd/kernels/layout_plan.h"

namespace gt::worker::cpu {
namespace {

Status reshape_kernel(const KernelArgs& args) {
  const void* src = in_ptr(args, 0);
  void* dst = out_ptr(args);
  const auto n = static_cast<size_t>(args.out.meta.nbytes());
  if (n > 0 && src != dst) std::memmove(dst, src, n);
  return Status::ok();
}

// A tile of a transpose of 4-byte elements whose source is contiguous down the tile's rows
// (s0 == 1: the usual 2-D transpose): 4x4 blocks through SSE registers (baseline x86-64),
// the edges one element at a time. Bytes are moved, never computed: results are exact.
template <class U>
void transpose_tile(U* o, const U* a, int64_t d0, int64_t s0, int64_t s1, int64_t i0, int64_t i1,
                    int64_t j0, int64_t j1) {
#if defined(__SSE2__)
  if constexpr (sizeof(U) == 4) {
    if (s0 == 1) {
      int64_t i = i0;
      for (; i + 4 <= i1; i += 4) {
        int64_t j = j0;
        for (; j + 4 <= j1; j += 4) {
          const float* src = reinterpret_cast<const float*>(a + i + j * s1);
          __m128 r0 = _mm_loadu_ps(src), r1 = _mm_loadu_ps(src + s1),
                 r2 = _mm_loadu_ps(src + 2 * s1), r3 = _mm_loadu_ps(src + 3 * s1);
          _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
          float* dst = reinterpret_cast<float*>(o + i * d0 + j);
          _mm_storeu_ps(dst, r0);
          _mm_storeu_ps(dst + d0, r1);
          _mm_storeu_ps(dst + 2 * d0, r2);
          _mm_storeu_ps(dst + 3 * d0, r3);
        }
        for (int64_t ii = i; ii < i + 4; ++ii)
          for (int64_t jj = j; jj < j1; ++jj) o[ii * d0 + jj] = a[ii + jj * s1];
      }
      for (; i < i1; ++i)
        for (int64_t j = j0; j < j1; ++j) o[i * d0 + j] = a[i + j * s1];
      return;
    }
  }
#endif
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t j = j0; j < j1; ++j) o[i * d0 + j] = a[i * s0 + j * s1];
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
        transpose_tile(o, a, d0, s0, s1, i0, i1, j0, std::min(cols, j0 + kTile));
      }
    }
  });
}

// A gather of elements of `elem_size` bytes along the coalesced `it`.
void run_gather(const NdIter<2>& it, const void* src, void* dst, size_t elem_size) {
  dispatch_size(elem_size, [&](auto tag) {
    using U = typename decltype(tag)::type;
    gather<U>(it, static_cast<const U*>(src), static_cast<U*>(dst));
  });
}

// permute, slice and as_strided: gathers through their view (layout_plan.h).
template <GatherView (*kView)(const Shape&, const OpAttrs&, int)>
Status gather_kernel(const KernelArgs& args) {
  const Tensor& x = in(args, 0);
  const Shape& os = args.out.meta.shape;
  if (count(os) == 0) return Status::ok();
  run_gather(gather_iter(os, kView(x.meta.shape, args.attrs, os.rank())), x.storage->data(),
             out_ptr(args), dtype_size(x.meta.dtype));
  return Status::ok();
}

// Scatters the contiguous `src` along `it` (operand 0: src, operand 1: the positions written):
// the reverse of gather(). Positions that form one contiguous run coalesce into a single row,
// which is one memcpy.
template <class U>
void scatter(const NdIter<2>& it, const U* src, U* dst) {
  it.for_each_row([&](const std::array<int64_t, 2>& off, int64_t n,
                      const std::array<int64_t, 2>& st) {
    const U* a = src + off[0];
    U* o = dst + off[1];
    if (st[1] == 1) std::memcpy(o, a, static_cast<size_t>(n) * sizeof(U));
    else for (int64_t i = 0; i < n; ++i) o[i * st[1]] = a[i];
  });
}

// strided_copy_(dst, src): dst.flat[offset + sum_d i_d * stride_d] = src[i]. Only those
// positions change (the executor has already given dst private bytes). A source sharing dst's
// bytes is read from a copy, since the scatter would overwrite elements it has yet to read.
Status strided_copy_kernel(const KernelArgs& args) {
  Tensor& dst = args.out;
  const Tensor& src = in(args, 1);
  const Shape& sizes = src.meta.shape;  // == the attributes' sizes (shape rule)
  if (count(sizes) == 0) return Status::ok();
  const size_t es = dtype_size(dst.meta.dtype);
  const auto src_bytes = static_cast<size_t>(src.meta.nbytes());
  const void* sp = src.storage->data();
  TempBuffer tmp;
  if (overlaps(sp, src_bytes, dst.storage->data(), static_cast<size_t>(dst.meta.nbytes()))) {
    void* t = tmp.get(src_bytes);
    std::memcpy(t, sp, src_bytes);
    sp = t;
  }
  const NdIter<2> it = gather_iter(sizes, strided_view(dst.meta.shape, args.attrs, sizes.rank()));
  dispatch_size(es, [&](auto tag) {
    using U = typename decltype(tag)::type;
    scatter<U>(it, static_cast<const U*>(sp), static_cast<U*>(dst.storage->data()));
  });
  return Status::ok();
}

// cat: every input converted to the output dtype, then row copies (layout_plan.h's blocks).
Status cat_kernel(const KernelArgs& args) {
  const DType dt = args.out.meta.dtype;
  const size_t es = dtype_size(dt);
  auto* dst = static_cast<unsigned char*>(out_ptr(args));
  return for_each_cat_block(args, [&](const CatBlock& b) {
    TempBuffer tmp;
    const auto* src = static_cast<const unsigned char*>(as_dtype(*b.input, dt, tmp));
    for (int64_t o = 0; o < b.outer; ++o)
      std::memcpy(dst + static_cast<size_t>(o * b.out_row + b.at) * es,
                  src + static_cast<size_t>(o * b.row) * es, static_cast<size_t>(b.row) * es);
    return Status::ok();
  });
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
  set(OpId::k_permute, gather_kernel<permute_view>);
  set(OpId::k_slice, gather_kernel<slice_view>);
  set(OpId::k_cat, cat_kernel);
  set(OpId::k_expand, expand_kernel);
  set(OpId::k_as_strided, gather_kernel<strided_view>);
  set(OpId::k_strided_copy_, strided_copy_kernel);
}

}  // namespace gt::worker::cpu
