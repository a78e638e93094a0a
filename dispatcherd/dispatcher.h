// The dispatcher's core: sessions, workers, the id -> placement maps, rewriting of client
// instruction streams into worker streams, flow-control windows and request routing. Runs
// entirely on one io_context thread, so it needs no locks. I/O lives in FramedConnection;
// this is the handler logic (DESIGN §11: session, codec and handler in separate files).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "dispatcherd/dispatcher_options.h"
#include "dispatcherd/error_ledger.h"
#include "dispatcherd/instruction_log.h"
#include "dispatcherd/placement.h"
#include "dispatcherd/planner.h"
#include "dispatcherd/scheduler.h"
#include "dispatcherd/signals.h"
#include "dispatcherd/users.h"
#include "libgtcore/asio.h"
#include "libgtcore/framed_connection.h"
#include "proto/gt.pb.h"

namespace gt::dispatcher {

// Lets a repeated warning through at most `burst` times per interval and counts the ones held
// back, so a flood of bad peers cannot flood the log.
class LogLimiter {
 public:
  explicit LogLimiter(std::chrono::milliseconds interval, uint32_t burst = 1)
      : interval_(interval), burst_(burst) {}
  // True when a line may be logged now; `*held_back` is how many were not since the last one.
  bool allow(uint64_t* held_back) {
    auto now = std::chrono::steady_clock::now();
    if (now >= window_end_) {
      window_end_ = now + interval_;
      used_ = 0;
    }
    if (used_ >= burst_) {
      ++held_;
      return false;
    }
    ++used_;
    *held_back = held_;
    held_ = 0;
    return true;
  }

 private:
  std::chrono::milliseconds interval_;
  uint32_t burst_;
  uint32_t used_ = 0;
  std::chrono::steady_clock::time_point window_end_{};
  uint64_t held_ = 0;
};

// One accepted connection, before and after its Hello.
struct Conn {
  enum class Role { kPending, kClient, kWorker, kClosed };
  uint64_t id = 0;
  Role role = Role::kPending;
  std::shared_ptr<FramedConnection> io;
  std::string transport;  // "tcp" / "unix"
  std::unique_ptr<asio::steady_timer> deadline;
  uint64_t session = 0;   // kClient
  uint32_t worker = 0;    // kWorker
  std::string peer_key;   // the address pending connections are counted by
  bool counted_pending = false;  // included in the pending-connection counts
};

struct ClientSession {
  uint64_t id = 0;
  std::shared_ptr<Conn> conn;
  std::string name;
  UserPolicy user;    // who is connected, with their quotas and weight
  bool admin = false;
  uint32_t home_worker = 0;
  bool has_home = false;
  std::unordered_map<uint64_t, TensorEntry> tensors;  // the session's private id namespace
  std::set<uint32_t> workers_used;
  std::vector<v1::ErrorInfo> errors;  // reported since the last sync (and not raised by a fetch)
  ErrorLedger error_ledger;           // worker-reported errors: who a fetched poison is
  uint64_t requests = 0;              // requests received (PendingRequest::seq)
  uint64_t outstanding = 0;           // instructions queued or in flight, not yet acknowledged
  bool paused = false;
  uint64_t instrs_received = 0;
  SignalState signals{nullptr};
  // Temporaries (e.g. a sharded tensor assembled for a fetch) freed with the next frame.
  std::map<uint32_t, std::vector<uint64_t>> deferred_frees;
};

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
  // The batch being assembled for the session whose frame is being processed.
  v1::DispatchMessage scratch;
  bool scratch_used = false;
  bool scratch_comm = false;  // holds communication: sent in global order, not via DRR
  uint64_t scratch_cost_ns = 0;
  uint64_t outstanding() const { return inflight_count; }
};

// What one user holds and has in flight across all their sessions.
struct UserUsage {
  uint32_t sessions = 0;
  uint64_t bytes = 0;
  uint64_t outstanding = 0;
};

// A request from a client that waits on one or more workers.
struct PendingRequest {
  uint64_t session = 0;
  uint64_t client_request_id = 0;
  v1::Request::Kind kind = v1::Request::SYNC;
  int remaining = 0;
  uint64_t fetch_handle = 0;  // FETCH: the worker handle read (to identify a poison's error)
  uint64_t seq = 0;           // order among the session's requests (ClientSession::requests)
  v1::ServerMessage reply;  // accumulated errors / stats
};

