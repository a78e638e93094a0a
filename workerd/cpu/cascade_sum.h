// Floating sums: PyTorch's CPU "cascade sum" (aten/src/ATen/native/cpu/SumKernel.cpp), whose
// order of float32 additions this reproduces for its AVX2 build (vectors of 8 float lanes), so
// that results, overflow included, are torch's: bit for bit on one thread for float32 and
// bfloat16 (float16: the same order, unverified bit for bit; a float32 sum of float16 values
// cannot overflow anyway). Running sums are fed one row at a time; every 2^p rows (p >= 4) the
// level-0 sums move up a level, and up again when that completes a higher digit, so additions
// join sums of similar size: the error grows like a pairwise sum's, not a running sum's, with
// O(1) extra storage.
//
// Shared by the reductions (reduce.cpp) and the fused chains that end in one (fused_chain.cpp):
// a contiguous sum reads its values through a source, src(i, len) -> the address of values
// [i, i + len), asked for in increasing i, never more than 4 vector loads (32 float32 values) at
// a time and never across a multiple of 4 vector loads -- a plain array, or
// a chain computing its values a block at a time -- so both add the same values in the same
// order and agree bit for bit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "workerd/kernels/convert.h"
#include "workerd/kernels/numeric.h"

namespace gt::worker::cpu {

constexpr int kLevels = 4;
constexpr int kLanes = 8;  // one AVX2 vector of float32

inline int64_t ceil_log2(int64_t x) {
  return x <= 2 ? 1 : 64 - __builtin_clzll(static_cast<uint64_t>(x - 1));
}

// `width` running sums over `rows` rows; add_row(i, level0) adds row i into level0[0, width).
// acc holds kLevels * width floats; the sums end in acc[0, width).
template <class S, class AddRow>
void cascade(S* acc, int64_t width, int64_t rows, AddRow&& add_row) {
  std::fill(acc, acc + kLevels * width, S(0));
  const int64_t power = std::max<int64_t>(4, ceil_log2(rows) / kLevels);
  const int64_t step = int64_t{1} << power, mask = step - 1;
  int64_t i = 0;
  while (i + step <= rows) {
    for (int64_t j = 0; j < step; ++j, ++i) add_row(i, acc);
    for (int l = 1; l < kLevels; ++l) {
      S* __restrict up = acc + l * width;
      S* __restrict down = up - width;
      for (int64_t k = 0; k < width; ++k) {
        up[k] += down[k];
        down[k] = S(0);
      }
      if ((i & (mask << (l * power))) != 0) break;
    }
  }
  for (; i < rows; ++i) add_row(i, acc);
  for (int l = 1; l < kLevels; ++l)
    for (int64_t k = 0; k < width; ++k) acc[k] += acc[l * width + k];
}

// The sums run in math_t<T>: float32 (torch's order, see above), double for float64.
template <class T>
inline math_t<T> ld(T v) {
  return convert_value<math_t<T>>(v);
}

// Elements per vector load of T (one AVX2 register: 8 floats, 16 16-bit floats), and lane k of
// the 8 float lanes such a load feeds: a 16-bit vector is folded to 8 lanes as torch does
// (bfloat16: its two halves added; float16, torch's generic path: adjacent pairs).
template <class T>
constexpr int kVecElems = is_half_v<T> ? 2 * kLanes : kLanes;

template <class T>
inline math_t<T> vec_lane(const T* __restrict v, int k) {
  if constexpr (std::is_same_v<T, bfloat16>) return ld(v[k]) + ld(v[k + kLanes]);
  else if constexpr (is_half_v<T>) return (0.0f + ld(v[2 * k])) + ld(v[2 * k + 1]);
  else return ld(v[k]);
}

// n values `stride` apart, as 4 interleaved running sums (value i feeds sum i % 4, cascaded)
// added together at the end: torch's row_sum.
template <class T>
math_t<T> row_sum4(const T* x, int64_t stride, int64_t n) {
  using S = math_t<T>;
  S acc[kLevels * 4];
  const int64_t groups = n / 4;
  cascade(acc, 4, groups, [&](int64_t g, S* __restrict a0) {
    const T* p = x + g * 4 * stride;
    for (int k = 0; k < 4; ++k) a0[k] += ld(p[k * stride]);
  });
  for (int64_t i = groups * 4; i < n; ++i) acc[0] += ld(x[i * stride]);
  return ((acc[0] + acc[1]) + acc[2]) + acc[3];
}

// A contiguous row of n values from `src` (see above): vector loads as 4 interleaved vector sums
// (32 lanes, cascaded), the vectors left over into the first, the 4 folded into one; then the
// scalar tail in order and the kLanes lanes added to it in order (torch's vectorized_inner_sum).
// Rows shorter than a vector: row_sum4.
template <class T, class Src>
math_t<T> row_sum_from(int64_t n, Src&& src) {
  using S = math_t<T>;
  constexpr int64_t kE = kVecElems<T>;
  if (n < kE) return row_sum4(src(0, n), 1, n);
  constexpr int kW = 4 * kLanes;
  S acc[kLevels * kW];
  const int64_t vecs = n / kE, groups = vecs / 4;
  cascade(acc, kW, groups, [&](int64_t g, S* __restrict a0) {
    const T* __restrict x = src(4 * g * kE, 4 * kE);
    for (int q = 0; q < 4; ++q) {
      const T* __restrict v = x + q * kE;
      for (int k = 0; k < kLanes; ++k) a0[q * kLanes + k] += vec_lane(v, k);
    }
  });
  // What is left (fewer than 4 vectors, then a scalar tail) is one run at the end.
  const int64_t rest = groups * 4 * kE;
  const T* __restrict tail = n > rest ? src(rest, n - rest) : nullptr;
  for (int64_t v = groups * 4; v < vecs; ++v)
    for (int k = 0; k < kLanes; ++k) acc[k] += vec_lane(tail + (v * kE - rest), k);
  for (int q = 1; q < 4; ++q)
    for (int k = 0; k < kLanes; ++k) acc[k] += acc[q * kLanes + k];
  S total = S(0);
  for (int64_t i = vecs * kE; i < n; ++i) total += ld(tail[i - rest]);
  for (int k = 0; k < kLanes; ++k) total += acc[k];
  return total;
}

template <class T>
math_t<T> row_sum_contiguous(const T* __restrict x, int64_t n) {
  return row_sum_from<T>(n, [x](int64_t i, int64_t) { return x + i; });
}

}  // namespace gt::worker::cpu
