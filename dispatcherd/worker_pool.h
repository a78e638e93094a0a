// The dispatcher's side of its workers (ARCHITECTURE §2, §6, §8). WorkerPool owns the registered
// workers (WorkerState: connection, handles, sequence numbers), the batch each one is being
// given for the client frame in progress (scratch), the fair queue and acknowledgement window a
// batch waits in before it is sent (flush / pump, ack / retire), the routing of requests and
// their replies by the dispatcher's request id, heartbeats and the progress watchdog, and the
// bookkeeping of a worker's departure. It knows sessions only by id: whatever touches a
// session goes to their owner through WorkerPool::Events.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dispatcherd/conn.h"
#include "dispatcherd/instruction_log.h"
#include "dispatcherd/scheduler.h"
#include "dispatcherd/status_counters.h"
#include "libgtcore/reply_payload.h"
#include "proto/gt.pb.h"

namespace gt::dispatcher {

struct DispatcherOptions;

struct WorkerState {
  uint32_t id = 0;
  std::shared_ptr<Conn> conn;
  v1::WorkerInfo info;
  uint64_t next_handle = 1;
  uint64_t sent_seq = 0, acked_seq = 0;  // acked_seq: the worker's executed prefix
  DrrScheduler sched;  // rewritten batches waiting for window room, in fair order
  std::chrono::steady_clock::time_point last_heard = std::chrono::steady_clock::now();
  // Progress watchdog (progress_timeout_ms): the last Ack or Reply from the worker, or the last
  // heartbeat tick at which it had nothing outstanding (so the clock starts with the work).
  std::chrono::steady_clock::time_point progress_at = std::chrono::steady_clock::now();
  double speedup = 1.0;  // the device's speed relative to the cost model's reference
  // Traced batches' timings (exec_trace.cpp): the least (arrival here - sending there) of its
  // acks so far, in ns of the instruction log's time base minus the worker's clock.
  int64_t clock_offset_ns = INT64_MAX;
  struct InFlight {
    uint64_t seq_end;
    uint64_t session;
    uint64_t count;
    uint64_t cost_ns;  // estimated
  };
  // By first seq: batches of different sessions complete out of order (the worker's turns).
  std::map<uint64_t, InFlight> inflight;
  uint64_t inflight_count = 0;                             // instructions in `inflight`
  std::unordered_map<uint64_t, uint64_t> session_cost_ns;  // estimated work in flight, per session
  size_t sessions_homed = 0;
  // Monitoring: the worker's own figures (with each heartbeat answer), turned into rates by
  // the dispatcher's status tick.
  v1::WorkerLoad load;
  RateWindow ops_rate, busy_rate;  // busy_rate: busy ns per second
  // The batch being assembled for the session whose frame is being processed.
  v1::DispatchMessage scratch;
  bool scratch_used = false;
  bool scratch_comm = false;  // holds communication: sent in global order, not via DRR
  uint64_t scratch_cost_ns = 0;
  uint64_t outstanding() const { return inflight_count; }
};

// A request from a client that waits on one or more workers.
struct PendingRequest {
  uint64_t session = 0;
  uint64_t client_request_id = 0;
  v1::Request::Kind kind = v1::Request::SYNC;
  int remaining = 0;
  uint64_t fetch_handle = 0;  // FETCH: the worker handle read (to identify a poison's error)
  uint64_t fetch_age = 0;     // FETCH: its handle, or later when written in place (ErrorLedger)
  uint64_t fetch_relayed = 0;  // FETCH: bytes relayed so far (chunks must come in order)
  uint64_t shm_region = 0;     // FETCH into the client's shared memory: the region's size
  uint64_t seq = 0;           // order among the session's requests (ClientSession::requests_)
  bool hot_stretch = false;   // Reply.hot_stretch, on every reply to it
  std::chrono::steady_clock::time_point received_at = std::chrono::steady_clock::now();
  v1::ServerMessage reply;  // accumulated errors / stats
};

class WorkerPool {
 public:
  // What the pool tells whoever owns the sessions (the Dispatcher). A session named by an id
  // that is gone (its client left) is ignored there.
  class Events {
   public:
    virtual ~Events() = default;
    // `count` instructions of `session` were queued for a worker; returns the session's
    // scheduling weight (1 when it is gone).
    virtual double batch_queued(uint64_t session, uint64_t count) = 0;
    // `count` instructions of `session` were executed, or lost with their worker.
    virtual void batch_done(uint64_t session, uint64_t count) = 0;
    // A worker acknowledged work, or answered the last request waiting: paused sessions may
    // resume, a drain may have finished.
    virtual void worker_progressed() = 0;
    // A worker reported a failed instruction of rep.session().
    virtual void worker_error(const WorkerState& w, const v1::ErrorReport& rep) = 0;
    // A chunk (or the errors) of the answer to a FETCH; `last` ends the request. `head` holds
    // the Reply's fields but the tensor; `meta` (null: no tensor) the tensor's but its bytes,
    // which are `payload` (checked against meta already: check_fetch_chunk).
    virtual void fetch_reply(const WorkerState& w, const PendingRequest& pr, v1::Reply& head,
                             const v1::TensorData* meta, std::string_view payload,
                             bool last) = 0;
    // Every worker `pr` waited on has answered (or is gone).
    virtual void request_done(PendingRequest& pr) = 0;
    // Worker `worker` is gone and its tensors with it (`err` says so); its requests fail next.
    virtual void worker_lost(uint32_t worker, const std::shared_ptr<const v1::ErrorInfo>& err) = 0;
  };