class Dispatcher {
 public:
  Dispatcher(asio::io_context& io, DispatcherOptions opts, InstructionLog* log,
             UserTable users = {});
  ~Dispatcher();

  // A newly accepted connection; it must send Hello within the handshake timeout.
  void accept(StreamSocket socket, const std::string& transport);
  size_t num_sessions() const { return sessions_.size(); }
  size_t num_workers() const { return workers_.size(); }
  // Called when exit_when_idle fires (the last client left).
  std::function<void()> on_idle;
  // Stops accepting new sessions; calls `done` once every worker has executed what it was sent
  // (or the deadline passed). Used for a graceful SIGTERM.
  void drain(int deadline_ms, std::function<void()> done);
  // Closes every connection.
  void shutdown();
  // Starts the heartbeat timer (workers that stop answering are dropped).
  void start_heartbeats();

  // Counters for tests and metrics.
  uint64_t bytes_from_clients() const { return bytes_from_clients_; }

 private:
  // dispatcher.cpp: connections and handshake
  void on_frame(const std::shared_ptr<Conn>& c, std::string_view body);
  void on_close(const std::shared_ptr<Conn>& c, const Status& why);
  void on_hello(const std::shared_ptr<Conn>& c, const v1::Hello& hello);
  void refuse(const std::shared_ptr<Conn>& c, const std::string& reason);
  // Refuses a connection that is not admitted at all (over the pending caps): no Conn is made.
  void refuse_unadmitted(StreamSocket socket, const std::string& peer, const std::string& reason);
  void leave_pending(Conn& c);  // it sent its Hello, or closed: no longer counted as pending
  // Who is on the other end: Unix peer credentials or a token; an error refuses the client.
  Result<UserPolicy> authenticate_client(const Conn& c, const v1::Hello& hello) const;
  // May this connection be a worker: the worker secret, or (without one) the Unix socket and
  // the dispatcher's own uid or root. An error (with the reason) refuses it.
  Status authenticate_worker(const Conn& c, const v1::Hello& hello) const;
  void heartbeat_tick();
  void check_drained();
  void start_session(const std::shared_ptr<Conn>& c, const v1::Hello& hello);
  void register_worker(const std::shared_ptr<Conn>& c, const v1::Hello& hello);
  void admit_waiting_clients();
  void broadcast_peer_table();
  uint32_t pick_home_worker() const;
  std::string source_of(const Conn& c) const;

  // client_session.cpp: rewriting a client's stream
  void on_client_frame(ClientSession& s, std::string_view body);
  void process_instr(ClientSession& s, v1::Instr& in);
  void process_free(ClientSession& s, uint64_t id);
  void process_request(ClientSession& s, const v1::Request& r);
  // A fetch (request `seq`) raised error `id`: the next SYNC does not report it again, unless
  // a SYNC requested before that fetch is still pending (that one reports it, in order).
  void consume_fetched_error(ClientSession& s, uint64_t seq, uint64_t id);
  void poison(ClientSession& s, uint64_t out, const std::string& op, const std::string& message);
  void end_session(ClientSession& s);
  void reply_to_client(ClientSession& s, v1::ServerMessage& m);
  void update_flow_control(ClientSession& s);
  bool over_window(const ClientSession& s) const;
  void charge(ClientSession& s, TensorEntry& e, int64_t bytes);
  bool charge_new(ClientSession& s, uint64_t out, const char* name, int64_t bytes);
  void free_handles(ClientSession& s, const TensorEntry& e);

