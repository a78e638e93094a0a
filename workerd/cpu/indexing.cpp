// Indexing ops: index_select gather scatter_add index_add one_hot.
//
// Index tensors are int64 or int32 (the shape rule allows nothing else). Their VALUES are data the
// shape rule cannot see: every kernel checks all of them against the indexed extent before it
// writes anything, and an index outside [0, n) (negative ones included, like PyTorch) is an
// OutOfRange error on this instruction naming the op, the index and the extent — never an
// out-of-bounds access.
//
//   index_select  x viewed as [outer, n, inner]: row copies of `inner` elements (moves bytes)
//   gather        iterates the index's shape; x's offset = the index position along the other
//                 dims + value * stride of `dim` (moves bytes)
//   scatter_add   out = x, then out[.., index[i], ..] += src[i] over the index's shape
//   index_add     out = x, then out[o, index[j], :] += src[o, j, :]
//   one_hot       int64 zeros with a 1 at each label's class
// The adds run in compute_t (float for 16-bit floats; integers wrap; bool add is or).
#include <cstring>
#include <type_traits>

#include "workerd/cpu/kernels.h"

namespace gt::worker::cpu {
namespace {

using Around = DimSplit;
Around around(const Shape& s, int d) { return split_at(s, d); }

// Calls f(Tag<I>{}) with I the index tensor's element type.
template <class F>
decltype(auto) dispatch_index(DType dt, F&& f) {
  if (dt == DType::kInt32) return f(Tag<int32_t>{});
  return f(Tag<int64_t>{});
}

// Every index value in [0, n), or an OutOfRange status naming the first one that is not.
template <class I>
Status check_indices(const I* idx, int64_t count, int64_t n, OpId op, int dim) {
  for (int64_t i = 0; i < count; ++i) {
    const auto v = static_cast<int64_t>(idx[i]);
    if (v < 0 || v >= n)
      return out_of_range("{}: index {} is out of bounds for dimension {} with size {}",
                          op_name(op), v, dim, n);
  }
  return Status::ok();
}

Status check_index_tensor(const KernelArgs& args, size_t i, int64_t n, int dim) {
  const Tensor& t = in(args, i);
  return dispatch_index(t.meta.dtype, [&](auto tag) {
    using I = typename decltype(tag)::type;
    return check_indices(static_cast<const I*>(t.storage->data()), count(t.meta.shape), n,
                         args.op, dim);
  });
}

// a += b in T's compute type (integers wrap, bool is or).
template <class T>
inline T add_elem(T a, T b) {
  using C = compute_t<T>;
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return convert_value<T>(static_cast<C>(static_cast<U>(convert_value<C>(a)) +
                                           static_cast<U>(convert_value<C>(b))));
  } else {
    return convert_value<T>(convert_value<C>(a) + convert_value<C>(b));
  }
}

// ---- index_select(x, index[k]) -> x with extent k along dim ----
Status index_select_kernel(const KernelArgs& args) {
  const Tensor& x = in(args, 0);
  const Tensor& index = in(args, 1);
  const int d = normalized_dim(args.attrs.axis(), x.meta.shape.rank());
  const Around a = around(x.meta.shape, d);
  const int64_t k = count(index.meta.shape);
  GT_RETURN_IF_ERROR(check_index_tensor(args, 1, a.n, d));
  if (a.outer * k * a.inner == 0) return Status::ok();
  const size_t es = dtype_size(x.meta.dtype);
  const size_t row = static_cast<size_t>(a.inner) * es;
  const auto* src = static_cast<const unsigned char*>(x.storage->data());
  auto* dst = static_cast<unsigned char*>(out_ptr(args));
  dispatch_index(index.meta.dtype, [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* idx = static_cast<const I*>(index.storage->data());
    for (int64_t o = 0; o < a.outer; ++o) {
      const unsigned char* xo = src + static_cast<size_t>(o * a.n) * row;
      unsigned char* yo = dst + static_cast<size_t>(o * k) * row;
      for (int64_t j = 0; j < k; ++j)
        std::memcpy(yo + static_cast<size_t>(j) * row, xo + static_cast<size_t>(idx[j]) * row, row);
    }
  });
  return Status::ok();
}

// An iterator over the index's shape: operand 0 the index (contiguous; also the output for
// gather), operand 1 another tensor of the same rank with strides `st` and 0 along `dim` (its
// position along `dim` comes from the index value).
NdIter<2> index_iter(const Shape& index_shape, const std::array<int64_t, kMaxRank>& st, int d) {
  NdIter<2> it(index_shape);
  it.stride[0] = contiguous_strides(index_shape);
  it.stride[1] = st;
  if (index_shape.rank() > 0) it.stride[1][d] = 0;
  it.coalesce();
  return it;
}

// ---- gather(x, index) -> x's elements at the index's positions, index's shape ----
Status gather_kernel(const KernelArgs& args) {
  const Tensor& x = in(args, 0);
  const Tensor& index = in(args, 1);
  const Shape& xs = x.meta.shape;
  const int d = normalized_dim(args.attrs.axis(), xs.rank());
  const int64_t n = xs.rank() == 0 ? 1 : xs[d];
  GT_RETURN_IF_ERROR(check_index_tensor(args, 1, n, d));
  if (count(index.meta.shape) == 0) return Status::ok();
  const auto xst = contiguous_strides(xs);
  const int64_t dim_stride = xs.rank() == 0 ? 0 : xst[d];
  const NdIter<2> it = index_iter(index.meta.shape, xst, d);
  dispatch_index(index.meta.dtype, [&](auto itag) {
    using I = typename decltype(itag)::type;
    const I* idx = static_cast<const I*>(index.storage->data());
    dispatch_size(dtype_size(x.meta.dtype), [&](auto tag) {
      using U = typename decltype(tag)::type;
      const U* src = static_cast<const U*>(x.storage->data());
      U* dst = static_cast<U*>(out_ptr(args));
      it.for_each_row([&](const std::array<int64_t, 2>& off, int64_t len,
                          const std::array<int64_t, 2>& st) {
        for (int64_t i = 0; i < len; ++i) {
          const int64_t p = off[0] + i * st[0];
          dst[p] = src[off[1] + i * st[1] + static_cast<int64_t>(idx[p]) * dim_stride];
        }
      });
    });
  });
  return Status::ok();
}

// ---- scatter_add(x, index, src) -> x with src[i] added at x[.., index[i], ..] ----
Status scatter_add_kernel(const KernelArgs& args) {
  const Tensor& x = in(args, 0);
  const Tensor& index = in(args, 1);
  const Tensor& src = in(args, 2);
  const Shape& xs = x.meta.shape;
  const int d = normalized_dim(args.attrs.axis(), xs.rank());
  const int64_t n = xs.rank() == 0 ? 1 : xs[d];
  GT_RETURN_IF_ERROR(check_index_tensor(args, 1, n, d));
  const int64_t nx = count(xs);
  if (nx > 0)
    std::memcpy(out_ptr(args), x.storage->data(), static_cast<size_t>(nx) * dtype_size(x.meta.dtype));
  if (count(index.meta.shape) == 0) return Status::ok();
  // Operand 0: the index; operand 1: the output (x's strides, 0 along dim); src's offset of an
  // index position follows from its own strides, so it gets a second iterator in lockstep.
  const auto xst = contiguous_strides(xs);
  const auto sst = contiguous_strides(src.meta.shape);
  const int64_t dim_stride = xs.rank() == 0 ? 0 : xst[d];
  NdIter<3> it(index.meta.shape);
  it.stride[0] = contiguous_strides(index.meta.shape);
  it.stride[1] = xst;
  it.stride[2] = sst;
  if (xs.rank() > 0) it.stride[1][d] = 0;
  it.coalesce();
  dispatch_index(index.meta.dtype, [&](auto itag) {
    using I = typename decltype(itag)::type;
    const I* idx = static_cast<const I*>(index.storage->data());
    dispatch_dtype(x.meta.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* s = static_cast<const T*>(src.storage->data());
      T* y = static_cast<T*>(out_ptr(args));
      it.for_each_row([&](const std::array<int64_t, 3>& off, int64_t len,
                          const std::array<int64_t, 3>& st) {
        for (int64_t i = 0; i < len; ++i) {
          const int64_t p = off[0] + i * st[0];
          T& o = y[off[1] + i * st[1] + static_cast<int64_t>(idx[p]) * dim_stride];
          o = add_elem(o, s[off[2] + i * st[2]]);
        }
      });
    });
  });
  return Status::ok();
}

