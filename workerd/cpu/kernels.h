// Internal to the CPU backend: the per-family kernel registration functions and the helpers the
// kernel files share (dtype dispatch, element conversion, temporaries, the strided N-d iterator).
//
// Kernels run after CpuBackend::run() has checked that every storage is big enough for its meta
// and that out.meta is exactly infer_meta(op, inputs, attrs): they may rely on consistent metas.
// They may throw std::bad_alloc for temporaries; run() turns that into a ResourceExhausted status.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#include "libgtcore/dtype.h"
#include "libgtcore/half.h"
#include "libgtcore/shape.h"
#include "workerd/backend.h"
#include "workerd/cpu/cpu_backend.h"

namespace gt::worker::cpu {

using KernelTable = std::array<CpuKernel, kNumOps>;

// One registration function per kernel family (one .cpp each).
void register_creation(KernelTable& t);     // zeros ones full arange rand randn from_host host_chunk
void register_binary(KernelTable& t);       // add sub mul div pow maximum minimum eq ne lt le gt ge
void register_unary(KernelTable& t);        // neg exp log sqrt abs relu sigmoid tanh
void register_elementwise(KernelTable& t);  // where cast copy_
void register_reduce(KernelTable& t);       // sum mean max min argmax argmin
void register_matmul(KernelTable& t);       // matmul
void register_layout(KernelTable& t);       // reshape permute slice cat

// Element count of a shape that run() has already validated (Shape::numel() guards against
// overflow with a division per dim, which dominates the cost of tiny ops).
inline int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int d = 0; d < s.rank(); ++d) n *= s[d];
  return n;
}

// ---- dtype dispatch -------------------------------------------------------------------------

template <class T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) with T the storage type of `dt`.
template <class F>
decltype(auto) dispatch_dtype(DType dt, F&& f) {
  switch (dt) {
    case DType::kFloat32: return f(Tag<float>{});
    case DType::kFloat16: return f(Tag<half>{});
    case DType::kBFloat16: return f(Tag<bfloat16>{});
    case DType::kInt32: return f(Tag<int32_t>{});
    case DType::kInt64: return f(Tag<int64_t>{});
    case DType::kBool: break;
  }
  return f(Tag<bool>{});
}

// Calls f(Tag<U>{}) with U an unsigned integer of the element size (for byte-moving kernels).
template <class F>
decltype(auto) dispatch_size(size_t elem_size, F&& f) {
  switch (elem_size) {
    case 1: return f(Tag<uint8_t>{});
    case 2: return f(Tag<uint16_t>{});
    case 4: return f(Tag<uint32_t>{});
    default: break;
  }
  return f(Tag<uint64_t>{});
}

// ---- element conversion ---------------------------------------------------------------------

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;
template <class T>
inline constexpr bool is_float_like_v = std::is_floating_point_v<T> || is_half_v<T>;

// float16 <-> float32 with the same results as half.h (round to nearest even, NaN -> quiet
// NaN, overflow -> inf) but with few branches, so conversion loops stay fast. They assume the
// default floating-point environment (round to nearest, no denormals-are-zero).
inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;
  float f = bits_float(em << 13) * 0x1p112f;                     // normal and subnormal: exact
  if (static_cast<int32_t>(em) >= 0x7c00) f = bits_float((em << 13) | 0x7f800000u);  // inf, NaN
  return bits_float(float_bits(f) | sign);
}
inline uint16_t float_to_half_bits(float value) {
  const uint32_t u = float_bits(value);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t x = u & 0x7fffffffu;
  // All three candidates are computed and one selected (no branches, so loops vectorize):
  // beyond the half range: inf, or a quiet NaN;
  const uint32_t big = static_cast<int32_t>(x) > 0x7f800000 ? 0x7e00u : 0x7c00u;
  // half subnormal or zero: adding 0.5 aligns the half's last bit with float's, and the float
  // adder rounds to nearest even;
  constexpr uint32_t kMagic = 126u << 23;
  const uint32_t tiny = float_bits(bits_float(x) + bits_float(kMagic)) - kMagic;
  // normal: rebias ((15 - 127) << 23, mod 2^32) and round to nearest even (a carry into the
  // exponent, up to inf, is correct).
  const uint32_t normal = (x + 0xc8000fffu + ((x >> 13) & 1u)) >> 13;
  const auto sx = static_cast<int32_t>(x);  // x < 2^31: signed compares are cheaper in SSE2
  const uint32_t o = sx >= 0x47800000 ? big : sx < 0x38800000 ? tiny : normal;
  return static_cast<uint16_t>(o | sign);
}

