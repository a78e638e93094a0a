// Creation ops (the host uploads from_host and host_chunk are no kernels: workerd/backend.cpp).
//   zeros/ones/full  the value converted to the dtype (cast rules: truncation toward zero)
//   arange           element i = start + i*step computed in double, then converted
//   rand / randn     element i = philox::uniform / philox::normal(seed, counter, i), converted;
//                    a uniform that a 16-bit float would round up to 1.0 becomes the largest
//                    value below 1 instead, so rand stays in [0, 1)
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "libgtcore/philox.h"
#include "workerd/cpu/kernels.h"

namespace gt::worker::cpu {
namespace {

Status fill_value(const KernelArgs& args, double value) {
  const int64_t n = count(args.out.meta.shape);
  if (n == 0) return Status::ok();
  dispatch_dtype(args.out.meta.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v = convert_value<T>(value);
    T* o = static_cast<T*>(out_ptr(args));
    std::fill(o, o + n, v);
  });
  return Status::ok();
}

Status zeros_kernel(const KernelArgs& args) {
  const auto nbytes = static_cast<size_t>(args.out.meta.nbytes());
  if (nbytes > 0) std::memset(out_ptr(args), 0, nbytes);
  return Status::ok();
}
Status ones_kernel(const KernelArgs& args) { return fill_value(args, 1.0); }
Status full_kernel(const KernelArgs& args) {
  if (args.out.meta.dtype == DType::kInt64) {
    if (auto e = args.attrs.fill_exact()) {  // exact beyond 2^53, where the double is not
      int64_t* o = static_cast<int64_t*>(out_ptr(args));
      std::fill(o, o + count(args.out.meta.shape), *e);
      return Status::ok();
    }
  }
  return fill_value(args, args.attrs.real_at(0));
}

Status arange_kernel(const KernelArgs& args) {
  const double start = args.attrs.real_at(0), step = args.attrs.real_at(2);
  const int64_t n = count(args.out.meta.shape);
  dispatch_dtype(args.out.meta.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = static_cast<T*>(out_ptr(args));
    for (int64_t i = 0; i < n; ++i)
      o[i] = convert_value<T>(start + static_cast<double>(i) * step);
  });
  return Status::ok();
}

// The largest value below 1 of a 16-bit float: where a uniform just below 1 would round up to
// 1.0, rand gives this instead (so rand stays in [0, 1) like PyTorch's; float32 holds the 24-bit
// uniforms exactly).
template <class T>
T below_one() {
  if constexpr (std::is_same_v<T, half>) return T(1.0f - 0x1p-11f);
  else return T(1.0f - 0x1p-8f);
}

constexpr int64_t kRandomGrain = 1 << 15;  // elements per thread, at least

struct ShardIndex {
  bool active = false;
  int64_t local = 1, offset = 0, global = 1, inner = 1;
  int64_t global_index(int64_t i) const {
    const int64_t block = local * inner;
    const int64_t outer = i / block, a = (i / inner) % local, in = i % inner;
    return (outer * global + a + offset) * inner + in;
  }
};

template <bool kNormal>
Status random_kernel(const KernelArgs& args) {
  const uint64_t seed = args.attrs.seed(), counter = args.attrs.counter();
  const int64_t n = count(args.out.meta.shape);
  if (!is_floating(args.out.meta.dtype))
    return unimplemented("{}: dtype {}", op_name(args.op), dtype_name(args.out.meta.dtype));
  // A shard of a random tensor (ints {seed, counter, axis, offset, global extent}): element i
  // takes the value of its position in the whole tensor, so shards match the unsharded values.
  ShardIndex shard;
  if (auto rs = args.attrs.random_shard()) {  // axis checked by the shape rule
    const DimSplit g = split_at(args.out.meta.shape, rs->axis);
    shard.active = true;
    shard.local = g.n;
    shard.offset = rs->offset;
    shard.global = rs->global;
    shard.inner = g.inner;
  }
  dispatch_dtype(args.out.meta.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = static_cast<T*>(out_ptr(args));
    parallel_for(n, kRandomGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const auto idx = static_cast<uint64_t>(shard.active ? shard.global_index(i) : i);
        if constexpr (std::is_same_v<T, double>) {
          o[i] = kNormal ? philox::normal64(seed, counter, idx)
                         : philox::uniform64(seed, counter, idx);
          continue;
        }
        const float v = kNormal ? philox::normal(seed, counter, idx)
                                : philox::uniform(seed, counter, idx);
        o[i] = convert_value<T>(v);
        if constexpr (is_half_v<T>) {
          if (!kNormal && static_cast<float>(o[i]) >= 1.0f) o[i] = below_one<T>();
        }
      }
    });
  });
  return Status::ok();
}

}  // namespace

void register_creation(KernelTable& t) {
  auto set = [&](OpId op, CpuKernel k) { t[static_cast<size_t>(op)] = k; };
  set(OpId::k_zeros, zeros_kernel);
  set(OpId::k_ones, ones_kernel);
  set(OpId::k_full, full_kernel);
  set(OpId::k_arange, arange_kernel);
  set(OpId::k_rand, random_kernel<false>);
  set(OpId::k_randn, random_kernel<true>);
}

}  // namespace gt::worker::cpu
