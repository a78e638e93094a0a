// Connections and the handshake: every accepted socket sends Hello first (as a ClientMessage or
// WorkerMessage: field 1 is Hello in both), and is answered with Welcome or a Refusal with a
// reason (field 2 in both server-side envelopes).
#include "dispatcherd/dispatcher.h"
#include "dispatcherd/peer_uid.h"

#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>

#include "libgtcore/ops.h"
#include "libgtcore/version.h"

namespace gt::dispatcher {

Dispatcher::Dispatcher(asio::io_context& io, DispatcherOptions opts, InstructionLog* log,
                       UserTable users)
    : io_(io), opts_(std::move(opts)), log_(log), users_(std::move(users)) {
  // Session ids and collective tags start at a random epoch, so a worker that has not yet
  // noticed a dispatcher restart cannot match a stale message to new work.
  std::random_device rd;
  const uint64_t epoch = (static_cast<uint64_t>(rd()) << 16) | (rd() & 0xffff);
  next_session_id_ = (epoch << 16) + 1;
  next_comm_tag_ = (static_cast<uint64_t>(rd()) << 32) + 1;
  if (opts_.max_total_client_backlog_bytes == 0) {
    // Default: a quarter of physical memory (at least 256 MiB).
    long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    uint64_t phys = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * page : 4ull << 30;
    opts_.max_total_client_backlog_bytes = std::max<uint64_t>(phys / 4, 256ull << 20);
  }
}

Dispatcher::~Dispatcher() = default;

std::string Dispatcher::source_of(const Conn& c) const {
  switch (c.role) {
    case Conn::Role::kClient: return fmt::format("CLIENT:{}", c.session);
    case Conn::Role::kWorker: return fmt::format("WORKER:{}", c.worker);
    default: return fmt::format("CONN:{}", c.id);
  }
}

namespace {

// What pending connections are counted by: a TCP peer's IP address, a Unix-socket peer's uid.
std::string peer_key_of(StreamSocket& s) {
  const int fd = s.native_handle();
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  char buf[INET6_ADDRSTRLEN] = {};
  switch (ss.ss_family) {
    case AF_UNIX: {
      ucred cred{};
      socklen_t clen = sizeof(cred);
      if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0)
        return "uid " + std::to_string(cred.uid);
      return "unix";
    }
    case AF_INET:
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, buf, sizeof(buf));
      return buf;
    case AF_INET6:
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof(buf));
      return buf;
    default: return "?";
  }
}

}  // namespace

void Dispatcher::accept(StreamSocket socket, const std::string& transport) {
  if (shutting_down_) return;
  // Connections that have not said Hello cost memory and a file descriptor for nothing yet:
  // their number is capped, in all and per peer address, and the rest are refused at once.
  std::string key = peer_key_of(socket);
  auto at = pending_by_peer_.find(key);
  const uint32_t from_peer = at == pending_by_peer_.end() ? 0 : at->second;
  if (pending_conns_ >= opts_.max_pending_connections) {
    refuse_unadmitted(std::move(socket), key,
                      fmt::format("too many connections waiting for their Hello ({}, the limit "
                                  "is max_pending_connections); try again later",
                                  pending_conns_));
    return;
  }
  if (from_peer >= opts_.max_pending_per_address) {
    refuse_unadmitted(std::move(socket), key,
                      fmt::format("too many connections from {} waiting for their Hello ({}, the "
                                  "limit is max_pending_per_address); try again later",
                                  key, from_peer));
    return;
  }
  auto c = std::make_shared<Conn>();
  c->id = next_conn_id_++;
  c->transport = transport;
  // Before a successful Hello only a Hello-sized frame is accepted (a stranger's length prefix
  // must not make us allocate max_frame_bytes); start_session / register_worker raise it.
  c->io = std::make_shared<FramedConnection>(
      std::move(socket), std::min(opts_.max_handshake_frame_bytes, opts_.max_frame_bytes));
  c->peer_key = std::move(key);
  c->counted_pending = true;
  pending_conns_++;
  pending_by_peer_[c->peer_key]++;
  conns_[c->id] = c;
  std::weak_ptr<Conn> weak = c;
  c->deadline = std::make_unique<asio::steady_timer>(io_);
  c->deadline->expires_after(std::chrono::milliseconds(opts_.handshake_timeout_ms));
  c->deadline->async_wait([this, weak](boost::system::error_code ec) {
    auto c = weak.lock();
    if (ec || !c || c->role != Conn::Role::kPending) return;
    refuse(c, "no Hello within the handshake timeout");
  });
  c->io->set_bad_frame_handler([this, weak](const Status& why) {
    if (auto c = weak.lock()) refuse(c, why.message());
  });
  c->io->start([this, weak](std::string_view body) {
                 if (auto c = weak.lock()) on_frame(c, body);
               },
               [this, weak](const Status& why) {
                 if (auto c = weak.lock()) on_close(c, why);
               });
}