// The type arithmetic runs in: float for the 16-bit floats, int32 for bool (converted back with
// != 0, so add = or, mul = and, maximum = or, minimum = and), the type itself otherwise.
template <class T> struct compute_type { using type = T; };
template <> struct compute_type<half> { using type = float; };
template <> struct compute_type<bfloat16> { using type = float; };
template <> struct compute_type<bool> { using type = int32_t; };
template <class T> using compute_t = typename compute_type<T>::type;

// NaN test that is simply false for integer types (and vectorizes for floating ones).
template <class C>
inline bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) return v != v;
  else return false;
}

// Floating -> integer: truncates toward zero, saturates at the type's range, NaN gives 0 (C++
// leaves these undefined; PyTorch's results are platform dependent).
template <class To>
inline To float_to_int(double v) {
  if (!(v == v)) return 0;
  constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<To>::max());
  if (v <= lo) return std::numeric_limits<To>::min();
  if (v >= hi) return std::numeric_limits<To>::max();
  return static_cast<To>(v);
}

// Value conversion between any two element/compute types (cast semantics: anything -> bool is
// != 0; floating -> integer as float_to_int; 16-bit floats go through float32).
template <class To, class From>
inline To convert_value(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (is_half_v<From>) return convert_value<float>(v) != 0.0f;
    else return v != From(0);
  } else if constexpr (std::is_same_v<To, half>) {
    half h;
    h.bits = float_to_half_bits(convert_value<float>(v));
    return h;
  } else if constexpr (std::is_same_v<From, half>) {
    return convert_value<To>(half_bits_to_float(v.bits));
  } else if constexpr (std::is_same_v<To, bfloat16>) {
    return bfloat16(convert_value<float>(v));
  } else if constexpr (std::is_same_v<From, bfloat16>) {
    return convert_value<To>(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return float_to_int<To>(static_cast<double>(v));
  } else {
    return static_cast<To>(v);
  }
}

// Converts n contiguous elements between dtypes (same dtype: memcpy).
void convert_n(const void* src, DType src_dt, void* dst, DType dst_dt, int64_t n);

// ---- temporaries ----------------------------------------------------------------------------

// An owned, uninitialized byte buffer (throws std::bad_alloc; run() reports it).
class TempBuffer {
 public:
  void* get(size_t bytes) {
    buf_ = std::make_unique_for_overwrite<unsigned char[]>(bytes == 0 ? 1 : bytes);
    return buf_.get();
  }

 private:
  std::unique_ptr<unsigned char[]> buf_;
};

// The tensor's elements in dtype `dt`: its own storage when the dtype already matches, else a
// converted copy in `tmp`.
const void* as_dtype(const Tensor& t, DType dt, TempBuffer& tmp);

// ---- the strided N-d iterator ---------------------------------------------------------------

// Row-major contiguous element strides of `s` (0 for dims of extent 1, which is equivalent).
std::array<int64_t, kMaxRank> row_major_strides(const Shape& s);

// Element strides of `in` broadcast (numpy rules, right-aligned) to `out`: 0 along broadcast dims.
std::array<int64_t, kMaxRank> broadcast_strides(const Shape& in, const Shape& out);

// Iterates N operands over one index space: operand p's element at multi-index i lives at
// base[p] + sum_d i[d] * stride[p][d]. Operand 0 is by convention the contiguous output.
template <int N>
struct NdIter {
  int rank = 0;
  std::array<int64_t, kMaxRank> shape{};
  std::array<std::array<int64_t, kMaxRank>, N> stride{};
  std::array<int64_t, N> base{};

