// The Dispatcher's connections and their lifetime: accepting (within the pending-connection
// caps), refusing, dispatching frames by role (the Hello to handshake.cpp, client batches to
// their session, worker frames to the pool), closing (a session ends, a worker leaves), and the
// heartbeat, drain and shutdown timers.
#include "dispatcherd/dispatcher.h"

#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>

#include "dispatcherd/client_session.h"
#include "libgtcore/upload_frame.h"

namespace gt::dispatcher {

Dispatcher::Dispatcher(asio::io_context& io, DispatcherOptions opts, InstructionLog* log,
                       UserTable users)
    : io_(io), opts_(std::move(opts)), log_(log), users_(std::move(users)) {
  // Session ids start at a random epoch (collective tags too: WorkerPool), so a worker that
  // has not yet noticed a dispatcher restart cannot match a stale message to new work.
  std::random_device rd;
  const uint64_t epoch = (static_cast<uint64_t>(rd()) << 16) | (rd() & 0xffff);
  next_session_id_ = (epoch << 16) + 1;
  if (opts_.max_total_client_backlog_bytes == 0) {
    // Default: a quarter of physical memory (at least 256 MiB).
    long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    uint64_t phys = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * page : 4ull << 30;
    opts_.max_total_client_backlog_bytes = std::max<uint64_t>(phys / 4, 256ull << 20);
  }
}

Dispatcher::~Dispatcher() = default;

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
                      resource_exhausted("too many connections waiting for their Hello ({}, the "
                                         "limit is max_pending_connections); try again later",
                                         pending_conns_));
    return;
  }
  if (from_peer >= opts_.max_pending_per_address) {
    refuse_unadmitted(std::move(socket), key,
                      resource_exhausted("too many connections from {} waiting for their Hello "
                                         "({}, the limit is max_pending_per_address); try again "
                                         "later",
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
  // A local client registers shared-memory arenas by passing their descriptors: they are kept
  // from the first byte (a read armed before its Welcome must not drop one), at most 4 waiting.
  if (transport == "unix" && opts_.shm_arena_max_bytes > 0) c->io->accept_fds(4);
  c->peer_key = std::move(key);
  c->counted_pending = true;
  pending_conns_++;
  pending_by_peer_[c->peer_key]++;
  conns_[c->id] = c;
  spdlog::debug("connection {} accepted over {} from {} ({} waiting for their Hello)", c->id,
                transport, c->peer_key, pending_conns_);
  std::weak_ptr<Conn> weak = c;
  c->deadline = std::make_unique<asio::steady_timer>(io_);
  c->deadline->expires_after(std::chrono::milliseconds(opts_.handshake_timeout_ms));
  c->deadline->async_wait([this, weak](boost::system::error_code ec) {
    auto c = weak.lock();
    if (ec || !c || c->role != Conn::Role::kPending) return;
    refuse(c, deadline_exceeded("no Hello within the handshake timeout"));
  });
  c->io->set_bad_frame_handler([this, weak](const Status& why) {
    if (auto c = weak.lock()) refuse(c, why);
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
                                   const Status& why) {
  const std::string& reason = why.message();
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
  m.mutable_refusal()->set_code(static_cast<uint32_t>(why.code()));
  (void)io->send(m);
  io->close_after_flush();
}

void Dispatcher::refuse(const std::shared_ptr<Conn>& c, const Status& why) {
  if (c->io->closing()) return;  // refused already: once is enough (and logged once)
  const std::string& reason = why.message();
  uint64_t held = 0;
  if (refuse_log_.allow(&held)) {
    spdlog::warn("refusing {} ({}): {}{}", source_of(*c), c->io->peer(), reason,
                 held ? fmt::format(" ({} more refusals not logged)", held) : std::string());
    if (log_->enabled()) log_->write("REFUSE", source_of(*c), "-", 0, reason);
  }
  v1::ServerMessage m;  // DispatchMessage has the same field number for its refusal
  m.mutable_refusal()->set_reason(reason);
  m.mutable_refusal()->set_code(static_cast<uint32_t>(why.code()));
  (void)c->io->send(m);
  c->io->close_after_flush();
}

void Dispatcher::on_frame(const std::shared_ptr<Conn>& c, std::string_view body) {
  switch (c->role) {
    case Conn::Role::kClient: {
      auto it = sessions_.find(c->session);
      if (it != sessions_.end()) on_client_frame(*it->second, body);
      return;
    }
    case Conn::Role::kWorker: {
      if (WorkerState* w = pool_.find(c->worker)) pool_.on_frame(*w, body);
      return;
    }
    case Conn::Role::kPending: {
      v1::ClientMessage m;
      Status st = parse_frame(body, &m);
      if (!st.is_ok() || m.kind_case() != v1::ClientMessage::kHello) {
        refuse(c, st.is_ok() ? invalid_argument("expected Hello as the first frame") : st);
        return;
      }
      leave_pending(*c);  // it said Hello: what follows has its own limits (quotas, windows)
      on_hello(c, m.hello());
      return;
    }
    case Conn::Role::kClosed: return;
  }
}

namespace {
constexpr size_t kKeptFrameBytes = size_t{1} << 20;  // on_client_frame
}  // namespace

void Dispatcher::clear_client_message() {
  // The batch stays (cleared) between frames and the parser reuses its instruction messages:
  // parsing afresh deleted the oneof's batch and allocated every instruction again (the
  // dispatcher's largest share of malloc per frame).
  if (client_msg_.kind_case() == v1::ClientMessage::kBatch) client_msg_.mutable_batch()->Clear();
  else client_msg_.Clear();
}

void Dispatcher::on_client_frame(ClientSession& s, std::string_view body) {
  bytes_from_clients_ += body.size();
  clear_client_message();
  Status st = merge_frame(body, &client_msg_);
  if (!st.is_ok()) {
    refuse(s.conn(), st);
    return;
  }
  run_client_message(s, body.size());
}

void Dispatcher::on_client_payload_frame(ClientSession& s, std::string_view head,
                                         std::string&& payload) {
  const size_t body_size = head.size() + payload.size();
  bytes_from_clients_ += body_size;
  upload_bytes_unparsed_ += payload.size();
  clear_client_message();
  Status st = merge_upload_frame(head, body_size, std::move(payload), &client_msg_);
  if (!st.is_ok()) {
    refuse(s.conn(), st);
    return;
  }
  run_client_message(s, body_size);
}

void Dispatcher::run_client_message(ClientSession& s, size_t frame_bytes) {
  if (client_msg_.kind_case() == v1::ClientMessage::kShmArena) {
    Status reg = s.register_shm_arena(client_msg_.shm_arena(), s.conn()->io->take_fd());
    client_msg_.Clear();
    if (!reg.is_ok()) refuse(s.conn(), reg);
    return;
  }
  if (client_msg_.kind_case() != v1::ClientMessage::kBatch) {
    refuse(s.conn(), invalid_argument("expected an instruction batch"));
    return;
  }
  v1::ClientBatch* batch = client_msg_.mutable_batch();
  const int n_free = batch->frees_size();
  if (spdlog::should_log(spdlog::level::debug))
    spdlog::debug("session {}: frame of {} bytes: {} instructions, {} frees, {} requests", s.id(),
                  frame_bytes, batch->instrs_size(), n_free, batch->requests_size());
  if (batch->free_at_size() != 0 && batch->free_at_size() != n_free) {
    refuse(s.conn(), invalid_argument("malformed batch: {} frees but {} free_at positions", n_free,
                                      batch->free_at_size()));
    batch->Clear();
    return;
  }
  s.run_batch(*batch, frame_bytes);
  // Its messages are kept for the next frame's parse, but not a large frame's: cleared strings
  // keep their room, and the uploads it carried would stay allocated.
  if (frame_bytes > kKeptFrameBytes) client_msg_.Clear();
  else batch->Clear();
}

void Dispatcher::on_close(const std::shared_ptr<Conn>& c, const Status& why) {
  if (spdlog::should_log(spdlog::level::debug))
    spdlog::debug("connection {} ({}) closed{}{}", c->id, source_of(*c), why.is_ok() ? "" : ": ",
                  why.message());
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
      it->second->end();
      sessions_.erase(it);
    }
    if (opts_.exit_when_idle && had_client_ && sessions_.empty() && on_idle) on_idle();
  } else if (role == Conn::Role::kWorker) {
    pool_.remove(c->worker, why.is_ok() ? "disconnected" : why.message(), shutting_down_);
    // Sessions that lost their home move to the least-loaded remaining worker.
    for (auto& [sid, s] : sessions_) {
      if (s->has_home() || pool_.empty()) continue;
      s->set_home(pool_.least_loaded());
    }
    resume_paused_sessions();
  } else if (role == Conn::Role::kPending) {
    std::erase_if(waiting_clients_, [&](auto& p) { return p.first == c; });
  }
}

void Dispatcher::start_heartbeats() {
  heartbeat_timer_ = std::make_unique<asio::steady_timer>(io_);
  heartbeat_tick();
  status_timer_ = std::make_unique<asio::steady_timer>(io_);
  status_tick();
}

void Dispatcher::heartbeat_tick() {
  pool_.check_liveness();
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
  if (!pool_.idle()) return;
  // What clients sent before the signal is theirs to see finished, even when it is still in
  // the socket or half-read (a large frame arrives in several reads): look again shortly.
  for (const auto& [id, c] : conns_) {
    if (c->role != Conn::Role::kClient || c->io->closed()) continue;
    int unread = 0;
    if (c->io->mid_frame() ||
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

void Dispatcher::resume_paused_sessions() {
  for (auto& [sid, s] : sessions_) s->resume_if_below_window();
}

void Dispatcher::shutdown() {
  shutting_down_ = true;
  std::vector<std::shared_ptr<Conn>> all;
  for (auto& [id, c] : conns_) all.push_back(c);
  for (auto& c : all) c->io->close_after_flush();
}

}  // namespace gt::dispatcher