void Dispatcher::leave_pending(Conn& c) {
  if (!c.counted_pending) return;
  c.counted_pending = false;
  if (pending_conns_ > 0) pending_conns_--;
  auto it = pending_by_peer_.find(c.peer_key);
  if (it != pending_by_peer_.end() && --it->second == 0) pending_by_peer_.erase(it);
}

void Dispatcher::refuse_unadmitted(StreamSocket socket, const std::string& peer,
                                   const std::string& reason) {
  uint64_t held = 0;
  if (refuse_log_.allow(&held)) {
    spdlog::warn("refusing a connection from {}: {}{}", peer, reason,
                 held ? fmt::format(" ({} more refusals not logged)", held) : std::string());
    if (log_->enabled()) log_->write("REFUSE", "CONN:-", "-", 0, reason);
  }
  // Never read: the refusal is written, then the socket closed.
  auto io = std::make_shared<FramedConnection>(std::move(socket), kFrameHeaderBytes);
  v1::ServerMessage m;
  m.mutable_refusal()->set_reason(reason);
  (void)io->send(m);
  io->close_after_flush();
}

void Dispatcher::refuse(const std::shared_ptr<Conn>& c, const std::string& reason) {
  if (c->io->closing()) return;  // refused already: once is enough (and logged once)
  uint64_t held = 0;
  if (refuse_log_.allow(&held)) {
    spdlog::warn("refusing {} ({}): {}{}", source_of(*c), c->io->peer(), reason,
                 held ? fmt::format(" ({} more refusals not logged)", held) : std::string());
    if (log_->enabled()) log_->write("REFUSE", source_of(*c), "-", 0, reason);
  }
  v1::ServerMessage m;  // DispatchMessage has the same field number for its refusal
  m.mutable_refusal()->set_reason(reason);
  (void)c->io->send(m);
  c->io->close_after_flush();
}

void Dispatcher::on_frame(const std::shared_ptr<Conn>& c, std::string_view body) {
  switch (c->role) {
    case Conn::Role::kClient: {
      auto it = sessions_.find(c->session);
      if (it != sessions_.end()) on_client_frame(it->second, body);
      return;
    }
    case Conn::Role::kWorker: {
      auto it = workers_.find(c->worker);
      if (it != workers_.end()) on_worker_frame(it->second, body);
      return;
    }
    case Conn::Role::kPending: {
      v1::ClientMessage m;
      Status st = parse_frame(body, &m);
      if (!st.is_ok() || m.kind_case() != v1::ClientMessage::kHello) {
        refuse(c, st.is_ok() ? "expected Hello as the first frame" : st.message());
        return;
      }
      leave_pending(*c);  // it said Hello: what follows has its own limits (quotas, windows)
      on_hello(c, m.hello());
      return;
    }
    case Conn::Role::kClosed: return;
  }
}

