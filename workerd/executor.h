// Executor: runs a worker's instruction batches on its own thread, separate from the I/O thread
// (ARCHITECTURE §6). Each session's batches run in order; sessions take turns of at most a time slice
// (FairQueue), so one user's queued flood does not delay another user's small op by more than a
// slice. It never trusts an instruction: every handle, shape and size is re-checked, and a
// session reaches only its own tensors; a bad instruction poisons its result and is reported,
// the worker goes on.
//
// Acknowledgements: batches of different sessions complete out of arrival order, so an Ack
// carries the executed prefix of the sequence (every seq below it has run) plus the first seqs
// of the batches completed beyond it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "proto/gt.pb.h"
#include "workerd/backend.h"
#include "workerd/exec_timings.h"
#include "workerd/fair_queue.h"
#include "workerd/shm_arenas.h"
#include "workerd/hot_path_store.h"

namespace gt::worker {

class PeerLink;

class Executor {
 public:
  // Called from the executor thread with each outbound message (acks, errors, replies).
  using SendFn = std::function<void(v1::WorkerMessage&&)>;
  // Called like SendFn with one frame in two parts: `header` (a whole frame up to its payload,
  // libgtcore/reply_payload.h) and `payload`, written after it (scatter-gather, no copy).
  using SendPartsFn = std::function<void(std::string_view header, std::string_view payload)>;

  // A session that has run for `slice_us` yields to others that have work queued.
  static constexpr int64_t kDefaultSliceUs = 2000;

  Executor(Backend& backend, SendFn send, uint64_t max_reply_chunk_bytes,
           int64_t slice_us = kDefaultSliceUs);
  ~Executor();

  void start();
  void stop();  // finishes the slice in progress, drops the rest
  // Hot paths recorded as device graphs where the device has them (the worker option
  // device_graphs; on by default). Set before start().
  void set_device_graphs(bool on) { device_graphs_ = on; }
  // FETCHes queued behind a hot path's run answered as soon as their values are final
  // (begin_final_fetches; the worker option early_fetches, on by default). Set before start().
  void set_early_fetches(bool on) { early_fetches_on_ = on; }
  // On an asynchronous device, at most about this many of a session's ops are issued ahead of
  // the device (0: no bound): past it the session waits for its completions while others run,
  // so the executor never blocks on a full launch queue (every session would wait behind it)
  // and a session that ends leaves at most that much work behind. Set before start().
  void set_device_queue_ops(uint64_t n) { device_queue_ops_ = n; }

  // Hands over a batch (from the I/O thread), decoded at `received` (read when it is traced).
  // A session's batches execute in arrival order.
  void enqueue(std::unique_ptr<v1::WorkerBatch> batch,
               std::chrono::steady_clock::time_point received = {});
  // Runs a batch on the calling (I/O) thread when the executor is idle and the batch holds no
  // instructions (a fetch, a sync, frees): a round trip then costs no thread hand-off. Returns
  // false (and leaves the batch alone) when the batch must be queued instead.
  bool try_execute_inline(v1::WorkerBatch& batch);
  // Drops every tensor (the dispatcher went away: a new one starts from nothing).
  void reset();
  // A client's shared-memory arena for `session` (DispatchMessage.shm_arena), from the I/O
  // thread: fetches that name it are written there (ShmArenaTable).
  Status attach_shm_arena(uint64_t session, uint64_t generation, uint64_t bytes, UniqueFd fd) {
    return shm_.attach(session, generation, bytes, std::move(fd));
  }
  size_t shm_arenas() const { return shm_.size(); }
  void set_worker_id(uint32_t id) { worker_id_ = id; }
  // Fetch replies in chunks of at most `bytes` (the dispatcher's frame limit allows no more).
  void set_max_reply_chunk(uint64_t bytes) { max_reply_chunk_.store(bytes, std::memory_order_relaxed); }
  // The live figures sent with each heartbeat answer (monitoring). Any thread.
  void fill_load(v1::WorkerLoad* l) const;
  // Where communication instructions (libgtcore/comm.def) go; without one they fail. Set
  // before start(); the link must outlive the executor.
  void set_peer_link(PeerLink* link) { peer_ = link; }
  // Where fetch replies go as header + payload, straight from tensors in host memory (issue 15).
  // Without one (tests), or on a device whose memory the host cannot read in place, a fetch is
  // copied into an ordinary reply and sent through SendFn. Set before start().
  void set_payload_sender(SendPartsFn fn) { send_parts_ = std::move(fn); }
  // Called once (from the executor or the I/O thread) when the backend reports its device lost
  // (Backend::device_lost: a sticky error). The worker cannot recover: it must go. Set before
  // start().
  void set_on_device_lost(std::function<void(const Status&)> fn) { on_device_lost_ = std::move(fn); }

