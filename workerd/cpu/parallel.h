// parallel_for: splits expensive per-element kernels over a few std::threads (no OpenMP).
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace gt::worker::cpu {

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

}  // namespace gt::worker::cpu