// ---- index_add(x, index[k], src) -> x with src's k slices along dim added at index ----
Status index_add_kernel(const KernelArgs& args) {
  const Tensor& x = in(args, 0);
  const Tensor& index = in(args, 1);
  const Tensor& src = in(args, 2);
  const int d = normalized_dim(args.attrs.axis(), x.meta.shape.rank());
  const Around a = around(x.meta.shape, d);
  const int64_t k = count(index.meta.shape);
  GT_RETURN_IF_ERROR(check_index_tensor(args, 1, a.n, d));
  const int64_t nx = count(x.meta.shape);
  if (nx > 0)
    std::memcpy(out_ptr(args), x.storage->data(), static_cast<size_t>(nx) * dtype_size(x.meta.dtype));
  if (a.outer * k * a.inner == 0) return Status::ok();
  dispatch_index(index.meta.dtype, [&](auto itag) {
    using I = typename decltype(itag)::type;
    const I* idx = static_cast<const I*>(index.storage->data());
    dispatch_dtype(x.meta.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* s = static_cast<const T*>(src.storage->data());
      T* y = static_cast<T*>(out_ptr(args));
      for (int64_t o = 0; o < a.outer; ++o) {
        for (int64_t j = 0; j < k; ++j) {
          T* yr = y + (o * a.n + static_cast<int64_t>(idx[j])) * a.inner;
          const T* sr = s + (o * k + j) * a.inner;
          for (int64_t i = 0; i < a.inner; ++i) yr[i] = add_elem(yr[i], sr[i]);
        }
      }
    });
  });
  return Status::ok();
}

