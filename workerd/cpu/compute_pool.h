// ComputePool: the CPU kernels' helper threads, started once per process and parked between
// jobs, so that splitting a kernel over the cores costs a wake-up, not a thread start and join
// (~20 us here, 45 at the 90th percentile: a [256, 784] exp runs in ~50).
//
// A job is `parts` calls f(part); the caller and the helpers take parts from one counter, so a
// helper that wakes late (its core busy with the dispatcher or a client) costs no more than the
// caller running that part itself. A helper spins briefly after a job (the next kernel of a step
// usually follows within microseconds), yields its core to anything runnable for ~2 ms, then
// sleeps on a futex: unlike OpenBLAS's own threads, which spin ~0.1 s after every call, it does
// not hold a core the other processes of the box need, and none at all while nothing runs. The
// GEMMs are split over this pool too (matmul.cpp, with OpenBLAS at one thread per call), so one
// set of threads serves every kernel.
//
// One job at a time: a second caller (the I/O thread running a turn inline, a kernel called
// from inside a part) runs its parts itself, in order. f must not throw.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace gt::worker::cpu {

class ComputePool {
 public:
  // The process's pool: max_threads() - 1 helpers (max_threads() in parallel.h), started at
  // the first call. Never destroyed (parked helpers are left to process exit).
  static ComputePool& instance();

  // Threads a job may use: the helpers and the caller.
  int threads() const { return static_cast<int>(helpers_.size()) + 1; }

  // Calls f(part) for every part in [0, parts), spread over the caller and the helpers, and
  // returns when all have returned.
  template <class F>
  void run(int parts, F&& f) {
    run_erased(parts, [](void* ctx, int part) { (*static_cast<F*>(ctx))(part); }, &f);
  }

 private:
  using PartFn = void (*)(void* ctx, int part);
  explicit ComputePool(int helpers);
  void run_erased(int parts, PartFn fn, void* ctx);
  void helper_loop();
  // Takes and runs parts of the open job until none are left.
  void take_parts();

  std::vector<std::thread> helpers_;
  std::atomic<bool> busy_{false};      // a caller owns the pool
  std::atomic<uint32_t> generation_{0};  // bumped to open a job (helpers wait on it)
  std::atomic<bool> open_{false};      // a job's fields below may be read
  std::atomic<int> active_{0};         // helpers inside a job
  std::atomic<int> next_{0};           // the next part to take
  std::atomic<int> done_{0};           // parts finished
  int parts_ = 0;
  PartFn fn_ = nullptr;
  void* ctx_ = nullptr;
};

}  // namespace gt::worker::cpu
