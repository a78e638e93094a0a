// One client's session (ARCHITECTURE §2, §5, §8). ClientSession owns the session's private id
// namespace (id -> TensorEntry: placement, worker handles, poison), the rewriting of its
// instruction stream into worker batches (process_instr / process_free / process_request; ops
// over several workers in sharded_exec.cpp and replace.cpp), its signal scopes, the errors
// reported since its last sync and the ledger that tells them apart, its share of its user's
// quotas (UserUsage) and its flow-control window. It reaches workers only through the
// WorkerPool, and its client only through SessionHost (the Dispatcher: it owns the connection).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dispatcherd/conn.h"
#include "libgtcore/asio.h"
#include "dispatcherd/error_ledger.h"
#include "dispatcherd/hot_paths.h"
#include "dispatcherd/hot_plan.h"
#include "dispatcherd/instruction_log.h"
#include "dispatcherd/placement.h"
#include "dispatcherd/planner.h"
#include "dispatcherd/session_host.h"
#include "dispatcherd/signals.h"
#include "dispatcherd/status_counters.h"
#include "dispatcherd/users.h"
#include "dispatcherd/worker_pool.h"
#include "libgtcore/shm_arena.h"
#include "proto/gt.pb.h"

namespace gt::dispatcher {

struct DispatcherOptions;

class ClientSession {
 public:
  // What every session shares (all outlive the session).
  struct Shared {
    const DispatcherOptions& opts;
    InstructionLog* log;
    WorkerPool& pool;
    SessionHost& host;
  };

  ClientSession(uint64_t id, std::shared_ptr<Conn> conn, std::string name, UserPolicy user,
                UserUsage& usage, const Shared& shared);
  ~ClientSession() { *alive_ = false; }
  ClientSession(const ClientSession&) = delete;
  ClientSession& operator=(const ClientSession&) = delete;

  uint64_t id() const { return id_; }
  const std::shared_ptr<Conn>& conn() const { return conn_; }
  const std::string& name() const { return name_; }
  const UserPolicy& user() const { return user_; }
  bool admin() const { return user_.admin; }
  const std::unordered_map<uint64_t, TensorEntry>& tensors() const { return tensors_; }
  // For the status page: instructions received, errors reported to it (ever).
  uint64_t instructions_received() const { return instrs_received_; }
  uint64_t frames_received() const { return frames_received_; }
  uint64_t errors_reported() const { return errors_reported_; }
  uint64_t instructions_outstanding() const { return outstanding_; }
  std::chrono::steady_clock::time_point started_at() const { return started_at_; }
  const RateWindow& instruction_rate() const { return instruction_rate_; }
  const LatencyHistogram& sync_latency() const { return sync_latency_; }
  const HotPathDetector::Stats& hot_path_stats() const { return hot_.stats(); }
  uint64_t hot_path_replays() const { return hot_replays_; }
  uint64_t hot_path_plans_reused() const { return plans_reused_; }
  uint64_t shm_arena_bytes() const {
    uint64_t n = 0;
    for (const auto& a : shm_arenas_) n += a.bytes;
    return n;
  }
  uint64_t shm_bytes() const { return shm_bytes_; }
  // Bytes of worker batches replays did not send (instructions replaced, less the HotRuns and
  // the definitions sent): negative while a path has been defined but not yet repeated.
  int64_t hot_path_bytes_saved() const { return hot_bytes_saved_; }
  // The status tick (1 Hz): rates over the last window.
  void sample_rates(std::chrono::steady_clock::time_point now) {
    instruction_rate_.sample(instrs_received_, now);
  }
  bool has_home() const { return has_home_; }
  uint32_t home_worker() const { return home_worker_; }
  // Creations without a placement go to `worker` (registered) from now on.
  void set_home(uint32_t worker);

  // client_session.cpp: one frame's batch, rewritten in stream order (frees between the
  // instructions free_at places them after, requests last), sent, then the window checked.
  // free_at is either empty or one position per free (the Dispatcher refuses anything else).
  // `frame_bytes`: the size of the frame it came in (bounds what a held stretch may join).
  void run_batch(v1::ClientBatch& batch, size_t frame_bytes);
  // The client left: its queued batches and requests are dropped, its tensors freed on every
  // worker, its usage returned to its user.
  void end();

  // Flow control: instructions queued or in flight count against the session's and its
  // user's windows; past either, the client's socket is not read until acks bring it below.
  void add_outstanding(uint64_t count);
  void release_outstanding(uint64_t count);
  void resume_if_below_window();