  // sharded_exec.cpp / replace.cpp: ops over placements other than one worker
  void run_planned(ClientSession& s, const v1::Instr& in, OpId op, const OpAttrs& attrs,
                   const std::vector<TensorEntry*>& inputs, const TensorMeta& meta,
                   const std::optional<ShardSpec>& scope);
  uint64_t emit_op(ClientSession& s, uint32_t worker, OpId op, const OpAttrs& attrs,
                   std::span<const uint64_t> inputs, bool has_out = true);
  uint64_t emit_comm(ClientSession& s, uint32_t worker, CommId comm, const OpAttrs& attrs,
                     std::span<const uint64_t> inputs);
  // Handles of `e`'s value in placement `target` (one per member), emitting the moves;
  // temporaries made on the way are appended to `temps` (worker, handle) for freeing.
  Result<std::vector<uint64_t>> materialize(ClientSession& s, const TensorEntry& e,
                                            const Placement& target,
                                            std::vector<std::pair<uint32_t, uint64_t>>* temps);
  // Where to read a whole tensor from: (worker, handle), assembling shards / sums if needed.
  Result<std::pair<uint32_t, uint64_t>> fetch_source(ClientSession& s, TensorEntry& e);
  std::vector<uint32_t> live_worker_ids() const;
  void send_now(WorkerState& w, DrrScheduler::Item&& item);
  void fill_own_stats(const ClientSession& s, v1::Reply* r) const;

  // worker_conn.cpp: worker streams, acks, replies
  v1::WorkerBatch& scratch_for(WorkerState& w, uint64_t session);
  // Queues a free of `handle` in the session's stream on `w` (ordered with its instructions).
  void emit_free(WorkerState& w, uint64_t session, uint64_t handle);
  void flush_worker(WorkerState& w);
  void pump(WorkerState& w);  // sends queued batches while the worker's window has room
  void on_worker_frame(WorkerState& w, std::string_view body);
  void on_ack(WorkerState& w, const v1::Ack& ack);
  void retire(WorkerState& w, std::map<uint64_t, WorkerState::InFlight>::iterator it);
  void on_worker_reply(WorkerState& w, v1::Reply& reply);
  void on_worker_gone(WorkerState& w, const std::string& why);
  uint64_t send_request(WorkerState& w, uint64_t session, v1::Request::Kind kind, uint64_t handle,
                        const std::shared_ptr<PendingRequest>& pr);
  void complete_if_done(const std::shared_ptr<PendingRequest>& pr);
  void resume_paused_sessions();

  asio::io_context& io_;
  DispatcherOptions opts_;
  InstructionLog* log_;
  UserTable users_;
  std::map<std::string, UserUsage> usage_;
  std::unique_ptr<asio::steady_timer> heartbeat_timer_;
  uint64_t heartbeat_nonce_ = 0;
  std::unique_ptr<asio::steady_timer> drain_timer_;
  std::unique_ptr<asio::steady_timer> drain_poll_timer_;  // re-checks while client input is unread
  std::function<void()> drained_;
  uint64_t next_conn_id_ = 1;
  uint64_t next_session_id_ = 1;
  uint32_t next_worker_id_ = 0;
  uint64_t next_request_id_ = 1;
  std::unordered_map<uint64_t, std::shared_ptr<Conn>> conns_;
  std::map<uint64_t, ClientSession> sessions_;
  std::map<uint32_t, WorkerState> workers_;
  std::vector<std::pair<std::shared_ptr<Conn>, v1::Hello>> waiting_clients_;
  struct RequestRoute {
    std::shared_ptr<PendingRequest> request;
    uint32_t worker;
  };
  std::unordered_map<uint64_t, RequestRoute> requests_;  // by the dispatcher's request id
  std::vector<uint32_t> touched_;  // workers with a scratch batch for the current frame
  std::vector<TensorEntry*> scratch_entries_;
  std::vector<TensorMeta> scratch_metas_;
  uint64_t next_comm_tag_ = 1;      // unique per collective: matches the members' halves
  v1::ClientMessage client_msg_;   // reused across frames
  v1::WorkerMessage worker_msg_;
  bool had_client_ = false;
  bool shutting_down_ = false;
  uint64_t bytes_from_clients_ = 0;
  uint64_t closed_client_bytes_in_ = 0, closed_worker_bytes_in_ = 0;
  // Connection-layer limits (DESIGN §8: no hostile peer exhausts the dispatcher).
  uint32_t pending_conns_ = 0;
  std::unordered_map<std::string, uint32_t> pending_by_peer_;
  std::shared_ptr<uint64_t> client_backlog_ = std::make_shared<uint64_t>(0);  // all clients' unread replies
  LogLimiter refuse_log_{std::chrono::seconds(5), 10};
  LogLimiter backlog_log_{std::chrono::seconds(5), 1};
};

}  // namespace gt::dispatcher
