// The CPU kernels' shared helpers: dtype conversion of contiguous runs, converted views of
// inputs and the broadcasting copy.
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <thread>
#include <type_traits>

#include "workerd/cpu/kernels.h"
#include "workerd/cpu/wide_simd.h"

namespace gt::worker::cpu {

namespace {

template <class To, class From>
[[gnu::always_inline]] inline void convert_body(const From* __restrict s, To* __restrict d,
                                                int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = convert_value<To>(s[i]);
}
template <class To, class From>
void convert_loop(const From* __restrict s, To* __restrict d, int64_t n) {
  convert_body(s, d, n);
}
// float16 / bfloat16 <-> float32 in 8-float vectors (the bit manipulations of convert.h and
// half.h, one float add or multiply each, never contracted: bitwise the baseline loop's).
template <class To, class From>
GT_WIDE_SIMD_TARGET void convert_loop_wide(const From* __restrict s, To* __restrict d, int64_t n) {
  convert_body(s, d, n);
}
template <class T>
constexpr bool is_16bit_float = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

}  // namespace

void convert_n(const void* src, DType src_dt, void* dst, DType dst_dt, int64_t n) {
  if (n <= 0) return;
  if (src_dt == dst_dt) {
    std::memcpy(dst, src, static_cast<size_t>(n) * dtype_size(src_dt));
    return;
  }
  dispatch_dtype(src_dt, [&](auto st) {
    using S = typename decltype(st)::type;
    dispatch_dtype(dst_dt, [&](auto dt) {
      using D = typename decltype(dt)::type;
      if constexpr ((is_16bit_float<S> && std::is_same_v<D, float>) ||
                    (is_16bit_float<D> && std::is_same_v<S, float>)) {
        if (wide_simd()) {
          convert_loop_wide<D, S>(static_cast<const S*>(src), static_cast<D*>(dst), n);
          return;
        }
      }
      convert_loop<D, S>(static_cast<const S*>(src), static_cast<D*>(dst), n);
    });
  });
}

bool wide_simd() {
  static const bool wide = [] {
    const char* base = std::getenv("GT_CPU_BASELINE");
    if (base && base[0] == '1') return false;
#if GT_WIDE_SIMD
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
  }();
  return wide;
}

int max_threads() {
  // The CPUs this process may run on (taskset, systemd's CPUAffinity=, a container's cpuset),
  // not the machine's: a worker pinned to one core that split its kernels for two would run
  // both halves on that core, one after the other, with a helper spinning in between.
  static const int n = [] {
    cpu_set_t set;
    int h = 0;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) h = CPU_COUNT(&set);
    if (h <= 0) h = static_cast<int>(std::thread::hardware_concurrency());
    return h <= 0 ? 1 : h > 8 ? 8 : h;
  }();
  return n;
}

const void* as_dtype(const Tensor& t, DType dt, TempBuffer& tmp) {
  if (t.meta.dtype == dt) return t.storage->data();
  int64_t n = count(t.meta.shape);
  void* buf = tmp.get(static_cast<size_t>(n) * dtype_size(dt));
  convert_n(t.storage->data(), t.meta.dtype, buf, dt, n);
  return buf;
}

void broadcast_copy(const void* src, const Shape& src_shape, void* dst, const Shape& out,
                    size_t elem_size) {
  int64_t n = count(out);
  if (n <= 0) return;
  if (count(src_shape) == n) {
    std::memcpy(dst, src, static_cast<size_t>(n) * elem_size);
    return;
  }
  NdIter<2> it = broadcast_iter<2>(out, {&src_shape});
  dispatch_size(elem_size, [&](auto tag) {
    using U = typename decltype(tag)::type;
    auto* d = static_cast<U*>(dst);
    const auto* s = static_cast<const U*>(src);
    it.for_each_row([&](const std::array<int64_t, 2>& off, int64_t len,
                        const std::array<int64_t, 2>& inner) {
      U* o = d + off[0];
      const U* a = s + off[1];
      if (inner[1] == 0) {
        U v = *a;
        for (int64_t i = 0; i < len; ++i) o[i] = v;
      } else if (inner[1] == 1) {
        std::memcpy(o, a, static_cast<size_t>(len) * sizeof(U));
      } else {
        for (int64_t i = 0; i < len; ++i) o[i] = a[i * inner[1]];
      }
    });
  });
}

}  // namespace gt::worker::cpu
