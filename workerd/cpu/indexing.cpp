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
#include "workerd/kernels/index_plan.h"

namespace gt::worker::cpu {
namespace {

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

// The index tensor's values against the plan's extent.
Status check_index_tensor(const KernelArgs& args, const IndexPlan& p) {
  const Tensor& t = in(args, 1);
  return dispatch_index(t.meta.dtype, [&](auto tag) {
    using I = typename decltype(tag)::type;
    return check_indices(static_cast<const I*>(t.storage->data()), p.count, p.extent, args.op,
                         p.dim);
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

// out = x (scatter_add and index_add then add into it).
void copy_x(const KernelArgs& args) {
  const auto nbytes = static_cast<size_t>(in(args, 0).meta.nbytes());
  if (nbytes > 0) std::memcpy(out_ptr(args), in_ptr(args, 0), nbytes);
}

// ---- index_select(x, index[k]) -> x with extent k along dim ----
Status index_select_kernel(const KernelArgs& args) {
  const IndexPlan p = plan_index(args);
  GT_RETURN_IF_ERROR(check_index_tensor(args, p));
  const DimSplit& a = p.around;
  const int64_t k = p.count;
  if (a.outer * k * a.inner == 0) return Status::ok();
  const Tensor& x = in(args, 0);
  const Tensor& index = in(args, 1);
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

// ---- gather(x, index) -> x's elements at the index's positions, index's shape ----
Status gather_kernel(const KernelArgs& args) {
  const IndexPlan p = plan_index(args);
  GT_RETURN_IF_ERROR(check_index_tensor(args, p));
  if (p.count == 0) return Status::ok();
  const Tensor& x = in(args, 0);
  const Tensor& index = in(args, 1);
  const int64_t dim_stride = p.dim_stride;
  const NdIter<2> it = index_iter<2>(index.meta.shape, {p.x_strides}, p.dim);
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
  const IndexPlan p = plan_index(args);
  GT_RETURN_IF_ERROR(check_index_tensor(args, p));
  copy_x(args);
  if (p.count == 0) return Status::ok();
  const Tensor& x = in(args, 0);
  const Tensor& index = in(args, 1);
  const Tensor& src = in(args, 2);
  // Operand 0: the index; operand 1: the output (x's strides, 0 along dim); operand 2: src (its
  // own strides).
  const int64_t dim_stride = p.dim_stride;
  const NdIter<3> it =
      index_iter<3>(index.meta.shape, {p.x_strides, contiguous_strides(src.meta.shape)}, p.dim);
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
  const IndexPlan p = plan_index(args);
  GT_RETURN_IF_ERROR(check_index_tensor(args, p));
  copy_x(args);
  const DimSplit& a = p.around;
  const int64_t k = p.count;
  if (a.outer * k * a.inner == 0) return Status::ok();
  const Tensor& x = in(args, 0);
  const Tensor& index = in(args, 1);
  const Tensor& src = in(args, 2);
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
