// The dispatcher (ARCHITECTURE §1, §11), the thin part that wires the rest: Dispatcher owns the
// connections (accept, handshake, authentication, pending-connection caps, reply backlog
// bounds), the sessions, the WorkerPool (dispatcherd/worker_pool.h: workers, their batches and
// windows, request routing), users and their usage, and the drain / shutdown / heartbeat
// timers; each ClientSession (dispatcherd/client_session.h) owns its own rewriting. Runs
// entirely on one io_context thread, so it needs no locks. I/O lives in FramedConnection.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
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
#include "dispatcherd/session_host.h"
#include "dispatcherd/signals.h"
#include "dispatcherd/status.h"
#include "dispatcherd/users.h"
#include "dispatcherd/worker_pool.h"
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

class ClientSession;

class Dispatcher final : private WorkerPool::Events, private SessionHost {
 public:
  Dispatcher(asio::io_context& io, DispatcherOptions opts, InstructionLog* log,
             UserTable users = {});
  ~Dispatcher();

  // A newly accepted connection; it must send Hello within the handshake timeout.
  void accept(StreamSocket socket, const std::string& transport);
  size_t num_sessions() const { return sessions_.size(); }
  // A reloaded users file (SIGHUP): later handshakes use it; connected sessions keep the policy
  // they were admitted with (a removed user's open sessions are not cut off).
  void replace_users(UserTable users) { users_ = std::move(users); }
  size_t num_workers() const { return pool_.size(); }
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
  // dispatcher_status.cpp: the live status (/metrics, /api/status); `only_user` non-empty keeps
  // that user's sessions only (what a non-admin may see).
  v1::StatusReport status(const std::string& only_user = "") const;
  // The user a token belongs to (nullptr: none), and whether tokens are configured at all.
  const UserPolicy* user_for_token(const std::string& token) const {
    return users_.find_by_token(token);
  }
  bool tokens_configured() const { return users_.configured(); }
  // dispatcher_trace.cpp: the workers and sessions there are, as instruction-log lines into a
  // live recording's tap (WORKER_INFO / SESSION_INFO: what WORKER_JOIN / CONNECT said of them).
  void describe_for_trace(InstructionLog::Tap& tap) const;

 private:
  // dispatcher.cpp: connections and their lifetime, timers
  void on_frame(const std::shared_ptr<Conn>& c, std::string_view body);
  void on_client_frame(ClientSession& s, std::string_view body);
  // A large upload whose payload was read into a string of its own (libgtcore/upload_frame.h):
  // client frames from this size on are looked at for it (the client writes uploads of 1 MiB
  // and more this way; below, the parse copy is small).
  static constexpr size_t kSplitUploadBytes = size_t{1} << 20;
  void on_client_payload_frame(ClientSession& s, std::string_view head, std::string&& payload);
  void clear_client_message();
  void run_client_message(ClientSession& s, size_t frame_bytes);  // client_msg_, parsed
  void on_close(const std::shared_ptr<Conn>& c, const Status& why);
  void refuse(const std::shared_ptr<Conn>& c, const Status& why);
  // Refuses a connection that is not admitted at all (over the pending caps): no Conn is made.
  void refuse_unadmitted(StreamSocket socket, const std::string& peer, const Status& why);
  void leave_pending(Conn& c);  // it sent its Hello, or closed: no longer counted as pending
  void heartbeat_tick();
  void check_drained();
  void resume_paused_sessions();

  // handshake.cpp: Hello, authentication, the start of a session or a worker
  void on_hello(const std::shared_ptr<Conn>& c, const v1::Hello& hello);
  // Who is on the other end: Unix peer credentials or a token; an error refuses the client.
  Result<UserPolicy> authenticate_client(const Conn& c, const v1::Hello& hello) const;
  // May this connection be a worker: the worker secret, or (without one) the Unix socket and
  // the dispatcher's own uid or root. An error (with the reason) refuses it.
  Status authenticate_worker(const Conn& c, const v1::Hello& hello) const;
  void start_session(const std::shared_ptr<Conn>& c, const v1::Hello& hello);
  void register_worker(const std::shared_ptr<Conn>& c, const v1::Hello& hello);
  void admit_waiting_clients();