  // session_replies.cpp: what comes back from workers.
  void worker_error(const WorkerState& w, const v1::ErrorReport& rep);
  void relay_fetch(const WorkerState& w, const PendingRequest& pr, v1::Reply& head,
                   const v1::TensorData* meta, std::string_view payload, bool last);
  // Every worker has answered `pr`: the reply goes to the client.
  void complete_request(PendingRequest& pr);
  // Worker `worker` is gone: tensors with a piece there are poisoned with `err` (the other
  // pieces freed with the next frame), and a session that used it gets `err` at its next sync.
  void worker_lost(uint32_t worker, const std::shared_ptr<const v1::ErrorInfo>& err);

 private:
  // client_session.cpp
  void process_instr(v1::Instr& in);
  void process_free(uint64_t id);
  void poison(uint64_t out, const std::string& op, const Status& why);
  void update_flow_control();
  bool over_window() const;
  void charge(TensorEntry& e, int64_t bytes);
  bool charge_new(uint64_t out, const char* name, int64_t bytes);
  void free_handles(const TensorEntry& e);
  void free_deferred();  // deferred_frees_, emitted now
  // A sync point, signal boundary or (`by_length`) the end of a segment (hot_paths.h): the
  // stretch since the last one is looked up as a hot path.
  void end_stretch(bool by_length = false);

  // client_session_hot.cpp: hot paths replayed by reference (ARCHITECTURE §7). Where the
  // current stretch's instructions went: replayable only if it was planned in one frame (or
  // held, on one worker), each worker's part consecutive in its batch.
  struct WorkerSpan {
    uint32_t worker = 0;
    int first_instr = 0, first_free = 0;  // in that worker's batch
    uint64_t first_handle = 0;            // the worker's next_handle when it began
    uint64_t first_cost_ns = 0;           // its batch's estimated cost then
  };
  struct StretchSpan {
    bool started = false;
    bool eligible = true;
    std::vector<WorkerSpan> workers;  // in the order the stretch first used them
    uint64_t first_tag = 0;           // the pool's next collective tag when it began
    uint64_t payload_bytes = 0;       // uploads in it
  };
  // An instruction of the stretch for worker `w` (a plain one, or one a plan emits), before its
  // result handle is taken and it is added.
  void note_worker_instr(WorkerState& w);
  // Upload bytes in the stretch (a held stretch's payloads are bounded).
  void note_payload(size_t bytes);
  // A plain instruction with its upload payload (if any), before note_worker_instr.
  void note_plain_instr(WorkerState& w, size_t payload_bytes);
  // A frame ends inside a stretch that so far is the beginning of a hot path: the frame's worker
  // batches (all of them, each a worker's part of the stretch) are held back (not sent) so the
  // whole stretch can go as HotRuns, for at most kHoldMicros after the frame; the next frame,
  // that deadline, or the session's end releases them.
  void hold_if_hot();
  void restore_held();          // the held batches become the workers' batches of this frame again
  // The deadline passed: the held batches are sent as they are, a buffered stretch
  // (client_session_plan.cpp) is planned and sent (eagerly).
  void release_held();
  struct HeldBatch {
    uint32_t worker = 0;
    v1::WorkerBatch batch;
    uint64_t cost_ns = 0;
    bool comm = false;  // it holds communication (WorkerPool::take_scratch)
  };
  struct Held {
    bool active = false;
    std::vector<HeldBatch> batches;
    size_t bytes = 0;  // their serialized size
  };
  // The stretch just cut is hot path `path`: its instructions in each worker's batch become one
  // HotRun (with that worker's HotPath, the first time or when its part changed), where they
  // qualify.
  void replay_by_reference(uint64_t path);
  // One worker's part (what it made of it into *rec); false when it stays eager.
  bool replay_on_worker(uint64_t path, const WorkerSpan& span, PartRecord* rec);
  // Paths the detector evicted: the workers holding them drop them.
  void forget_hot_paths(const std::vector<uint64_t>& paths);

  // client_session_plan.cpp: hot paths replayed without planning them again (hot_plan.h). A
  // stretch that begins while the session holds plans is buffered as it arrives (checked and
  // added to the detector's signature, not planned); at its end, a stretch that is a hot path
  // with a usable plan is sent from the plan, and anything else (a stretch that leaves every hot
  // path, a plan made for other workers, a quota the stretch could pass) is planned then as it
  // would have been on arrival (spill). A stretch still buffered kHoldMicros after a frame is
  // planned and sent then (release_held), like a held one.
  void feed_instr(v1::Instr& in);
  void feed_free(uint64_t id);
  bool may_buffer(const v1::Instr& in) const;
  bool buffer_instr(v1::Instr& in);  // false: not buffered (the caller plans it, after a spill)
  void buffer_free(uint64_t id);
  void spill();             // the buffered items planned in order, as on arrival
  // A frame ended with a stretch held or buffered: release_held() kHoldMicros from now, unless
  // a later frame has armed it again or the stretch has gone out by then.
  void arm_hold_deadline();
  bool apply_plan(uint64_t path);  // false: nothing done (the caller spills)
  // The stretch log (StretchLog): an instruction the detector just took, a free of a tensor.
  void log_instr(const v1::Instr& in, std::span<TensorEntry* const> entries, uint64_t out,
                 bool in_place);
  void log_free(uint64_t id, const TensorEntry& e);
  bool logging_stretch() const;
  // The stretch just replayed by reference on every part: its plan, if one can reproduce it.
  void record_plan(uint64_t path);