  // Executes one batch on the calling thread (tests and fuzzing use this directly).
  void execute(v1::WorkerBatch& batch);
  size_t tensor_count() const { return tensors_.size(); }
  // Every instruction with seq below this has executed (tests).
  uint64_t executed_seq() const;

 private:
  void loop();
  // Runs b's instructions from *next on (and its frees from *next_free, in stream order); with
  // may_yield, stops once past `yield_at` while other batches wait. Returns true when the batch
  // is done (then its requests and end-of-session ran too).
  bool run_batch(v1::WorkerBatch& b, int* next, int* next_free, bool may_yield,
                 std::chrono::steady_clock::time_point yield_at,
                 std::chrono::steady_clock::time_point received = {});
  void finish_batch(v1::WorkerBatch& b);
  // Traced batches: the timings recorded so far leave now, in an ack of their own, so that
  // they reach the dispatcher before the replies the batch is about to send.
  void send_timings();
  void complete_locked(uint64_t first_seq, uint64_t count);  // caller holds mu_
  void maybe_ack(bool more_queued);
  void run_instr(uint64_t session, const v1::Instr& in);
  // executor_hot.cpp: hot paths (ARCHITECTURE §7). A batch's definitions before its first
  // instruction; one HotRun = its path's instructions with the run's handles, each run as
  // run_instr would (a fusable chain in one pass when the device can and the tensors allow).
  void define_hot_paths(v1::WorkerBatch& b);
  void forget_hot_paths(const v1::WorkerBatch& b);
  void run_hot(uint64_t session, v1::Instr& in);
  // The fused chain starting at instruction k, when it ends by `limit`: run_fused_chain's answer
  // (0: none there, or nothing done).
  uint32_t run_chain_at(uint64_t session, HotPathDef& p, size_t k, uint32_t limit,
                        const v1::HotRun& run);
  // The chain's instructions (or its longest prefix that can be) as one fused kernel; returns
  // where the fused part ends (the caller goes on from there), 0 when nothing was done. A head
  // cast from a dtype the device's kernels do not read runs first, on its own (the rest fuses
  // from its result; the answer is then past it even when nothing else fused).
  uint32_t run_fused_chain(uint64_t session, HotPathDef& p, const FusedChain& ch,
                           const v1::HotRun& run);
  // The segment's instructions recorded as one device graph and launched (Backend::begin_graph).
  // False when nothing was done (the caller runs them one by one): the device could not start
  // a capture, or a result handle is taken. Everything else ends as eager execution would:
  // errors found while recording are sent once the graph is launched, and a capture the device
  // invalidated is undone and its instructions run again eagerly (a fallback, counted).
  bool run_graph_segment(uint64_t session, HotPathDef& p, HotPathDef::GraphSegment& seg,
                         v1::HotRun& run);
  // executor_fold.cpp: instruction k of a path that has a role in a TransposeFold; true when it
  // is done (skipped, put off, or the matmul run folded), false to run it as written.
  bool run_fold_step(uint64_t session, HotPathDef& p, size_t k, const v1::HotRun& run);
  bool run_folded_matmul(uint64_t session, HotPathDef& p, const TransposeFold& f,
                         const v1::HotRun& run);