  // dispatcher_wiring.cpp: the pool's events, delivered to sessions, and what sessions ask of
  // the dispatcher (SessionHost)
  ClientSession* find_session(uint64_t id);
  double batch_queued(uint64_t session, uint64_t count) override;
  void batch_done(uint64_t session, uint64_t count) override;
  void worker_progressed() override;
  void worker_error(const WorkerState& w, const v1::ErrorReport& rep) override;
  void fetch_reply(const WorkerState& w, const PendingRequest& pr, v1::Reply& head,
                   const v1::TensorData* meta, std::string_view payload, bool last) override;
  void request_done(PendingRequest& pr) override;
  void worker_lost(uint32_t worker, const std::shared_ptr<const v1::ErrorInfo>& err) override;
  void send_reply(ClientSession& s, v1::ServerMessage& m) override;
  void send_fetch_chunk(ClientSession& s, const v1::Reply& head, const v1::TensorData& meta,
                        std::string_view payload) override;
  // Whether s's client may be sent more (false: it is closing, or was just refused for unread
  // replies), and the bound on all clients' unread replies, enforced after a send.
  bool may_reply(ClientSession& s);
  void bound_total_backlog();
  void fill_own_stats(const ClientSession& s, v1::Reply* r) const override;
  void fill_dispatcher_stats(v1::DispatcherStats* d) const override;
  void fill_status(const ClientSession& s, v1::StatusReport* r) const override;
  void note_error(const ClientSession& s, const std::string& op,
                  const std::string& message) override;

  // dispatcher_status.cpp: the 1 Hz sampling of rates (workers, sessions, users)
  void status_tick();

  asio::io_context& io_;
  DispatcherOptions opts_;
  InstructionLog* log_;
  UserTable users_;
  std::map<std::string, UserUsage> usage_;  // by user name; never erased (sessions refer to it)
  std::unique_ptr<asio::steady_timer> heartbeat_timer_;
  std::unique_ptr<asio::steady_timer> status_timer_;
  std::deque<v1::RecentError> recent_errors_;  // the last kRecentErrors raised, oldest first
  std::unique_ptr<asio::steady_timer> drain_timer_;
  std::unique_ptr<asio::steady_timer> drain_poll_timer_;  // re-checks while client input is unread
  std::function<void()> drained_;
  uint64_t next_conn_id_ = 1;
  uint64_t next_session_id_ = 1;
  uint64_t sessions_started_ = 0;
  const std::chrono::steady_clock::time_point started_at_ = std::chrono::steady_clock::now();
  std::unordered_map<uint64_t, std::shared_ptr<Conn>> conns_;
  std::map<uint64_t, std::unique_ptr<ClientSession>> sessions_;
  WorkerPool pool_{opts_, log_, *this};
  std::vector<std::pair<std::shared_ptr<Conn>, v1::Hello>> waiting_clients_;
  v1::ClientMessage client_msg_;   // reused across frames
  bool had_client_ = false;
  bool shutting_down_ = false;
  uint64_t bytes_from_clients_ = 0;
  uint64_t upload_bytes_unparsed_ = 0;  // on_client_payload_frame's payloads
  uint64_t closed_client_bytes_in_ = 0, closed_worker_bytes_in_ = 0;
  // Connection-layer limits (ARCHITECTURE §8: no hostile peer exhausts the dispatcher).
  uint32_t pending_conns_ = 0;
  std::unordered_map<std::string, uint32_t> pending_by_peer_;
  std::shared_ptr<uint64_t> client_backlog_ = std::make_shared<uint64_t>(0);  // all clients' unread replies
  std::string chunk_header_;  // send_fetch_chunk's, reused (no allocation per reply)
  LogLimiter refuse_log_{std::chrono::seconds(5), 10};
  LogLimiter backlog_log_{std::chrono::seconds(5), 1};
};

}  // namespace gt::dispatcher
