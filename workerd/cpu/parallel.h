// parallel_for: splits expensive per-element kernels over the process's compute threads
// (compute_pool.h; no OpenMP).
#pragma once

#include <algorithm>
#include <cstdint>

#include "workerd/cpu/compute_pool.h"

namespace gt::worker::cpu {

// How many threads parallel_for may use (hardware threads, at most 8).
int max_threads();

// Runs f(begin, end) over contiguous chunks of [0, n): on the calling thread alone unless there
// are at least 2 * grain elements, else split over up to max_threads() threads of the compute
// pool (the call returns when every chunk has run). For expensive per-element work only (random
// numbers, transcendental functions); memory-bound loops do not gain. f must not throw.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  ComputePool& pool = ComputePool::instance();
  const int64_t parts = std::min<int64_t>(pool.threads(), grain > 0 ? n / grain : 1);
  if (parts <= 1) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
  const int64_t chunk = (n + parts - 1) / parts;
  pool.run(static_cast<int>(parts), [&](int part) {
    const int64_t b = part * chunk;
    if (b < n) f(b, std::min(n, b + chunk));
  });
}

}  // namespace gt::worker::cpu
