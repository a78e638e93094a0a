// masked_fill and clamp.
//
//   masked_fill(x, mask)  out = broadcast(x, mask) with `value` (converted to x's dtype like a
//                         cast, convert_value; the shape rule keeps integer fills in range)
//                         where mask != 0
//   clamp(x)              out = min(max(x, lo), hi) with either bound optional, in the output
//                         dtype (x converted first when a floating bound lifts an integer x to
//                         float32); lo > hi gives hi everywhere, a NaN x stays NaN; a NaN
//                         bound gives NaN everywhere when both bounds are given and changes
//                         nothing when it is the only one, like torch.clamp on CPU
//                         (clamp_value). Integer bounds saturate to the integer type's range.
#include <cstring>

#include "workerd/cpu/kernels.h"
#include "workerd/kernels/elementwise_math.h"

namespace gt::worker::cpu {
namespace {

Status masked_fill_kernel(const KernelArgs& args) {
  const Tensor& x = in(args, 0);
  const Tensor& mask = in(args, 1);
  const Shape& os = args.out.meta.shape;
  if (count(os) == 0) return Status::ok();
  const DType dt = args.out.meta.dtype;
  const double value = args.attrs.real_at(0);
  const auto* m = static_cast<const uint8_t*>(mask.storage->data());
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T fill = convert_value<T>(value);
    dispatch_size(sizeof(T), [&](auto utag) {
      using U = typename decltype(utag)::type;
      U f;
      std::memcpy(&f, &fill, sizeof(U));
      const U* a = static_cast<const U*>(x.storage->data());
      U* o = static_cast<U*>(out_ptr(args));
      NdIter<3> it = broadcast_iter<3>(os, {&x.meta.shape, &mask.meta.shape});
      it.for_each_row([&](const std::array<int64_t, 3>& off, int64_t len,
                          const std::array<int64_t, 3>& st) {
        U* po = o + off[0];
        const U* pa = a + off[1];
        const uint8_t* pm = m + off[2];
        if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
          for (int64_t i = 0; i < len; ++i) po[i] = pm[i] ? f : pa[i];
        } else {
          for (int64_t i = 0; i < len; ++i)
            po[i * st[0]] = pm[i * st[2]] ? f : pa[i * st[1]];
        }
      });
    });
  });
  return Status::ok();
}

template <class T>
void clamp_loop(const T* __restrict x, T* __restrict y, int64_t n, bool has_lo, double lo_d,
                bool has_hi, double hi_d) {
  using C = compute_t<T>;
  // Integer bounds saturate (a NaN bound never reaches an integer clamp: the shape rule only
  // keeps an integer dtype for integral bounds).
  const C lo = value_as<C>(lo_d), hi = value_as<C>(hi_d);
  const bool lo_nan = is_nan(lo), hi_nan = is_nan(hi);
  for (int64_t i = 0; i < n; ++i)
    y[i] = convert_value<T>(clamp_value(convert_value<C>(x[i]), has_lo, lo, lo_nan, has_hi, hi,
                                        hi_nan));
}

Status clamp_kernel(const KernelArgs& args) {
  const Tensor& x = in(args, 0);
  const int64_t n = count(x.meta.shape);
  if (n == 0) return Status::ok();
  const DType dt = args.out.meta.dtype;
  const bool has_lo = args.attrs.int_at(0) != 0, has_hi = args.attrs.int_at(1) != 0;
  const double lo = args.attrs.real_at(0), hi = args.attrs.real_at(1);
  TempBuffer tmp;
  const void* src = as_dtype(x, dt, tmp);
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    clamp_loop<T>(static_cast<const T*>(src), static_cast<T*>(out_ptr(args)), n, has_lo, lo,
                  has_hi, hi);
  });
  return Status::ok();
}

}  // namespace

void register_fill_clamp(KernelTable& t) {
  t[static_cast<size_t>(OpId::k_masked_fill)] = masked_fill_kernel;
  t[static_cast<size_t>(OpId::k_clamp)] = clamp_kernel;
}

}  // namespace gt::worker::cpu
