// ExecTimings: when the worker ran the batches the dispatcher asked to time (WorkerBatch.trace,
// set while its instruction log or a live trace records; ARCHITECTURE §9). The executor adds one
// record per turn and per communication instruction; they ride back on the next Ack, with the
// worker's clock at sending (Ack.sent_ns) so the dispatcher can place them on its own clock.
// Untraced batches never reach this class: the default path pays one branch per batch. On an
// asynchronous device (CUDA, sim) a turn's times are when its work was issued to the device's
// streams (ARCHITECTURE §6: issue is not completion), not when the device ran it.
//
// Thread-safe: turns run on the executor thread, or inline on the I/O thread, and acks are sent
// from either.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "proto/gt.pb.h"

namespace gt::worker {

class ExecTimings {
 public:
  using Clock = std::chrono::steady_clock;
  // Records kept between two acks at most; a dispatcher that stops reading acks must not grow
  // the worker's memory. What is over is dropped (and said at debug level).
  static constexpr size_t kMaxPending = 8192;

  static uint64_t ns(Clock::time_point t) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
  }

  // One executor turn of batch `b`: instructions [begin, end) ran from `start` to `finish`;
  // with `answered`, the batch's requests are answered right after it.
  void add_turn(const v1::WorkerBatch& b, int begin, int end, Clock::time_point received,
                Clock::time_point start, Clock::time_point finish, bool answered);
  // One communication instruction (`comm`: its comm.def wire id) of `session`.
  void add_comm(uint64_t session, uint32_t comm, uint64_t tag, const std::vector<uint32_t>& peers,
                uint64_t bytes, Clock::time_point start, Clock::time_point finish);

  // Cheap test (no lock) for the ack path.
  bool any() const { return any_.load(std::memory_order_relaxed); }
  // Moves the records into `ack` and stamps its sending time.
  void drain_into(v1::Ack* ack);
  void clear();

 private:
  void push(v1::ExecTiming&& t);  // caller holds mu_

  std::mutex mu_;
  std::vector<v1::ExecTiming> pending_;
  uint64_t dropped_ = 0;
  std::atomic<bool> any_{false};
};

}  // namespace gt::worker