void Dispatcher::on_hello(const std::shared_ptr<Conn>& c, const v1::Hello& hello) {
  if (hello.proto_major() != kProtoMajor) {
    refuse(c, fmt::format("protocol version {}.{} is not supported (this dispatcher speaks {}.{})",
                          hello.proto_major(), hello.proto_minor(), kProtoMajor, kProtoMinor));
    return;
  }
  if (hello.op_table_hash() != op_table_hash()) {
    refuse(c, fmt::format("op table mismatch (peer {:016x}, dispatcher {:016x}): rebuild both "
                          "from the same source",
                          hello.op_table_hash(), op_table_hash()));
    return;
  }
  switch (hello.role()) {
    case v1::ROLE_CLIENT:
      if (shutting_down_) {
        refuse(c, "the dispatcher is shutting down");
        return;
      }
      if (workers_.size() < static_cast<size_t>(std::max(1, opts_.min_workers))) {
        // Hold the client until enough workers register (the embedded default starts them all
        // at once, and a signal config naming worker 1 must not race worker 1's Hello). After
        // worker_wait_ms the session starts with the workers there are, if any.
        c->deadline->expires_after(std::chrono::milliseconds(opts_.worker_wait_ms));
        std::weak_ptr<Conn> weak = c;
        c->deadline->async_wait([this, weak](boost::system::error_code ec) {
          auto c = weak.lock();
          if (ec || !c || c->role != Conn::Role::kPending) return;
          auto it = std::find_if(waiting_clients_.begin(), waiting_clients_.end(),
                                 [&](auto& p) { return p.first == c; });
          if (it == waiting_clients_.end()) return;
          v1::Hello hello = std::move(it->second);
          waiting_clients_.erase(it);
          if (workers_.empty()) {
            refuse(c, "no workers are registered with this dispatcher");
            return;
          }
          spdlog::warn("starting a session with {} of the {} expected workers", workers_.size(),
                       opts_.min_workers);
          start_session(c, hello);
        });
        waiting_clients_.emplace_back(c, hello);
        return;
      }
      start_session(c, hello);
      return;
    case v1::ROLE_WORKER:
      // A stranger must not be able to register as a worker and receive tensors.
      if (Status st = authenticate_worker(*c, hello); !st.is_ok()) {
        refuse(c, st.message());
        return;
      }
      register_worker(c, hello);
      return;
    default: refuse(c, "Hello without a valid role"); return;
  }
}

uint32_t Dispatcher::pick_home_worker() const {
  // Least loaded: fewest sessions homed there, then lowest id.
  const WorkerState* best = nullptr;
  for (const auto& [id, w] : workers_)
    if (!best || w.sessions_homed < best->sessions_homed) best = &w;
  return best ? best->id : 0;
}

Result<UserPolicy> Dispatcher::authenticate_client(const Conn& c, const v1::Hello& hello) const {
  if (c.transport == "unix") {
    // Local users are who the kernel says they are.
    ucred cred{};
    socklen_t len = sizeof(cred);
    int fd = c.io->socket().native_handle();
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
      return permission_denied("cannot read the peer's credentials");
    char buf[4096];
    passwd pw{};
    passwd* found = nullptr;
    std::string name = ::getpwuid_r(cred.uid, &pw, buf, sizeof(buf), &found) == 0 && found
                           ? std::string(found->pw_name)
                           : "uid" + std::to_string(cred.uid);
    UserPolicy p = users_.policy_for(name);
    if (!users_.configured()) p.admin = true;  // single-user development setup
    return p;
  }
  if (!users_.configured()) {
    UserPolicy p = users_.defaults();
    p.name = "anonymous";
    p.admin = true;  // no users file: a single-user development setup on loopback
    return p;
  }
  const UserPolicy* u = users_.find_by_token(hello.credentials().token());
  if (!u)
    return Status(Code::kPermissionDenied,
                  hello.credentials().token().empty()
                      ? "authentication required: set GT_TOKEN (or GT_TOKEN_FILE)"
                      : "authentication failed: unknown token");
  return *u;
}

