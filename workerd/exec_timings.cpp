#include "workerd/exec_timings.h"

#include <spdlog/spdlog.h>

namespace gt::worker {

void ExecTimings::push(v1::ExecTiming&& t) {
  if (pending_.size() >= kMaxPending) {
    ++dropped_;
    return;
  }
  pending_.push_back(std::move(t));
  any_.store(true, std::memory_order_relaxed);
}

void ExecTimings::add_turn(const v1::WorkerBatch& b, int begin, int end,
                           Clock::time_point received, Clock::time_point start,
                           Clock::time_point finish, bool answered) {
  v1::ExecTiming t;
  t.set_session(b.session());
  t.set_first_seq(b.first_seq());
  t.set_begin(static_cast<uint32_t>(begin));
  t.set_end(static_cast<uint32_t>(end));
  // Not received on this worker's I/O thread (a batch run directly, in tests): it arrived as
  // it started.
  t.set_received_ns(ns(received == Clock::time_point{} ? start : received));
  t.set_start_ns(ns(start));
  t.set_end_ns(ns(finish));
  if (begin < end) t.set_op(b.instrs(begin).op());  // 0 for a communication instruction
  if (answered)
    for (const auto& r : b.requests()) t.add_requests(r.request_id());
  std::lock_guard<std::mutex> lk(mu_);
  push(std::move(t));
}

void ExecTimings::add_comm(uint64_t session, uint32_t comm, uint64_t tag,
                           const std::vector<uint32_t>& peers, uint64_t bytes,
                           Clock::time_point start, Clock::time_point finish) {
  v1::ExecTiming t;
  t.set_session(session);
  t.set_comm(comm);
  t.set_tag(tag);
  for (uint32_t p : peers) t.add_peers(p);
  t.set_bytes(bytes);
  t.set_start_ns(ns(start));
  t.set_end_ns(ns(finish));
  std::lock_guard<std::mutex> lk(mu_);
  push(std::move(t));
}

void ExecTimings::drain_into(v1::Ack* ack) {
  uint64_t dropped;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& t : pending_) *ack->add_timings() = std::move(t);
    pending_.clear();
    dropped = dropped_;
    dropped_ = 0;
    any_.store(false, std::memory_order_relaxed);
  }
  ack->set_sent_ns(ns(Clock::now()));
  if (dropped > 0)
    spdlog::debug("{} batch timings dropped (over {} between two acks)", dropped, kMaxPending);
}

void ExecTimings::clear() {
  std::lock_guard<std::mutex> lk(mu_);
  pending_.clear();
  dropped_ = 0;
  any_.store(false, std::memory_order_relaxed);
}

}  // namespace gt::worker
