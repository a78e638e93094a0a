// The handshake: every accepted socket sends Hello first (as a ClientMessage or WorkerMessage:
// field 1 is Hello in both), and is answered with Welcome or a Refusal with a reason (field 2 in
// both server-side envelopes). A client is authenticated and becomes a ClientSession (or waits
// for min_workers); a worker is authenticated and joins the WorkerPool.
#include <spdlog/spdlog.h>

#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dispatcherd/client_session.h"
#include "dispatcherd/dispatcher.h"
#include "dispatcherd/peer_uid.h"
#include "gt/core/ops.h"
#include "libgtcore/upload_frame.h"
#include "libgtcore/version.h"

namespace gt::dispatcher {

void Dispatcher::on_hello(const std::shared_ptr<Conn>& c, const v1::Hello& hello) {
  if (hello.proto_major() != kProtoMajor) {
    refuse(c, failed_precondition(
                  "protocol version {}.{} is not supported (this dispatcher speaks {}.{})",
                  hello.proto_major(), hello.proto_minor(), kProtoMajor, kProtoMinor));
    return;
  }
  if (hello.op_table_hash() != op_table_hash()) {
    refuse(c, failed_precondition("op table mismatch (peer {:016x}, dispatcher {:016x}): rebuild "
                                  "both from the same source",
                                  hello.op_table_hash(), op_table_hash()));
    return;
  }
  switch (hello.role()) {
    case v1::ROLE_CLIENT:
      if (shutting_down_) {
        refuse(c, unavailable("the dispatcher is shutting down"));
        return;
      }
      if (pool_.size() < static_cast<size_t>(std::max(1, opts_.min_workers))) {
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
          if (pool_.empty()) {
            refuse(c, unavailable("no workers are registered with this dispatcher"));
            return;
          }
          spdlog::warn("starting a session with {} of the {} expected workers", pool_.size(),
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
        refuse(c, st);
        return;
      }
      register_worker(c, hello);
      return;
    default: refuse(c, invalid_argument("Hello without a valid role")); return;
  }
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
    refuse(c, user.status());
    return;
  }
  UserUsage& use = usage_[user->name];
  if (user->max_sessions && use.sessions >= user->max_sessions) {
    refuse(c, resource_exhausted("session quota: user {} already has {} sessions (limit {})",
                                 user->name, use.sessions, user->max_sessions));
    return;
  }
  use.sessions++;
  c->role = Conn::Role::kClient;
  c->io->decoder().set_max_frame_bytes(opts_.max_frame_bytes);
  c->io->set_backlog_counter(client_backlog_);
  // A large upload's payload is read into a string of its own as it arrives, which its
  // instruction then owns: the payload is never copied by a parse (libgtcore/upload_frame.h).
  std::weak_ptr<Conn> weak = c;
  c->io->set_payload_split(
      kSplitUploadBytes, scan_upload_frame,
      [this, weak](std::string_view head, std::string&& payload) {
        auto c = weak.lock();
        if (!c || c->role != Conn::Role::kClient) return;
        auto it = sessions_.find(c->session);
        if (it != sessions_.end()) on_client_payload_frame(*it->second, head, std::move(payload));
      });
  c->session = next_session_id_++;
  ++sessions_started_;
  std::unique_ptr<ClientSession>& slot = sessions_[c->session];
  slot = std::make_unique<ClientSession>(c->session, c, hello.client_name(), *user, use,
                                         ClientSession::Shared{opts_, log_, pool_, *this});
  ClientSession& s = *slot;
  if (!pool_.empty()) s.set_home(pool_.least_loaded());
  had_client_ = true;
  v1::ServerMessage m;
  auto* w = m.mutable_welcome();
  w->set_proto_major(kProtoMajor);
  w->set_proto_minor(kProtoMinor);
  w->set_session_id(s.id());
  w->set_num_workers(static_cast<uint32_t>(pool_.size()));
  w->set_max_frame_bytes(opts_.max_frame_bytes);
  w->set_server_version(kVersion);
  w->set_identity(s.user().name);
  // A local client may register shared-memory arenas (their descriptors are accepted: accept).
  if (c->transport == "unix") w->set_shm_arena_max_bytes(opts_.shm_arena_max_bytes);
  if (opts_.hot_paths) w->set_hot_path_segment(opts_.hot_path_segment);
  (void)c->io->send(m);
  spdlog::info("session {} started ({} of user {} via {}, home worker {})", s.id(),
               s.name().empty() ? "client" : s.name(), s.user().name, c->transport,
               s.home_worker());
  if (log_->enabled())
    log_->write("CONNECT", source_of(*c), "Hello", 0,
                fmt::format("name={} user={} via={} home=worker{}", s.name(), s.user().name,
                            c->transport, s.home_worker()));
}

void Dispatcher::register_worker(const std::shared_ptr<Conn>& c, const v1::Hello& hello) {
  c->deadline->cancel();
  c->role = Conn::Role::kWorker;
  c->io->decoder().set_max_frame_bytes(opts_.max_frame_bytes);
  // Few, trusted, and carrying every fetch reply: keep its buffer between large frames.
  c->io->decoder().set_retain_bytes(opts_.max_frame_bytes);
  WorkerState& w = pool_.add(c, hello);
  // Sessions left without a home (their worker died) get this one.
  for (auto& [sid, s] : sessions_)
    if (!s->has_home()) s->set_home(w.id);
  admit_waiting_clients();
}

void Dispatcher::admit_waiting_clients() {
  if (pool_.size() < static_cast<size_t>(std::max(1, opts_.min_workers))) return;
  auto waiting = std::move(waiting_clients_);
  waiting_clients_.clear();
  for (auto& [c, hello] : waiting)
    if (!c->io->closed() && c->role == Conn::Role::kPending) start_session(c, hello);
}

}  // namespace gt::dispatcher