  // `opts` and `log` outlive the pool.
  WorkerPool(const DispatcherOptions& opts, InstructionLog* log, Events& events);

  // Registry. add(): a new worker on `c` (its Hello said so, and it is authenticated) gets an
  // id (never reused: a restarted worker gets a new one) and its Welcome; every worker learns
  // the new peer table. remove(): the worker is gone (`why`; `expected`: by our own shutdown,
  // no warning), its queued and in-flight work and requests fail, the peer table shrinks.
  WorkerState& add(const std::shared_ptr<Conn>& c, const v1::Hello& hello);
  void remove(uint32_t id, const std::string& why, bool expected);
  WorkerState* find(uint32_t id) {
    auto it = workers_.find(id);
    return it == workers_.end() ? nullptr : &it->second;
  }
  WorkerState& at(uint32_t id) { return workers_.at(id); }
  bool contains(uint32_t id) const { return workers_.count(id) != 0; }
  size_t size() const { return workers_.size(); }
  bool empty() const { return workers_.empty(); }
  std::map<uint32_t, WorkerState>& all() { return workers_; }
  const std::map<uint32_t, WorkerState>& all() const { return workers_; }
  std::vector<uint32_t> live_ids() const;
  // The least loaded worker for a session's home: fewest sessions homed there, then lowest id.
  uint32_t least_loaded() const;

  // Batches. Between begin_frame() and flush() every instruction, free and request for a
  // worker goes into its scratch batch (scratch_for); flush() queues each touched batch in the
  // worker's fair queue and sends what its window allows.
  void begin_frame() { touched_.clear(); }
  v1::WorkerBatch& scratch_for(WorkerState& w, uint64_t session);
  // Queues a free of `handle` in the session's stream on `w` (ordered with its instructions).
  void emit_free(WorkerState& w, uint64_t session, uint64_t handle);
  // The same on worker `worker`, if it is still registered.
  void emit_free(uint32_t worker, uint64_t session, uint64_t handle) {
    if (WorkerState* w = find(worker)) emit_free(*w, session, handle);
  }
  void flush();
  // A session holding its batches back across frames (a hot path being replayed,
  // client_session_hot.cpp): take_scratch() removes worker `worker`'s scratch batch from the
  // frame (false: none; `*comm`: it holds communication), restore_scratch() makes it that
  // worker's scratch batch again, first thing in a later frame (before anything else is added
  // to it). A session that holds a batch with communication holds every batch of its frame, so
  // they all go out together, in the global order communication needs (flush_worker).
  bool take_scratch(uint32_t worker, v1::WorkerBatch* out, uint64_t* cost_ns, bool* comm);
  // The same for the batch's tail only: its instructions from `first_instr` and frees from
  // `first_free` (their positions made relative to it), costing what was added after the batch
  // cost `cost_before`; what came before (an earlier stretch's HotRun, say) stays in the frame.
  bool take_scratch_tail(uint32_t worker, int first_instr, int first_free, uint64_t cost_before,
                         v1::WorkerBatch* out, uint64_t* cost_ns, bool* comm);
  void restore_scratch(uint32_t worker, uint64_t session, v1::WorkerBatch&& batch,
                       uint64_t cost_ns, bool comm);
  // The workers with a scratch batch in the current frame.
  const std::vector<uint32_t>& touched() const { return touched_; }
  // A session's batches still waiting in the fair queues are dropped (its client left): the
  // tensors they would create are never made, but their frees still go out (they may name
  // tensors that batches already sent did make).
  void drop_queued(uint64_t session);
  // A tag unique per collective (matches the members' halves).
  uint64_t next_comm_tag() { return next_comm_tag_++; }
  uint64_t peek_comm_tag() const { return next_comm_tag_; }  // the tag next_comm_tag() gives
  // `n` tags taken at once (a hot path's cached plan: its exchanges use the ones after the
  // first, client_session_plan.cpp).
  void skip_comm_tags(uint64_t n) { next_comm_tag_ += n; }
  // Changes whenever a worker joins or leaves: plans cached for hot paths were made for the
  // workers of one epoch (client_session_plan.cpp).
  uint64_t epoch() const { return epoch_; }

