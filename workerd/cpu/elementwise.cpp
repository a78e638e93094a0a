// where (three-way broadcast), cast and copy_ (broadcast + convert into an existing tensor).
#include <cstdint>
#include <cstring>

#include "workerd/cpu/kernels.h"
#include "workerd/kernels/elementwise_plan.h"

namespace gt::worker::cpu {
namespace {

// where(cond, a, b): out dtype = promote(a, b); a and b are converted to it first, then the
// selection only moves elements (of the unsigned type of their size). cond bytes are tested
// != 0, so a bool tensor holding bytes other than 0/1 still behaves.
Status where_kernel(const KernelArgs& args) {
  const Tensor& out = args.out;
  const int64_t n = count(out.meta.shape);
  if (n == 0) return Status::ok();
  const DType dt = out.meta.dtype;
  TempBuffer ta, tb;
  const void* va = as_dtype(in(args, 1), dt, ta);
  const void* vb = as_dtype(in(args, 2), dt, tb);
  const auto* c = static_cast<const uint8_t*>(in_ptr(args, 0));
  const Shape& sc = in(args, 0).meta.shape;
  const Shape& sa = in(args, 1).meta.shape;
  const Shape& sb = in(args, 2).meta.shape;
  dispatch_size(dtype_size(dt), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* a = static_cast<const U*>(va);
    const U* b = static_cast<const U*>(vb);
    U* o = static_cast<U*>(out.storage->data());
    // Both operands are read and one kept without a branch: with a mask that follows the data
    // (a relu's gradient) `c ? a : b` mispredicted about every other element, ~3 ns each (0.66 ms
    // for a [256, 784] float32 where). The common shapes (everything full, or one operand a
    // single value, as where(mask, 0.0, g) gives) have loops of their own that vectorize.
    const bool full_c = count(sc) == n;
    if (full_c && count(sa) == n && count(sb) == n) {
      split_flat(n, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) o[i] = select_bits(c[i], a[i], b[i]);
      });
      return;
    }
    if (full_c && count(sa) == 1 && count(sb) == n) {
      const U av = a[0];
      split_flat(n, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) o[i] = select_bits(c[i], av, b[i]);
      });
      return;
    }
    if (full_c && count(sa) == n && count(sb) == 1) {
      const U bv = b[0];
      split_flat(n, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) o[i] = select_bits(c[i], a[i], bv);
      });
      return;
    }
    NdIter<4> it = broadcast_iter<4>(out.meta.shape, {&sc, &sa, &sb});
    split_for_each_row(it, [&](const std::array<int64_t, 4>& off, int64_t len,
                               const std::array<int64_t, 4>& st) {
      U* po = o + off[0];
      const uint8_t* pc = c + off[1];
      const U* pa = a + off[2];
      const U* pb = b + off[3];
      for (int64_t i = 0; i < len; ++i)
        po[i] = select_bits(pc[i * st[1]], pa[i * st[2]], pb[i * st[3]]);
    });
  });
  return Status::ok();
}

// cast: floating -> integer truncates toward zero, NaN / inf / out of range -> the type's minimum
// (PyTorch on x86-64); anything -> bool is != 0 (NaN -> true); see convert_value.
Status cast_kernel(const KernelArgs& args) {
  const DType from = in(args, 0).meta.dtype, to = args.out.meta.dtype;
  const auto* src = static_cast<const char*>(in_ptr(args, 0));
  auto* dst = static_cast<char*>(out_ptr(args));
  const auto fs = static_cast<int64_t>(dtype_size(from));
  const auto ts = static_cast<int64_t>(dtype_size(to));
  split_flat(count(args.out.meta.shape), [&](int64_t b, int64_t e) {
    convert_n(src + b * fs, from, dst + b * ts, to, e - b);
  });
  return Status::ok();
}

// copy_(dst, src): src broadcast to dst's shape and converted to dst's dtype (copy_source()).
Status copy_kernel(const KernelArgs& args) {
  Tensor& dst = args.out;
  const Tensor& src = in(args, 1);
  const CopySource how = copy_source(args);
  if (how == CopySource::kNothing) return Status::ok();
  const void* sp = src.storage->data();
  TempBuffer tmp;
  if (how == CopySource::kConverted) {
    sp = as_dtype(src, dst.meta.dtype, tmp);
  } else if (how == CopySource::kStaged) {
    const auto src_bytes = static_cast<size_t>(src.meta.nbytes());
    void* t = tmp.get(src_bytes);
    std::memcpy(t, sp, src_bytes);
    sp = t;
  }
  broadcast_copy(sp, src.meta.shape, dst.storage->data(), dst.meta.shape,
                 dtype_size(dst.meta.dtype));
  return Status::ok();
}

}  // namespace

void register_elementwise(KernelTable& t) {
  t[static_cast<size_t>(OpId::k_where)] = where_kernel;
  t[static_cast<size_t>(OpId::k_cast)] = cast_kernel;
  t[static_cast<size_t>(OpId::k_copy_)] = copy_kernel;
}

}  // namespace gt::worker::cpu