// ---- one_hot(labels) -> int64 [..., num_classes] ----
Status one_hot_kernel(const KernelArgs& args) {
  const Tensor& labels = in(args, 0);
  const Shape& os = args.out.meta.shape;
  const int64_t classes = os[os.rank() - 1];
  const int64_t n = count(labels.meta.shape);
  Status st = dispatch_index(labels.meta.dtype, [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* l = static_cast<const I*>(labels.storage->data());
    for (int64_t i = 0; i < n; ++i) {
      const auto v = static_cast<int64_t>(l[i]);
      if (v < 0 || v >= classes)
        return out_of_range("one_hot: class value {} is out of range for num_classes = {}", v,
                            classes);
    }
    return Status::ok();
  });
  GT_RETURN_IF_ERROR(st);
  auto* y = static_cast<int64_t*>(out_ptr(args));
  const int64_t total = count(os);
  if (total == 0) return Status::ok();
  std::memset(y, 0, static_cast<size_t>(total) * sizeof(int64_t));
  dispatch_index(labels.meta.dtype, [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* l = static_cast<const I*>(labels.storage->data());
    for (int64_t i = 0; i < n; ++i) y[i * classes + static_cast<int64_t>(l[i])] = 1;
  });
  return Status::ok();
}

}  // namespace

void register_indexing(KernelTable& t) {
  auto set = [&](OpId op, CpuKernel k) { t[static_cast<size_t>(op)] = k; };
  set(OpId::k_index_select, index_select_kernel);
  set(OpId::k_gather, gather_kernel);
  set(OpId::k_scatter_add, scatter_add_kernel);
  set(OpId::k_index_add, index_add_kernel);
  set(OpId::k_one_hot, one_hot_kernel);
}

}  // namespace gt::worker::cpu
