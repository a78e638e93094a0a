// Executor: runs a worker's instruction batches in order on its own thread, separate from the
// I/O thread (DESIGN §6). It never trusts an instruction: every handle, shape and size is
// re-checked; a bad instruction poisons its result and is reported, the worker goes on.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "proto/gt.pb.h"
#include "workerd/backend.h"

namespace gt::worker {

class PeerLink;

class Executor {
 public:
  // Called from the executor thread with each outbound message (acks, errors, replies).
  using SendFn = std::function<void(v1::WorkerMessage&&)>;

  Executor(Backend& backend, SendFn send, uint64_t max_reply_chunk_bytes);
  ~Executor();

  void start();
  void stop();  // finishes the batch in progress, drops the rest

  // Hands over a batch (from the I/O thread). Batches execute in arrival order.
  void enqueue(std::unique_ptr<v1::WorkerBatch> batch);
  // Runs a batch on the calling (I/O) thread when the executor is idle and the batch holds no
  // instructions (a fetch, a sync, frees): a round trip then costs no thread hand-off. Returns
  // false (and leaves the batch alone) when the batch must be queued instead.
  bool try_execute_inline(v1::WorkerBatch& batch);
  // Drops every tensor (the dispatcher went away: a new one starts from nothing).
  void reset();
  void set_worker_id(uint32_t id) { worker_id_ = id; }
  // Where communication instructions (libgtcore/comm.def) go; without one they fail. Set
  // before start(); the link must outlive the executor.
  void set_peer_link(PeerLink* link) { peer_ = link; }

  // Executes one batch on the calling thread (tests and fuzzing use this directly).
  void execute(v1::WorkerBatch& batch);
  size_t tensor_count() const { return tensors_.size(); }

 private:
  void loop();
  void maybe_ack(bool more_queued);
  void run_instr(uint64_t session, const v1::Instr& in);
  void run_comm(uint64_t session, const v1::Instr& in);  // executor_comm.cpp
  Status unshare_storage(Tensor& dst, OpId op, uint64_t session);
  void fail(uint64_t session, uint64_t out, const char* op, const Status& st);
  void answer(uint64_t session, const v1::Request& req);
  void answer_fetch(uint64_t session, const v1::Request& req);
  void fill_stats(v1::WorkerStats* s);

  Backend& backend_;
  SendFn send_;
  uint64_t max_reply_chunk_;
  uint32_t worker_id_ = 0;
  PeerLink* peer_ = nullptr;

  std::unordered_map<uint64_t, Tensor> tensors_;  // handle -> tensor (executor thread only)
  std::unordered_set<uint64_t> sessions_;
  uint64_t ops_executed_ = 0, errors_ = 0;
  uint64_t executed_seq_ = 0, acked_seq_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<v1::WorkerBatch>> queue_;
  bool stopping_ = false;
  bool busy_ = false;  // a batch is executing (on the executor or inline)
  bool reset_requested_ = false;
  std::thread thread_;

  // Scratch reused across instructions (no allocation per op on the hot path).
  std::vector<const Tensor*> inputs_;
  std::vector<TensorMeta> metas_;
};

}  // namespace gt::worker
