// Weighted deficit round robin over sessions, one scheduler per worker (ARCHITECTURE §8). Rewritten
// batches wait here instead of going straight to the worker; the dispatcher sends from here
// while the worker's window has room, so one user's flood cannot queue ahead of everyone else
// on the worker: each session gets turns in proportion to its user's weight.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <optional>
#include <unordered_map>

#include "proto/gt.pb.h"

namespace gt::dispatcher {

class DrrScheduler {
 public:
  // Instructions a weight-1 session may send per round.
  static constexpr double kQuantum = 512;

  struct Item {
    uint64_t session;
    uint64_t cost;  // instructions (frees included) in the batch
    v1::DispatchMessage msg;
    uint64_t cost_ns = 0;  // estimated work (dispatcherd/cost_model.h)
  };
  // Whether a session may send now (its in-flight budget on the worker has room).
  using MaySend = std::function<bool(uint64_t session)>;

  void enqueue(uint64_t session, double weight, uint64_t cost, v1::DispatchMessage&& msg,
               uint64_t cost_ns = 0);
  // The next batch in fair order among sessions that may send, or nullopt when none can.
  std::optional<Item> next(const MaySend& may_send = nullptr);
  bool empty() const { return active_.empty(); }
  uint64_t queued_cost() const { return queued_cost_; }
  // Drops a session's queued batches (its client left); returns them so frees can still go out.
  std::deque<Item> take_session(uint64_t session);

 private:
  struct Flow {
    double weight = 1;
    double deficit = 0;
    std::deque<Item> items;
    bool active = false;
  };
  std::unordered_map<uint64_t, Flow> flows_;
  std::list<uint64_t> active_;  // sessions with queued batches, in round-robin order
  uint64_t queued_cost_ = 0;
};

}  // namespace gt::dispatcher