  // executor_early_fetch.cpp: FETCHes answered before the HotRun they wait behind ends
  // (ARCHITECTURE §7). A training step fetches its loss after its backward pass and update; the
  // loss is final once the forward pass made it. While a HotRun that ends its batch runs, the
  // leading FETCHes of that batch, then those of the session's next batch when it holds nothing
  // else, are answered in request order at the point of the run where their tensors are final
  // (made, and written by none of the path's later instructions), so the client goes on while
  // the rest of the path runs. begin_final_fetches plans the batch's own (early_batch_),
  // answer_final_fetches (before instruction k) answers those due and takes the next batch's,
  // end_final_fetches answers what it took and drops the answered ones from the batch.
  void begin_final_fetches(HotPathDef& p, const v1::HotRun& run);
  void answer_final_fetches(uint64_t session, const HotPathDef& p, const v1::HotRun& run, size_t k);
  void end_final_fetches(uint64_t session);
  // Appends `req` to early_ with the instruction count after which it is due; false when it is
  // not a FETCH that may be answered before the run ends (it and what follows wait).
  bool plan_final_fetch(const HotPathDef& p, const v1::HotRun& run, const v1::Request& req);
  void take_next_batch_fetches(uint64_t session, const HotPathDef& p, const v1::HotRun& run);
  // Instruction k's result handle is not taken (eager execution would report it).
  bool result_free(const HotPathDef& p, size_t k, const v1::HotRun& run) const;
  // A path reference's tensor in this run if it is this session's, float32 (any dtype with
  // `any_dtype`) and has a value, else null (fused chains and folds take only those; anything
  // else runs the eager way).
  const Tensor* float32_tensor(uint64_t session, const HotPathDef& p, uint64_t ref,
                               const v1::HotRun& run, bool any_dtype = false) const;
  // Instruction k of a path with the run's handles put in (the path keeps its own copy).
  void bind_instr(HotPathDef& p, size_t k, const v1::HotRun& run);
  // Instruction k (no upload in it) bound and run as run_instr would, logged at trace level.
  void run_bound_instr(uint64_t session, HotPathDef& p, size_t k, const v1::HotRun& run);
  // The segment's instructions through run_instr, with its own frees in stream order.
  void run_segment_instrs(uint64_t session, HotPathDef& p, const HotPathDef::GraphSegment& seg,
                          const v1::HotRun& run);
  void note_hot_paths() { hot_paths_.store(hot_.size(), std::memory_order_relaxed); }
  void log_instr(uint64_t session, const v1::Instr& in) const;  // trace level
  void run_comm(uint64_t session, const v1::Instr& in);  // executor_comm.cpp
  Status unshare_storage(Tensor& dst, OpId op, uint64_t session);
  bool shares_copy(const Tensor& dst, const Tensor& src) const;  // copy_ by sharing bytes
  void put(uint64_t session, uint64_t handle, Tensor&& t);  // records a session's tensor
  void free_handle(uint64_t session, uint64_t handle);
  size_t drop_session_tensors(uint64_t session);
  void fail(uint64_t session, uint64_t out, const char* op, const Status& st);
  // `st` as this worker's error record of `op`.
  ErrorRecord record(const char* op, const Status& st) const;
  void answer(uint64_t session, const v1::Request& req);
  void answer_fetch(uint64_t session, const v1::Request& req);
  void answer_fetch_async(uint64_t session, const v1::Request& req, const Tensor& t);
  // Writes t's bytes into the client's shared-memory region `req.shm()` of `arena`, chunk by
  // chunk, each followed by its header-only reply (the client copies one out while the next is
  // written); on an asynchronous device the copies are enqueued and the replies follow their
  // completion. False (nothing sent) when the region cannot hold it.
  bool send_fetch_to_shm(uint64_t session, const v1::Request& req, const Tensor& t,
                         std::shared_ptr<ShmMapping> arena);
  // Registers a client's arena with an asynchronous device at its first transfer (pinned on
  // CUDA: the device then reads and writes it directly, without staging buffers), unregistered
  // when it is unmapped, after the transfers (their completions hold it). Whether it is.
  bool register_arena(uint64_t session, ShmMapping& arena);
  // Sends t's bytes in chunks straight from `host` (Backend::host_view) through send_parts_.
  void send_fetch_from_host(const v1::Request& req, const Tensor& t, const char* host);
  static std::string* start_fetch_chunk(v1::Reply* r, uint64_t request_id, const Tensor& t,
                                        uint64_t offset, uint64_t n);
  // Runs `done` once the session's queued device work is done (Backend::when_done), counted so
  // that stop() waits for it.
  void complete_later(uint64_t session, std::function<void(const Status&)> done);
  // A fetch of `t` whose device copies were enqueued (`started`: how enqueueing went): once
  // they are done, its failure answers the request (a failed copy, or a kernel that failed on
  // the device writing t, as a poisoned tensor does), else `send` sends the replies.
  void answer_fetch_later(uint64_t session, uint64_t request_id, const Tensor& t,
                          const Status& started, std::function<void()> send);
  void wait_for_completions();
  void check_device();  // after each batch: a lost device is reported once
  void reply_error(uint64_t request_id, const ErrorRecord& rec);  // a request's last reply
  void fill_stats(v1::WorkerStats* s);