  // session_shm.cpp: the shared-memory transport for fetches (libgtcore/shm_arena.h)
 public:
  // The client's new arena (ClientMessage.shm_arena) with the descriptor passed with it; an
  // error (the client is refused) when it is not a sealed memfd of the size declared, or its
  // generation does not increase.
  Status register_shm_arena(const v1::ShmArena& a, UniqueFd fd);

 private:
  // Whether a FETCH of `nbytes` bytes asking for `want` can be written into the arena by
  // worker `w`: the region lies in the arena registered, the value fits it, and `w` is reached
  // over a Unix socket (it is given the arena first, once per generation). False: the
  // worker answers over the socket and the client copes.
  bool shm_fetch_possible(WorkerState& w, const v1::ShmTarget& want, uint64_t nbytes);
  // Gives worker `w` the arena of `generation` (once); false when it cannot have it (a TCP
  // worker, an arena no longer held).
  bool give_shm_arena(WorkerState& w, uint64_t generation);
  // An upload whose payload lies in the client's arena (Instr.shm). Checked and viewed when made;
  // forwarded() when the instruction goes to a worker that reads the region itself; otherwise
  // the payload is copied into the instruction (materialize) or dropped with it, and the region
  // is released to the client when this ends.
  class ShmUpload {
   public:
    ShmUpload(ClientSession& s, v1::Instr& in);
    ~ShmUpload();
    ShmUpload(const ShmUpload&) = delete;
    ShmUpload& operator=(const ShmUpload&) = delete;
    bool active() const { return region_ != nullptr; }
    const Status& status() const { return status_; }
    std::string_view payload() const { return {region_, static_cast<size_t>(bytes_)}; }
    // The payload into in.data (the worker gets it over the socket); returns the new view.
    std::string_view materialize();
    // The instruction goes to `w` as it is (true), or the payload is materialized (false).
    bool forward_to(WorkerState& w);

   private:
    ClientSession& s_;
    v1::Instr& in_;
    Status status_;
    std::shared_ptr<ShmMapping> mapping_;
    char* region_ = nullptr;
    uint64_t bytes_ = 0;
    bool forwarded_ = false;
  };

  // session_replies.cpp
  void process_request(const v1::Request& r);
  // A fetch (request `seq`) raised error `id`: the next SYNC does not report it again, unless
  // a SYNC requested before that fetch is still pending (that one reports it, in order).
  void consume_fetched_error(uint64_t seq, uint64_t id);
  // A SYNC / FETCH answered: its latency into the session's and the user's histograms.
  void observe_latency(const PendingRequest& pr);

  // sharded_exec.cpp / replace.cpp: ops over placements other than one worker
  void run_planned(const v1::Instr& in, OpId op, const OpAttrs& attrs,
                   const std::vector<TensorEntry*>& inputs, const TensorMeta& meta,
                   const std::optional<ShardSpec>& scope);
  uint64_t emit_op(uint32_t worker, OpId op, const OpAttrs& attrs,
                   std::span<const uint64_t> inputs, bool has_out = true);
  uint64_t emit_comm(uint32_t worker, CommId comm, const OpAttrs& attrs,
                     std::span<const uint64_t> inputs);
  // Handles of `e`'s value in placement `target` (one per member), emitting the moves;
  // temporaries made on the way are appended to `temps` (worker, handle) for freeing.
  Result<std::vector<uint64_t>> materialize(const TensorEntry& e, const Placement& target,
                                            std::vector<std::pair<uint32_t, uint64_t>>* temps);
  // Where to read a whole tensor from: (worker, handle), assembling shards / sums if needed.
  Result<std::pair<uint32_t, uint64_t>> fetch_source(TensorEntry& e);