  // Requests, routed back by the dispatcher's request id.
  // `shm` (FETCH): the client's shared-memory region to write the value into.
  uint64_t send_request(WorkerState& w, uint64_t session, v1::Request::Kind kind, uint64_t handle,
                        const std::shared_ptr<PendingRequest>& pr,
                        const v1::ShmTarget* shm = nullptr);
  // Whether a SYNC of `session` requested before request `seq` is still waiting.
  bool sync_pending_before(uint64_t session, uint64_t seq) const;
  void drop_requests(uint64_t session);

  void on_frame(WorkerState& w, std::string_view body);
  // One heartbeat: pings every worker, and drops those silent past heartbeat_timeout_ms or with
  // work outstanding and no progress for progress_timeout_ms.
  void check_liveness();
  // Nothing is queued or in flight on any worker, and no request waits for its answer.
  bool idle() const;

 private:
  void flush_worker(WorkerState& w);
  void send_now(WorkerState& w, DrrScheduler::Item&& item);
  std::string upload_header_;  // send_worker_batch's, reused
  void pump(WorkerState& w);  // sends queued batches while the worker's window has room
  void on_ack(WorkerState& w, const v1::Ack& ack);
  // exec_trace.cpp: the timings of traced batches, as EXEC / PEER lines of the instruction log.
  void log_timings(WorkerState& w, const v1::Ack& ack);
  void retire(WorkerState& w, std::map<uint64_t, WorkerState::InFlight>::iterator it);
  void on_reply(WorkerState& w, v1::Reply& reply);
  // A reply frame in the header + payload layout (libgtcore/reply_payload.h): the payload is
  // relayed without being parsed or copied into a message.
  void on_payload_reply(WorkerState& w, std::string_view body, const ReplyPayloadLayout& layout);
  // One chunk (or the errors) of a FETCH's answer, checked, then relayed to its session.
  // `pr` is request `rid`'s (kept alive by the caller); the route is dropped when it ends.
  void relay_fetch_chunk(WorkerState& w, uint64_t rid, PendingRequest& pr, v1::Reply& head,
                         const v1::TensorData* meta, std::string_view payload);
  void on_gone(WorkerState& w, const std::string& why, bool expected);
  void broadcast_peer_table();
  void finish_if_answered(PendingRequest& pr) {
    if (pr.remaining <= 0) events_.request_done(pr);
  }

  const DispatcherOptions& opts_;
  InstructionLog* log_;
  Events& events_;
  std::map<uint32_t, WorkerState> workers_;
  uint32_t next_worker_id_ = 0;
  uint64_t next_request_id_ = 1;
  struct RequestRoute {
    std::shared_ptr<PendingRequest> request;
    uint32_t worker;
  };
  std::unordered_map<uint64_t, RequestRoute> requests_;  // by the dispatcher's request id
  std::vector<uint32_t> touched_;  // workers with a scratch batch for the current frame
  uint64_t next_comm_tag_ = 1;
  uint64_t epoch_ = 0;
  uint64_t heartbeat_nonce_ = 0;
  v1::WorkerMessage worker_msg_;  // reused across frames
  v1::TensorData payload_meta_;   // the same, for replies in the payload layout
};

}  // namespace gt::dispatcher