Status Dispatcher::authenticate_worker(const Conn& c, const v1::Hello& hello) const {
  if (!opts_.worker_secret.empty()) {
    if (!constant_time_equal(hello.credentials().worker_secret(), opts_.worker_secret))
      return permission_denied("worker authentication failed: wrong or missing worker secret");
    return Status::ok();
  }
  // No secret: a worker must be a process of this dispatcher's own user (or root) on this box,
  // which only the kernel can vouch for: SO_PEERCRED on the Unix socket, the socket table's
  // owner for a loopback TCP peer. Anyone else (another local user, another host) could claim
  // to be a worker and receive tensors.
  std::optional<uid_t> uid;
  if (c.transport == "unix") {
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (::getsockopt(c.io->socket().native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
      uid = cred.uid;
  } else {
    uid = loopback_tcp_peer_uid(c.io->socket().native_handle());
    if (!uid)
      return permission_denied(
          "worker authentication failed: this dispatcher has no worker_secret_file, so workers "
          "must run on this host as its own user (Unix socket or loopback TCP); a worker on "
          "another host needs worker_secret_file on both daemons");
  }
  if (!uid) return permission_denied("worker authentication failed: cannot read the peer's credentials");
  const uid_t self = ::geteuid();
  if (*uid != self && *uid != 0)
    return permission_denied(
        "worker authentication failed: uid {} is neither this dispatcher's user (uid {}) nor "
        "root, and without a worker_secret_file only they may register as workers",
        *uid, self);
  return Status::ok();
}

void Dispatcher::start_session(const std::shared_ptr<Conn>& c, const v1::Hello& hello) {
  c->deadline->cancel();
  auto user = authenticate_client(*c, hello);
  if (!user.is_ok()) {
    refuse(c, user.status().message());
    return;
  }
  UserUsage& use = usage_[user->name];
  if (user->max_sessions && use.sessions >= user->max_sessions) {
    refuse(c, fmt::format("session quota: user {} already has {} sessions (limit {})",
                          user->name, use.sessions, user->max_sessions));
    return;
  }
  use.sessions++;
  c->role = Conn::Role::kClient;
  c->io->decoder().set_max_frame_bytes(opts_.max_frame_bytes);
  c->io->set_backlog_counter(client_backlog_);
  c->session = next_session_id_++;
  ClientSession& s = sessions_[c->session];
  s.id = c->session;
  s.conn = c;
  s.name = hello.client_name();
  s.user = *user;
  s.admin = user->admin;
  s.signals = SignalState(&opts_.signal_configs);
  if (!s.user.window) s.user.window = opts_.user_window;
  if (!workers_.empty()) {
    s.home_worker = pick_home_worker();
    s.has_home = true;
    workers_[s.home_worker].sessions_homed++;
  }
  had_client_ = true;
  v1::ServerMessage m;
  auto* w = m.mutable_welcome();
  w->set_proto_major(kProtoMajor);
  w->set_proto_minor(kProtoMinor);
  w->set_session_id(s.id);
  w->set_num_workers(static_cast<uint32_t>(workers_.size()));
  w->set_max_frame_bytes(opts_.max_frame_bytes);
  w->set_server_version(kVersion);
  w->set_identity(s.user.name);
  (void)c->io->send(m);
  spdlog::info("session {} started ({} of user {} via {}, home worker {})", s.id,
               s.name.empty() ? "client" : s.name, s.user.name, c->transport, s.home_worker);
  if (log_->enabled())
    log_->write("CONNECT", source_of(*c), "Hello", 0,
                fmt::format("name={} user={} via={} home=worker{}", s.name, s.user.name,
                            c->transport, s.home_worker));
}

void Dispatcher::register_worker(const std::shared_ptr<Conn>& c, const v1::Hello& hello) {
  c->deadline->cancel();
  c->role = Conn::Role::kWorker;
  c->io->decoder().set_max_frame_bytes(opts_.max_frame_bytes);
  // Few, trusted, and carrying every fetch reply: keep its buffer between large frames.
  c->io->decoder().set_retain_bytes(opts_.max_frame_bytes);
  c->worker = next_worker_id_++;  // ids are never reused: a restarted worker gets a new one
  WorkerState& w = workers_[c->worker];
  w.id = c->worker;
  w.conn = c;
  w.info = hello.worker();
  v1::DispatchMessage m;
  auto* wel = m.mutable_welcome();
  wel->set_proto_major(kProtoMajor);
  wel->set_proto_minor(kProtoMinor);
  wel->set_worker_id(w.id);
  wel->set_num_workers(static_cast<uint32_t>(workers_.size()));
  wel->set_max_frame_bytes(opts_.max_frame_bytes);
  wel->set_server_version(kVersion);
  wel->set_heartbeat_interval_ms(static_cast<uint32_t>(opts_.heartbeat_interval_ms));
  (void)c->io->send(m);
  spdlog::info("worker {} registered: {} {} ({} MiB)", w.id, w.info.device_kind(),
               w.info.device_name(), w.info.memory_bytes() >> 20);
  if (log_->enabled())
    log_->write("WORKER_JOIN", source_of(*c), "Hello", 0,
                fmt::format("device={} name={}", w.info.device_kind(), w.info.device_name()));
  broadcast_peer_table();
  // Sessions left without a home (their worker died) get this one.
  for (auto& [sid, s] : sessions_) {
    if (!s.has_home) {
      s.home_worker = w.id;
      s.has_home = true;
      w.sessions_homed++;
    }
  }
  admit_waiting_clients();
}

void Dispatcher::broadcast_peer_table() {
  // Workers exchange shards directly: each learns where its peers listen.
  v1::DispatchMessage m;
  for (const auto& [id, w] : workers_) {
    if (w.info.peer_address().empty()) continue;
    auto* p = m.mutable_peers()->add_peers();
    p->set_worker_id(id);
    p->set_address(w.info.peer_address());
  }
  for (auto& [id, w] : workers_) (void)w.conn->io->send(m);
}

void Dispatcher::admit_waiting_clients() {
  if (workers_.size() < static_cast<size_t>(std::max(1, opts_.min_workers))) return;
  auto waiting = std::move(waiting_clients_);
  waiting_clients_.clear();
  for (auto& [c, hello] : waiting)
    if (!c->io->closed() && c->role == Conn::Role::kPending) start_session(c, hello);
}

void Dispatcher::on_close(const std::shared_ptr<Conn>& c, const Status& why) {
  Conn::Role role = c->role;
  c->role = Conn::Role::kClosed;
  if (role == Conn::Role::kClient) closed_client_bytes_in_ += c->io->bytes_in();
  if (role == Conn::Role::kWorker) closed_worker_bytes_in_ += c->io->bytes_in();
  if (c->deadline) c->deadline->cancel();
  leave_pending(*c);
  conns_.erase(c->id);
  if (role == Conn::Role::kClient) {
    auto it = sessions_.find(c->session);
    if (it != sessions_.end()) {
      if (!why.is_ok()) spdlog::warn("session {}: {}", c->session, why.message());
      end_session(it->second);
      sessions_.erase(it);
    }
    if (opts_.exit_when_idle && had_client_ && sessions_.empty() && on_idle) on_idle();
  } else if (role == Conn::Role::kWorker) {
    auto it = workers_.find(c->worker);
    if (it != workers_.end()) {
      on_worker_gone(it->second, why.is_ok() ? "disconnected" : why.message());
      workers_.erase(it);
    }
    broadcast_peer_table();
    // Sessions that lost their home move to the least-loaded remaining worker.
    for (auto& [sid, s] : sessions_) {
      if (s.has_home || workers_.empty()) continue;
      s.home_worker = pick_home_worker();
      s.has_home = true;
      workers_[s.home_worker].sessions_homed++;
    }
    resume_paused_sessions();
  } else if (role == Conn::Role::kPending) {
    std::erase_if(waiting_clients_, [&](auto& p) { return p.first == c; });
  }
}

void Dispatcher::start_heartbeats() {
  heartbeat_timer_ = std::make_unique<asio::steady_timer>(io_);
  heartbeat_tick();
}

void Dispatcher::heartbeat_tick() {
  auto now = std::chrono::steady_clock::now();
  std::vector<std::pair<std::shared_ptr<Conn>, Status>> dead;
  v1::DispatchMessage ping;
  ping.mutable_heartbeat()->set_nonce(++heartbeat_nonce_);
  std::set<uint32_t> awaited;  // workers with a request not yet answered
  if (opts_.progress_timeout_ms > 0)
    for (const auto& [rid, route] : requests_) awaited.insert(route.worker);
  for (auto& [id, w] : workers_) {
    auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - w.last_heard);
    if (silent.count() > opts_.heartbeat_timeout_ms) {
      spdlog::warn("worker {} stopped answering ({} ms without a heartbeat)", id, silent.count());
      dead.emplace_back(w.conn, deadline_exceeded("no heartbeat for over {} ms",
                                                  opts_.heartbeat_timeout_ms));
      continue;
    }
    if (opts_.progress_timeout_ms > 0) {
      // Answering heartbeats is not enough: a worker with work outstanding must also make
      // progress (Ack / Reply frames), else it is wedged, or not a real worker at all.
      if (w.outstanding() == 0 && w.inflight.empty() && !awaited.count(id)) {
        w.progress_at = now;
      } else if (auto stalled =
                     std::chrono::duration_cast<std::chrono::milliseconds>(now - w.progress_at);
                 stalled.count() > opts_.progress_timeout_ms) {
        spdlog::warn("worker {} made no progress for {} ms with work outstanding ({} "
                     "instructions unacknowledged): dropping it",
                     id, stalled.count(), w.outstanding());
        dead.emplace_back(w.conn,
                          deadline_exceeded("made no progress for over {} ms with work "
                                            "outstanding (progress_timeout_ms)",
                                            opts_.progress_timeout_ms));
        continue;
      }
    }
    (void)w.conn->io->send(ping);
  }
  for (auto& [c, why] : dead) c->io->close(why);
  heartbeat_timer_->expires_after(std::chrono::milliseconds(opts_.heartbeat_interval_ms));
  heartbeat_timer_->async_wait([this](boost::system::error_code ec) {
    if (!ec) heartbeat_tick();
  });
}

void Dispatcher::drain(int deadline_ms, std::function<void()> done) {
  shutting_down_ = true;  // new sessions are refused; existing ones finish what they sent
  drained_ = std::move(done);
  drain_timer_ = std::make_unique<asio::steady_timer>(io_);
  drain_timer_->expires_after(std::chrono::milliseconds(deadline_ms));
  drain_timer_->async_wait([this](boost::system::error_code ec) {
    if (ec || !drained_) return;
    spdlog::warn("drain deadline passed with work still queued");
    auto fn = std::move(drained_);
    drained_ = nullptr;
    fn();
  });
  check_drained();
}

void Dispatcher::check_drained() {
  if (!drained_) return;
  for (auto& [id, w] : workers_)
    if (w.outstanding() > 0 || !w.sched.empty()) return;
  // What clients sent before the signal is theirs to see finished, even when it is still in
  // the socket or half-read (a large frame arrives in several reads): look again shortly.
  for (const auto& [id, c] : conns_) {
    if (c->role != Conn::Role::kClient || c->io->closed()) continue;
    int unread = 0;
    if (c->io->decoder().buffered() > 0 ||
        (::ioctl(c->io->socket().native_handle(), FIONREAD, &unread) == 0 && unread > 0)) {
      if (!drain_poll_timer_) drain_poll_timer_ = std::make_unique<asio::steady_timer>(io_);
      drain_poll_timer_->expires_after(std::chrono::milliseconds(10));
      drain_poll_timer_->async_wait([this](boost::system::error_code ec) {
        if (!ec) check_drained();
      });
      return;
    }
  }
  drain_timer_->cancel();
  auto fn = std::move(drained_);
  drained_ = nullptr;
  fn();
}

void Dispatcher::shutdown() {
  shutting_down_ = true;
  std::vector<std::shared_ptr<Conn>> all;
  for (auto& [id, c] : conns_) all.push_back(c);
  for (auto& c : all) c->io->close_after_flush();
}

}  // namespace gt::dispatcher
