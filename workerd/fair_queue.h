// FairQueue: the batches waiting on one worker, per session, served round robin (ARCHITECTURE §8:
// one user's flood must not queue ahead of another user's small op on the worker itself). The
// executor takes a batch, runs it for at most a time slice while others wait, and puts what is
// left back at the head of its session, so a light session waits for at most one slice.
//
// Order kept: a session's own batches run in arrival order. Batches holding communication
// (libgtcore/comm.def) also run in arrival order among themselves, whatever their session: the
// dispatcher sends every member of a collective the same global order, and a member that ran
// two sessions' collectives the other way round would deadlock with its peers.
//
// A session can be paused (its device backlog is full, Executor): its batches wait, except one
// holding communication that is next in arrival order (peers wait for it).
//
// Not thread-safe: the executor guards it with its mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "proto/gt.pb.h"

namespace gt::worker {

class FairQueue {
 public:
  struct Entry {
    std::unique_ptr<v1::WorkerBatch> batch;
    int next = 0;       // the first instruction not yet run (a batch resumes there)
    int next_free = 0;  // the first free not yet applied
    bool comm = false;  // holds communication instructions
    // Decoded on the I/O thread (for traced batches' timings; otherwise not read).
    std::chrono::steady_clock::time_point received{};
  };
  // [first_seq, first_seq + count) of a batch that will never run.
  using SeqRange = std::pair<uint64_t, uint64_t>;

  // Appends a batch to its session's queue. A batch that ends its session first drops that
  // session's queued batches that hold no communication (their results can never be read);
  // their sequence ranges go to `dropped` so they can be acknowledged. One already started
  // (it yielded, or is running now) stays, but runs nothing more.
  void push(std::unique_ptr<v1::WorkerBatch> batch, std::vector<SeqRange>* dropped,
            std::chrono::steady_clock::time_point received = {});
  // The next batch to run, or nullopt when none may run now. Its session goes to the back of
  // the round-robin order.
  std::optional<Entry> pop();
  // A batch that used up its slice continues first when its session's turn comes again.
  void push_front(Entry e);
  // A batch holding communication finished: the next one in arrival order may run.
  void comm_done(const v1::WorkerBatch* batch);

  // The session's next batch when nothing of it has run yet, else null (the executor answers
  // its FETCHes while the batch before it runs: Executor::take_next_batch_fetches). Valid
  // while the caller holds the lock guarding the queue.
  v1::WorkerBatch* next_unstarted(uint64_t session);
  bool runnable() const;  // pop() would return a batch
  void set_paused(uint64_t session, bool paused);
  bool paused(uint64_t session) const { return paused_.count(session) != 0; }
  size_t size() const { return size_; }
  // Instructions and frees queued and not yet run (monitoring: the worker's queue depth).
  uint64_t instructions() const { return instructions_; }
  void clear();

  static bool holds_comm(const v1::WorkerBatch& b);
  static uint64_t seq_count(const v1::WorkerBatch& b) {
    // A HotRun counts as what it stands for (WorkerBatch.hot_extra), as the dispatcher counts.
    return static_cast<uint64_t>(b.instrs_size()) + static_cast<uint64_t>(b.frees_size()) +
           b.hot_extra();
  }
  static uint64_t remaining(const Entry& e) {
    return seq_count(*e.batch) - static_cast<uint64_t>(e.next) - static_cast<uint64_t>(e.next_free);
  }

 private:
  bool may_run(uint64_t session, const Entry& head) const;
  // What is left of a started batch is skipped: it completes without running more.
  void abandon(Entry& e);
  void enlist(uint64_t session);

  std::unordered_map<uint64_t, std::deque<Entry>> sessions_;
  std::deque<uint64_t> order_;                // sessions with queued batches, round robin
  std::deque<const v1::WorkerBatch*> comm_;   // batches holding communication, arrival order
  std::unordered_set<uint64_t> paused_;
  std::unordered_set<uint64_t> ended_;  // sessions whose end is queued
  size_t size_ = 0;
  uint64_t instructions_ = 0;
};

}  // namespace gt::worker
