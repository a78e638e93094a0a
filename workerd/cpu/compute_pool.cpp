#include "workerd/cpu/compute_pool.h"

#include <chrono>

#include "workerd/cpu/parallel.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GT_CPU_RELAX() _mm_pause()
#else
#define GT_CPU_RELAX() std::atomic_signal_fence(std::memory_order_seq_cst)
#endif

namespace gt::worker::cpu {
namespace {

using Clock = std::chrono::steady_clock;

// After a job a helper spins for the next one (the kernels of one step follow each other within
// microseconds), then gives its core away between checks (sched_yield: any other runnable task
// goes first) for a while, then sleeps on a futex. Measured on the 2-core VM with the MLP step
// (docs/PERFORMANCE.md): sleeping after a 50 us spin made every split kernel wait for a futex
// wake-up (the step as slow as with one thread); the yielding phase keeps the helper at hand
// without taking the core from the dispatcher or a client that needs it.
constexpr auto kHelperSpin = std::chrono::microseconds(20);
constexpr auto kHelperYield = std::chrono::milliseconds(2);
// The caller's wait for parts a helper took: spin, and after this long give the core away
// between checks (the helper may be waiting for it).
constexpr auto kCallerSpin = std::chrono::microseconds(20);

}  // namespace

ComputePool& ComputePool::instance() {
  static ComputePool* pool = new ComputePool(max_threads() - 1);
  return *pool;
}

ComputePool::ComputePool(int helpers) {
  for (int i = 0; i < helpers; ++i) {
    try {
      helpers_.emplace_back([this] { helper_loop(); });
    } catch (...) {
      break;  // out of threads: a smaller pool (none: everything runs on the caller)
    }
  }
  for (std::thread& t : helpers_) t.detach();
}

void ComputePool::run_erased(int parts, PartFn fn, void* ctx) {
  bool expected = false;
  if (parts <= 1 || helpers_.empty() ||
      !busy_.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
    for (int i = 0; i < parts; ++i) fn(ctx, i);
    return;
  }
  parts_ = parts;
  fn_ = fn;
  ctx_ = ctx;
  next_.store(0, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  open_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  take_parts();
  // Parts a helper took and still runs.
  const auto spin_end = Clock::now() + kCallerSpin;
  for (uint32_t spins = 0; done_.load(std::memory_order_acquire) < parts; ++spins) {
    if ((spins & 63) == 63 && Clock::now() > spin_end) std::this_thread::yield();
    else GT_CPU_RELAX();
  }
  // No helper may read the job's fields once this returns.
  open_.store(false);
  while (active_.load() != 0) GT_CPU_RELAX();
  busy_.store(false, std::memory_order_release);
}

void ComputePool::take_parts() {
  for (int i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < parts_;) {
    fn_(ctx_, i);
    done_.fetch_add(1, std::memory_order_release);
  }
}

void ComputePool::helper_loop() {
  uint32_t seen = generation_.load();
  for (;;) {
    const auto start = Clock::now();
    uint32_t spins = 0;
    for (uint32_t g; (g = generation_.load()) == seen; ++spins) {
      if ((spins & 63) != 63) {
        GT_CPU_RELAX();
        continue;
      }
      const auto waited = Clock::now() - start;
      if (waited > kHelperYield) generation_.wait(g);
      else if (waited > kHelperSpin) std::this_thread::yield();
    }
    seen = generation_.load();
    // Entered before the job closes (seen by its caller, which waits for us), or not at all.
    active_.fetch_add(1);
    if (open_.load()) take_parts();
    active_.fetch_sub(1);
  }
}

}  // namespace gt::worker::cpu