  NdIter() = default;
  explicit NdIter(const Shape& s) {
    rank = s.rank();
    for (int d = 0; d < rank; ++d) shape[d] = s[d];
  }

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= shape[d];
    return n;
  }

  // Drops extent-1 dims and merges neighbours that are contiguous for every operand, so a
  // same-shape or trailing-broadcast case becomes one long inner row.
  void coalesce() {
    int r = 0;
    for (int d = 0; d < rank; ++d) {
      if (shape[d] == 1) continue;
      if (r > 0) {
        bool mergeable = true;
        for (int p = 0; p < N; ++p)
          if (stride[p][r - 1] != stride[p][d] * shape[d]) mergeable = false;
        if (mergeable) {
          shape[r - 1] *= shape[d];
          for (int p = 0; p < N; ++p) stride[p][r - 1] = stride[p][d];
          continue;
        }
      }
      shape[r] = shape[d];
      for (int p = 0; p < N; ++p) stride[p][r] = stride[p][d];
      ++r;
    }
    if (r == 0) {  // a single element
      shape[0] = 1;
      for (int p = 0; p < N; ++p) stride[p][0] = 0;
      r = 1;
    }
    rank = r;
  }

  // Calls f(off, n, inner) for every row of the innermost dim: off[p] is operand p's element
  // offset of the row start, n the row length, inner[p] operand p's stride along the row.
  template <class F>
  void for_each_row(F&& f) const {
    if (numel() == 0) return;
    std::array<int64_t, N> inner{};
    if (rank == 0) {
      f(base, int64_t{1}, inner);
      return;
    }
    for (int p = 0; p < N; ++p) inner[p] = stride[p][rank - 1];
    for_each_outer(rank - 1, [&](const std::array<int64_t, N>& off) {
      f(off, shape[rank - 1], inner);
    });
  }

  // Calls g(off) for every index of dims [0, outer_rank) (the rest is the caller's business).
  template <class G>
  void for_each_outer(int outer_rank, G&& g) const {
    std::array<int64_t, kMaxRank> idx{};
    std::array<int64_t, N> off = base;
    for (int d = 0; d < outer_rank; ++d)
      if (shape[d] == 0) return;
    while (true) {
      g(off);
      int d = outer_rank - 1;
      for (; d >= 0; --d) {
        if (++idx[d] < shape[d]) {
          for (int p = 0; p < N; ++p) off[p] += stride[p][d];
          break;
        }
        for (int p = 0; p < N; ++p) off[p] -= stride[p][d] * (shape[d] - 1);
        idx[d] = 0;
      }
      if (d < 0) return;
    }
  }
};

// An iterator over `out` (contiguous, operand 0) and inputs broadcast to it (operands 1..N-1).
template <int N>
NdIter<N> broadcast_iter(const Shape& out, const std::array<const Shape*, N - 1>& ins) {
  NdIter<N> it(out);
  it.stride[0] = row_major_strides(out);
  for (int p = 1; p < N; ++p) it.stride[p] = broadcast_strides(*ins[p - 1], out);
  it.coalesce();
  return it;
}

// Copies elements (of the unsigned type U of their size) from `src` broadcast to the
// contiguous `dst` of shape `out` (src's shape must broadcast to out).
void broadcast_copy(const void* src, const Shape& src_shape, void* dst, const Shape& out,
                    size_t elem_size);

// ---- threads ---------------------------------------------------------------------------------

// How many threads parallel_for may use (hardware threads, at most 8).
int max_threads();

// Runs f(begin, end) over contiguous chunks of [0, n): on the calling thread alone unless there
// are at least 2 * grain elements, else split over up to max_threads() std::threads (joined
// before returning). For expensive per-element work only (random numbers, transcendental
// functions); memory-bound loops do not gain. f must not throw. If a thread cannot be started,
// its chunk runs on the calling thread.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  const int64_t parts = std::min<int64_t>(max_threads(), grain > 0 ? n / grain : 1);
  if (parts <= 1) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
  const int64_t chunk = (n + parts - 1) / parts;
  std::vector<std::thread> threads;
  int64_t launched = 1;  // chunk 0 is the caller's
  try {
    threads.reserve(static_cast<size_t>(parts - 1));
    for (; launched < parts; ++launched) {
      const int64_t b = launched * chunk, e = std::min(n, b + chunk);
      threads.emplace_back([&f, b, e] { f(b, e); });
    }
  } catch (...) {
    // Out of threads: the rest runs here.
  }
  f(int64_t{0}, std::min(n, chunk));
  for (int64_t p = launched; p < parts; ++p) f(p * chunk, std::min(n, (p + 1) * chunk));
  for (auto& t : threads) t.join();
}

// Small helpers.
inline const Tensor& in(const KernelArgs& a, size_t i) { return *a.inputs[i]; }
inline void* out_ptr(const KernelArgs& a) { return a.out.storage->data(); }
inline const void* in_ptr(const KernelArgs& a, size_t i) { return a.inputs[i]->storage->data(); }

}  // namespace gt::worker::cpu
