// parallel_for / split_flat: split a kernel's flat pass over the process's compute threads
// (compute_pool.h; no OpenMP).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "workerd/cpu/compute_pool.h"
#include "workerd/kernels/nd_iter.h"

namespace gt::worker::cpu {

// How many threads parallel_for may use (hardware threads, at most 8).
int max_threads();

namespace detail {
// f(begin, end) over [0, n) in `parts` equal contiguous parts on the compute pool (the call
// returns when every part has run); one part (or none) on the calling thread.
template <class F>
void run_in_parts(int64_t n, int64_t parts, F&& f) {
  if (parts <= 1) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
  const int64_t size = (n + parts - 1) / parts;
  ComputePool::instance().run(static_cast<int>(parts), [&](int part) {
    const int64_t b = part * size;
    if (b < n) f(b, std::min(n, b + size));
  });
}
}  // namespace detail

// Runs f(begin, end) over contiguous chunks of [0, n): on the calling thread alone unless there
// are at least 2 * grain elements, else split over up to max_threads() threads of the compute
// pool (the call returns when every chunk has run). The grain says how much work pays for a
// part: expensive per-element work (random numbers, transcendental functions) splits sooner
// than memory-bound loops (split_flat below). f must not throw.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  const int64_t threads = ComputePool::instance().threads();
  detail::run_in_parts(n, std::min<int64_t>(threads, grain > 0 ? n / grain : 1), f);
}

// Runs f(begin, end) over [0, n) in parts of about `chunk` elements (equal parts, as many as a
// multiple of the pool's threads), each taken by whichever thread of the pool is free when it
// finishes its previous one: for long passes (a fused chain over millions of elements), where a
// helper whose core is taken for a while by another process of the box leaves its share to the
// others instead of the whole job waiting for it (parallel_for's one part per thread waits for
// the slowest). As parallel_for below 2 * grain elements: on the calling thread alone.
template <class F>
void parallel_chunks(int64_t n, int64_t grain, int64_t chunk, F&& f) {
  const int64_t threads = ComputePool::instance().threads();
  int64_t parts = 1;
  if (threads > 1 && grain > 0 && n >= 2 * grain) {
    chunk = std::max({chunk, grain, n / (int64_t{1} << 30) + 1});  // (parts are counted in an int)
    parts = (n + chunk - 1) / chunk;
    parts = std::min((parts + threads - 1) / threads * threads, n / grain);
  }
  detail::run_in_parts(n, parts, f);
}

// Elements per part for the memory-bound loops (an add, a cast, a select): a pass over 64 K
// float32 takes a few microseconds, well above a job's cost on awake helpers, and two cores
// move more bytes than one on the machines measured (docs/PERFORMANCE.md).
constexpr int64_t kMemoryGrain = int64_t{1} << 16;

// parallel_for for a memory-bound flat loop of n elements.
template <class F>
void split_flat(int64_t n, F&& f) {
  parallel_for(n, kMemoryGrain, std::forward<F>(f));
}

// parallel_for over `rows` independent rows of `row_elems` elements each (a reduction along the
// last dim): parts of whole rows, each at least kMemoryGrain elements.
template <class F>
void split_rows(int64_t rows, int64_t row_elems, F&& f) {
  parallel_for(rows, std::max<int64_t>(1, kMemoryGrain / std::max<int64_t>(1, row_elems)),
               std::forward<F>(f));
}

// it.for_each_row(f) with the outermost (coalesced) dim split over the compute pool when there
// are at least 2 * kMemoryGrain elements (a single coalesced row is split into pieces of it): for
// loops whose operand 0 is the output they write (each part writes its own rows of it). f runs
// on several threads at once.
template <int N, class F>
void split_for_each_row(const NdIter<N>& it, F&& f) {
  const int64_t total = it.numel();
  if (it.rank < 1 || total < 2 * kMemoryGrain) {
    it.for_each_row(f);
    return;
  }
  split_rows(it.shape[0], total / it.shape[0], [&](int64_t b, int64_t e) {
    NdIter<N> part = it;
    part.shape[0] = e - b;
    for (int p = 0; p < N; ++p) part.base[p] += b * it.stride[p][0];
    part.for_each_row(f);
  });
}

}  // namespace gt::worker::cpu
