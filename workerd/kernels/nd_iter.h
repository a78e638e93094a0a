// The strided N-d iterator: broadcast strides and coalescing for the CPU kernels' loops and for
// the CUDA backend's launch descriptors (the device walks what the host coalesced here).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "libgtcore/shape.h"

namespace gt::worker {

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

}  // namespace gt::worker