  Backend& backend_;
  SendFn send_;
  SendPartsFn send_parts_;
  std::string header_scratch_;  // reused for fetch headers (no allocation per reply)
  // Fetch reply chunk bytes: what this worker's options allow, lowered to fit the frame limit
  // of the dispatcher it registered with (set_max_reply_chunk, from the I/O thread).
  std::atomic<uint64_t> max_reply_chunk_;
  uint32_t worker_id_ = 0;
  PeerLink* peer_ = nullptr;

  std::chrono::microseconds slice_;

  std::unordered_map<uint64_t, Tensor> tensors_;  // handle -> tensor (executor thread only)
  HotPathStore hot_;                              // (executor thread only)
  ShmArenaTable shm_;                             // (any thread: it locks)
  std::unordered_set<uint64_t> sessions_;
  // Monitoring counters, read by the I/O thread (fill_load). One thread writes at a time (the
  // executor, or the I/O thread running a batch inline while the executor is idle), so counting
  // is a relaxed load and store: no locked instruction per op.
  std::atomic<uint64_t> ops_executed_{0};
  std::atomic<uint64_t> busy_ns_{0};      // time spent running batches
  std::atomic<uint64_t> queue_depth_{0};  // queue_.instructions(), published under mu_
  void count_op() {
    ops_executed_.store(ops_executed_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  void add_busy(std::chrono::steady_clock::time_point started) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - started).count();
    busy_ns_.store(busy_ns_.load(std::memory_order_relaxed) + static_cast<uint64_t>(ns),
                   std::memory_order_relaxed);
  }
  void note_queue_locked() {  // after queue_ changed, mu_ held
    waiting_ = queue_.size();
    queue_depth_.store(queue_.instructions(), std::memory_order_relaxed);
  }
  std::atomic<uint64_t> errors_{0};  // also counted by the completion thread
  std::atomic<uint64_t> hot_runs_{0};   // HotRuns executed
  std::atomic<uint64_t> hot_paths_{0};  // hot paths held (hot_.size(), published)
  std::atomic<uint64_t> fused_ops_{0};  // ops run inside fused chains
  std::atomic<uint64_t> graph_launches_{0};        // graph segments run as one device launch
  std::atomic<uint64_t> graph_instantiations_{0};  // of them, new executable graphs (no update)
  std::atomic<uint64_t> graph_fallbacks_{0};       // captures that failed: run eagerly again
  bool device_graphs_ = true;
  bool early_fetches_on_ = true;
  // Device pacing (set_device_queue_ops): per session, ops issued and not yet known done
  // (guarded by mu_); the issue budget of the batch running now (executor thread).
  uint64_t device_queue_ops_ = 512;
  std::unordered_map<uint64_t, uint64_t> device_backlog_;
  uint64_t pace_left_ = UINT64_MAX;
  uint64_t pace_start_ops_ = 0;
  bool paced() const { return device_queue_ops_ != 0 && backend_.asynchronous(); }
  // After a session issued `ops` more (mu_ held): paused once its backlog is full.
  void note_issued_locked(uint64_t session, uint64_t ops);
  // Their completion: resumed once its backlog has room again.
  void note_device_done(uint64_t session, uint64_t ops);
  // While a graph segment records: the error messages of its instructions (sent after the
  // launch, dropped when the segment runs again eagerly) and the storages copy-on-write
  // replaced (put back then: the copy was only recorded).
  std::vector<v1::WorkerMessage>* held_errors_ = nullptr;
  struct ReplacedStorage {
    uint64_t handle;
    std::shared_ptr<Storage> old;
  };
  std::vector<ReplacedStorage>* replaced_storages_ = nullptr;
  static void bump(std::atomic<uint64_t>& c, uint64_t by = 1) {  // one writer at a time
    c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  FairQueue queue_;
  std::atomic<size_t> waiting_{0};  // batches queued (read without the lock to decide a yield)
  // Completion (guarded by mu_): the executed prefix, batches done beyond it, what to ack.
  uint64_t executed_seq_ = 0;
  std::map<uint64_t, uint64_t> done_ahead_;  // first_seq -> end of batches done past the prefix
  std::vector<uint64_t> unacked_done_;       // first seqs completed since the last ack
  uint64_t unacked_count_ = 0;               // instructions completed since the last ack
  std::chrono::steady_clock::time_point last_ack_{};
  // Held while an ack is built and sent (before mu_): the executor thread and the I/O thread
  // (a turn run inline) both send acks, and one built first must not leave second -- the
  // dispatcher ignores an ack whose prefix is older than one it has (and what it says done).
  std::mutex ack_mu_;
  bool stopping_ = false;
  bool busy_ = false;  // a batch is executing (on the executor or inline)
  bool reset_requested_ = false;
  std::thread thread_;

  std::function<void(const Status&)> on_device_lost_;
  std::atomic<bool> device_lost_reported_{false};

  std::mutex completions_mu_;
  std::condition_variable completions_cv_;
  uint64_t completions_pending_ = 0;
  // Per session: replies still waiting on the completion thread. A reply sent directly must not
  // overtake them (a session's replies keep their request order).
  std::unordered_map<uint64_t, uint64_t> completions_by_session_;
  bool completions_pending_for(uint64_t session);

  // Traced batches (WorkerBatch.trace): what ran when, sent back with the acks.
  ExecTimings timings_;
  bool tracing_ = false;  // the batch running now is traced (whichever thread runs it)

  // Scratch reused across instructions (no allocation per op on the hot path).
  std::vector<const Tensor*> inputs_;
  std::vector<TensorMeta> metas_;
  std::vector<FusedStep> fused_steps_;
  // Early FETCH answers (begin_final_fetches): the running batch when its HotRun is its last
  // instruction; the FETCHes planned, in request order (its own first, then those taken from
  // the session's next batch), each with the instruction count after which it is due; how many
  // are answered and how many are the batch's own; whether the next batch may still be looked
  // at (once: its FETCHes are taken after the batch's own are answered).
  struct EarlyFetch {
    v1::Request req;
    uint32_t due;
  };
  v1::WorkerBatch* early_batch_ = nullptr;
  std::vector<EarlyFetch> early_;
  size_t early_answered_ = 0, early_own_ = 0;
  bool early_next_batch_ = false;
  std::atomic<uint64_t> early_fetches_{0};  // FETCHes answered before their HotRun ended
  // Per instruction of the running path, what its TransposeFold did with it this run.
  enum FoldState : uint8_t { kFoldNone, kFoldPutOff };
  std::vector<uint8_t> fold_state_;
};

}  // namespace gt::worker