  const uint64_t id_;
  const std::shared_ptr<Conn> conn_;
  const std::string name_;
  UserPolicy user_;     // who is connected, with their quotas and weight
  UserUsage& usage_;    // what that user holds and has in flight, all sessions together
  const DispatcherOptions& opts_;
  InstructionLog* log_;
  WorkerPool& pool_;
  SessionHost& host_;
  uint32_t home_worker_ = 0;
  bool has_home_ = false;
  std::unordered_map<uint64_t, TensorEntry> tensors_;  // the session's private id namespace
  std::set<uint32_t> workers_used_;
  std::vector<v1::ErrorInfo> errors_;  // reported since the last sync (and not raised by a fetch)
  ErrorLedger error_ledger_;           // worker-reported errors: who a fetched poison is
  uint64_t requests_ = 0;              // requests received (PendingRequest::seq)
  uint64_t outstanding_ = 0;           // instructions queued or in flight, not yet acknowledged
  bool paused_ = false;
  uint64_t instrs_received_ = 0;
  uint64_t frames_received_ = 0;
  bool log_instrs_ = false;  // trace level: a line per instruction (checked once per frame)
  uint64_t errors_reported_ = 0;  // every error added to errors_
  const std::chrono::steady_clock::time_point started_at_ = std::chrono::steady_clock::now();
  RateWindow instruction_rate_ = RateWindow::from_zero();
  LatencyHistogram sync_latency_;  // SYNC / FETCH, received to answered
  SignalState signals_;
  HotPathDetector hot_;
  StretchSpan span_;
  // The last stretch a cut ended was held until its end and replayed (Reply.hot_stretch).
  bool last_stretch_replayed_ = false;
  Held held_;
  std::unique_ptr<asio::steady_timer> hold_timer_;
  uint64_t hold_generation_ = 0;  // which arming the pending deadline belongs to
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for the hold deadline
  // Hot path -> the workers holding a part of it, each with a hash of the part it holds (a
  // repetition whose part differs, planned differently since, defines it again).
  struct HotPart {
    uint32_t worker;
    uint64_t hash;
  };
  std::unordered_map<uint64_t, std::vector<HotPart>> hot_defined_;
  uint64_t hot_replays_ = 0;  // stretches sent as a HotRun
  // Cached plans (client_session_plan.cpp), by hot path; the stretch being logged / buffered.
  std::unordered_map<uint64_t, HotPlan> plans_;
  uint64_t plans_reused_ = 0;
  uint64_t config_epoch_ = 0;  // signal configs registered (a plan is made under one set)
  StretchLog stretch_log_;
  std::vector<PartRecord> part_records_;
  struct Buffered {
    bool active = false;
    // Instruction k of the stretch is instrs[k], k < count (the messages are kept and reused:
    // each stretch swaps its instructions into them).
    std::vector<v1::Instr> instrs;
    size_t count = 0;
    struct Item {
      int instr = -1;  // an instruction (its index), or a free of `id`
      uint64_t id = 0;
    };
    std::vector<Item> items;                      // in stream order
    std::unordered_set<uint64_t> freed;           // outside tensors freed in it
    uint64_t payload_bytes = 0;
    // Empty again (the messages kept).
    void reset() {
      active = false;
      count = 0;
      items.clear();
      freed.clear();
      payload_bytes = 0;
    }
  };
  Buffered buffer_;
  bool skip_detector_ = false;  // spilling items the detector and the log have seen already
  TensorEntry local_entry_;     // what the detector is given for a buffered result
  int64_t hot_bytes_saved_ = 0;
  // Reused by replay_by_reference.
  std::vector<uint32_t> scratch_result_instr_;
  std::unordered_map<uint64_t, uint32_t> scratch_slots_;
  std::vector<uint64_t> scratch_refs_;
  struct PartTag {  // a communication's tag: which of its ints, relative to the stretch's first
    int index = -1;
    uint64_t relative = 0;
  };
  std::vector<PartTag> scratch_tags_;
  // The client's shared-memory arena (session_shm.cpp), and the generation given to each
  // worker that wrote a fetch into it.
  struct ShmArenaHeld {
    uint64_t generation = 0, bytes = 0;
    UniqueFd fd;
    std::shared_ptr<ShmMapping> mapping;  // made when an upload needs it
  };
  static constexpr size_t kShmArenasHeld = 8;  // as many as a worker keeps (ShmArenaTable)
  std::deque<ShmArenaHeld> shm_arenas_;         // by generation, newest last
  uint64_t shm_generation_ = 0;                 // the newest registered
  uint64_t shm_bytes_ = 0;  // payload bytes moved through the arenas (SessionStatus.shm_bytes)
  std::unordered_map<uint32_t, std::set<uint64_t>> shm_given_;  // worker -> generations given
  ShmArenaHeld* shm_arena(uint64_t generation);
  // Temporaries (e.g. a sharded tensor assembled for a fetch) freed with the next frame.
  std::map<uint32_t, std::vector<uint64_t>> deferred_frees_;
  // Reused by process_instr for each instruction's inputs.
  std::vector<TensorEntry*> scratch_entries_;
  std::vector<TensorMeta> scratch_metas_;
};

}  // namespace gt::dispatcher
