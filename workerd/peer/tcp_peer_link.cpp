#include "workerd/peer/tcp_peer_link.h"

#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "workerd/peer/collectives_cpu.h"

namespace gt::worker {

using peer::Mailbox;
using peer::MsgKey;
using peer::MsgKind;

namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kMarkerGrace = std::chrono::milliseconds(2000);

int ms_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

// "host:port" / "[v6]:port" -> host, port.
bool split_address(const std::string& addr, std::string* host, std::string* port) {
  auto colon = addr.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == addr.size()) return false;
  *host = addr.substr(0, colon);
  *port = addr.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']')
    *host = host->substr(1, host->size() - 2);
  return true;
}

std::string join_address(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

// Blocking read of exactly n bytes (the socket is blocking; SO_RCVTIMEO may bound it).
bool read_exact(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    return false;
  }
  return true;
}

// Reads and throws away n bytes.
bool skip_bytes(int fd, uint64_t n) {
  char buf[64 * 1024];
  while (n > 0) {
    size_t k = static_cast<size_t>(std::min<uint64_t>(n, sizeof buf));
    if (!read_exact(fd, buf, k)) return false;
    n -= k;
  }
  return true;
}

bool write_blocking(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    return false;
  }
  return true;
}

void set_recv_timeout(int fd, int ms) {
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Writes header + payload on a non-blocking socket before `deadline`.
Status write_frame(int fd, const char* header, size_t header_bytes, const char* data,
                   uint64_t bytes, Clock::time_point deadline) {
  uint64_t done = 0;
  const uint64_t total = header_bytes + bytes;
  while (done < total) {
    iovec iov[2];
    int n = 0;
    if (done < header_bytes) iov[n++] = {const_cast<char*>(header + done), header_bytes - done};
    uint64_t data_done = done > header_bytes ? done - header_bytes : 0;
    if (bytes > data_done)
      iov[n++] = {const_cast<char*>(data + data_done),
                  static_cast<size_t>(std::min<uint64_t>(bytes - data_done, uint64_t{1} << 30))};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n);
    ssize_t r = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (r > 0) {
      done += static_cast<uint64_t>(r);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (Clock::now() >= deadline) return deadline_exceeded("timed out with {} of {} bytes sent", done, total);
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, std::min(ms_until(deadline) + 1, 1000));
      continue;
    }
    return unavailable("connection lost: {}", r < 0 ? std::strerror(errno) : "closed");
  }
  return Status::ok();
}

// Reads exactly n bytes from a non-blocking socket before `deadline`.
Status read_deadline(int fd, char* p, size_t n, Clock::time_point deadline) {
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r == 0) return unavailable("connection closed");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return unavailable("{}", std::strerror(errno));
    if (Clock::now() >= deadline) return deadline_exceeded("no answer");
    pollfd pf{fd, POLLIN, 0};
    ::poll(&pf, 1, std::min(ms_until(deadline) + 1, 1000));
  }
  return Status::ok();
}

bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string describe_peer(const sockaddr_storage& sa) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (sa.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&sa);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (sa.ss_family == AF_INET6) {
    auto* in = reinterpret_cast<const sockaddr_in6*>(&sa);
    ::inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof host);
    port = ntohs(in->sin6_port);
  }
  return join_address(host, port);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct TcpPeerLink::Conn {
  Conn(int f, uint64_t i) : fd(f), id(i) {}
  ~Conn() {
    if (fd >= 0) ::close(fd);
  }
  void shutdown() { ::shutdown(fd, SHUT_RDWR); }

  int fd;
  uint64_t id;
  uint32_t peer = 0;
  std::string remote;
  std::mutex send_mu;                 // outgoing: one frame at a time
  std::atomic<bool> dropped{false};   // closed on purpose by this side: not a peer failure
};

struct TcpPeerLink::Thread {
  std::thread t;
  std::shared_ptr<Conn> conn;
  bool incoming = false;
  std::atomic<bool> done{false};
};

// One instruction's messages (peer::Channel): everything shares one deadline; the first
// failure or poison is sticky and turns the remaining sends into poison markers.
class TcpPeerLink::Exchange final : public peer::Channel {
 public:
  Exchange(TcpPeerLink& link, const char* op, uint64_t session, uint64_t tag, uint32_t self,
           Clock::time_point deadline, std::shared_ptr<const ErrorRecord> poison)
      : link_(link), op_(op), session_(session), tag_(tag), self_(self), deadline_(deadline),
        poison_(std::move(poison)) {}

  void expect(uint32_t peer, uint32_t step, uint64_t bytes) override {
    if (ok()) link_.mailbox_.expect(key(peer, step), bytes);
  }

  void send(uint32_t peer, uint32_t step, const void* data, uint64_t bytes) override {
    if (ok()) {
      Status st = link_.send_message(peer, MsgKind::kData, session_, tag_, step, data, bytes,
                                     deadline_);
      if (!st.is_ok()) {
        unreachable_.insert(peer);
        fail(st);
      }
      return;
    }
    // Poisoned or failed: the peer still gets a message for this step, carrying the error.
    if (unreachable_.count(peer) || link_.mailbox_.is_failed(peer)) return;  // nobody waits there
    const std::string marker = peer::encode_poison(*poison_);
    auto grace = Clock::now() + std::min<Clock::duration>(
                                    kMarkerGrace, std::chrono::milliseconds(link_.opts_.timeout_ms));
    Status st = link_.send_message(peer, MsgKind::kPoison, session_, tag_, step, marker.data(),
                                   marker.size(), std::max(deadline_, grace));
    if (!st.is_ok()) unreachable_.insert(peer);
    if (!st.is_ok())
      spdlog::debug("peer link: could not pass the error of tag {} on to worker {}: {}", tag_,
                    peer, st.message());
  }

  std::unique_ptr<char[]> recv(uint32_t peer, uint32_t step, uint64_t bytes) override {
    if (!ok()) return nullptr;
    auto m = link_.mailbox_.take(key(peer, step), bytes, deadline_);
    if (!m.is_ok()) {
      fail(m.status());
      return nullptr;
    }
    if (m->kind == MsgKind::kPoison) {
      auto rec = peer::decode_poison(std::string_view(m->data.get(), m->size));  // checked on arrival
      poison_ = std::make_shared<const ErrorRecord>(
          rec.is_ok() ? *rec : ErrorRecord{op_, "malformed poison marker", fmt::format("worker {}", peer), Code::kDataLoss});
      return nullptr;
    }
    return std::move(m->data);
  }

  bool ok() const override { return error_.is_ok() && !poison_; }

  void fail(const Status& st) {
    if (!error_.is_ok()) return;
    error_ = st;
    // What Executor::fail reports for this instruction; peers put the same record on theirs.
    poison_ = std::make_shared<const ErrorRecord>(
        ErrorRecord{op_, st.message(), fmt::format("worker {}", self_), st.code()});
  }

  Status finish(Tensor* out) {
    if (!ok()) link_.mailbox_.abandon(session_, tag_);  // drops leftovers, now and later
    if (!error_.is_ok()) return error_;
    if (poison_ && out) {
      out->poison = poison_;
      out->storage.reset();
    }
    return Status::ok();
  }

 private:
  MsgKey key(uint32_t peer, uint32_t step) const { return MsgKey{peer, step, session_, tag_}; }

  TcpPeerLink& link_;
  const char* op_;
  uint64_t session_, tag_;
  uint32_t self_;
  Clock::time_point deadline_;
  std::shared_ptr<const ErrorRecord> poison_;
  Status error_;
  std::set<uint32_t> unreachable_;  // sends to these failed: no markers either
};

// ---------------------------------------------------------------------------------------------

Result<std::unique_ptr<TcpPeerLink>> TcpPeerLink::create(TcpPeerLinkOptions opts) {
  if (opts.secret.size() > peer::kMaxSecretBytes)
    return invalid_argument("peer link secret longer than {} bytes", peer::kMaxSecretBytes);
  if (opts.timeout_ms <= 0) return invalid_argument("peer timeout must be positive");
  std::unique_ptr<TcpPeerLink> link(new TcpPeerLink(std::move(opts)));
  GT_RETURN_IF_ERROR(link->listen());
  link->accept_thread_ = std::thread([l = link.get()] { l->accept_loop(); });
  return link;
}

TcpPeerLink::TcpPeerLink(TcpPeerLinkOptions opts)
    : opts_(std::move(opts)), mailbox_(opts_.max_buffered_bytes) {}

TcpPeerLink::~TcpPeerLink() {
  stopping_ = true;
  if (wake_fds_[1] >= 0) {
    char b = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fds_[1], &b, 1);
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  mailbox_.reset();
  stop_threads();
  {
    std::lock_guard<std::mutex> lk(mu_);
    out_.clear();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  for (int fd : wake_fds_)
    if (fd >= 0) ::close(fd);
}

Status TcpPeerLink::listen() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string host = opts_.listen_address;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int rc = ::getaddrinfo(host.c_str(), std::to_string(opts_.port).c_str(), &hints, &res);
  if (rc != 0)
    return invalid_argument("peer listen address '{}': {}", opts_.listen_address, ::gai_strerror(rc));
  std::string last = "no usable address";
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      listen_fd_ = fd;
      break;
    }
    last = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(res);
  if (listen_fd_ < 0)
    return unavailable("cannot listen for peers on {}:{}: {}", opts_.listen_address, opts_.port, last);
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len);
  port_ = sa.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port)
                                   : ntohs(reinterpret_cast<sockaddr_in*>(&sa)->sin_port);
  if (::pipe2(wake_fds_, O_CLOEXEC) != 0) return internal_error("pipe: {}", std::strerror(errno));
  return Status::ok();
}

std::string TcpPeerLink::address() const {
  std::string host = opts_.listen_address;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return join_address(host, port_);
}

void TcpPeerLink::set_self(uint32_t worker_id) {
  std::lock_guard<std::mutex> lk(mu_);
  if (has_self_ && self_ != worker_id) {  // peers know this worker by the old id: reconnect
    for (auto& [id, c] : out_) {
      c->dropped = true;
      c->shutdown();
    }
    out_.clear();
  }
  self_ = worker_id;
  has_self_ = true;
}

void TcpPeerLink::set_peers(const std::map<uint32_t, std::string>& addresses) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto it = out_.begin(); it != out_.end();) {
      auto p = addresses.find(it->first);
      auto old = peers_.find(it->first);
      if (p == addresses.end() || old == peers_.end() || p->second != old->second) {
        it->second->dropped = true;
        it->second->shutdown();
        it = out_.erase(it);
      } else {
        ++it;
      }
    }
    peers_ = addresses;
  }
  // New membership: a worker that dropped out and came back must not stay marked as gone.
  mailbox_.clear_failures();
}

void TcpPeerLink::end_session(uint64_t session) { mailbox_.drop_session(session); }

void TcpPeerLink::reset() {
  mailbox_.reset();  // receiver threads of the old generation stop; waiters fail
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& [id, c] : out_) c->dropped = true;
    out_.clear();
    peers_.clear();
    incoming_latest_.clear();
  }
  stop_threads();
}

PeerStats TcpPeerLink::stats() const {
  return PeerStats{bytes_sent_.load(), bytes_received_.load()};
}

// ---- threads --------------------------------------------------------------------------------

bool TcpPeerLink::spawn(std::shared_ptr<Conn> c, bool incoming, uint64_t gen) {
  std::lock_guard<std::mutex> lk(threads_mu_);
  int live_incoming = 0;
  for (auto it = threads_.begin(); it != threads_.end();) {
    if ((*it)->done) {
      (*it)->t.join();
      it = threads_.erase(it);
    } else {
      live_incoming += (*it)->incoming ? 1 : 0;
      ++it;
    }
  }
  if (stopping_ || (incoming && live_incoming >= opts_.max_connections)) return false;
  auto th = std::make_unique<Thread>();
  th->conn = c;
  th->incoming = incoming;
  Thread* raw = th.get();
  raw->t = std::thread([this, c, incoming, gen, raw] {
    if (incoming)
      serve_incoming(c, gen);
    else
      watch_outgoing(c, gen);
    c->shutdown();  // the other side sees the end now, not when this thread is reaped
    raw->done = true;
  });
  threads_.push_back(std::move(th));
  return true;
}

void TcpPeerLink::stop_threads() {
  std::vector<std::unique_ptr<Thread>> ts;
  {
    std::lock_guard<std::mutex> lk(threads_mu_);
    ts.swap(threads_);
  }
  for (auto& t : ts) {
    t->conn->dropped = true;
    t->conn->shutdown();
  }
  for (auto& t : ts) t->t.join();
}

void TcpPeerLink::accept_loop() {
  while (!stopping_) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_fds_[0], POLLIN, 0}};
    int r = ::poll(p, 2, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      spdlog::error("peer link: poll failed: {}", std::strerror(errno));
      return;
    }
    if (p[1].revents) return;
    if (!(p[0].revents & POLLIN)) continue;
    sockaddr_storage sa{};
    socklen_t len = sizeof sa;
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // don't spin
      continue;
    }
    set_nodelay(fd);
    uint64_t id;
    {
      std::lock_guard<std::mutex> lk(mu_);
      id = next_conn_id_++;
    }
    auto c = std::make_shared<Conn>(fd, id);
    c->remote = describe_peer(sa);
    if (!spawn(c, true, mailbox_.generation()))
      spdlog::warn("peer link: refusing a connection from {}: {} connections already open",
                   c->remote, opts_.max_connections);
  }
}

void TcpPeerLink::serve_incoming(std::shared_ptr<Conn> c, uint64_t gen) {
  const int fd = c->fd;
  auto refuse = [&](const std::string& why) {
    spdlog::warn("peer link: refusing the connection from {}: {}", c->remote, why);
  };
  // The hello, within hello_timeout_ms.
  set_recv_timeout(fd, opts_.hello_timeout_ms);
  char fixed[peer::kHelloFixedBytes];
  if (!read_exact(fd, fixed, sizeof fixed)) {
    if (!c->dropped) refuse("no hello");
    return;
  }
  auto hello = peer::decode_hello_fixed(fixed);
  if (!hello.is_ok()) {
    refuse(hello.status().message());
    return;
  }
  std::string secret(hello->secret_len, '\0');
  if (!read_exact(fd, secret.data(), secret.size())) {
    refuse("truncated hello");
    return;
  }
  char verdict[4];
  if (!same_secret(secret, opts_.secret)) {
    peer::put_u32(verdict, peer::kHelloRefused);
    write_blocking(fd, verdict, 4);
    refuse(fmt::format("worker {} presented a wrong peer secret", hello->sender));
    return;
  }
  peer::put_u32(verdict, peer::kHelloAccepted);
  if (!write_blocking(fd, verdict, 4)) return;
  set_recv_timeout(fd, 0);  // a peer may legitimately stay quiet for a long time
  const uint32_t from = hello->sender;
  c->peer = from;
  {
    std::lock_guard<std::mutex> lk(mu_);
    incoming_latest_[from] = c->id;
  }
  mailbox_.peer_connected(from, gen);

  std::string reason;
  bool garbage = false;
  while (true) {
    char hdr[peer::kHeaderBytes];
    if (!read_exact(fd, hdr, sizeof hdr)) {
      reason = "connection closed";
      break;
    }
    auto h = peer::decode_header(hdr);
    if (!h.is_ok() || h->sender != from) {
      reason = h.is_ok() ? fmt::format("frame claims sender {}", h->sender) : h.status().message();
      garbage = true;
      break;
    }
    const MsgKey key{from, h->step, h->session, h->tag};
    std::string why;
    Mailbox::Admit a = mailbox_.admit(key, h->kind, h->length, gen, &why);
    if (a == Mailbox::Admit::kStopped) return;
    if (a == Mailbox::Admit::kRefuse) {
      reason = why;
      garbage = true;
      break;
    }
    if (a == Mailbox::Admit::kDiscard) {  // for an abandoned instruction
      if (!skip_bytes(fd, h->length)) {
        reason = "connection closed mid-message";
        break;
      }
      continue;
    }
    peer::Message m;
    m.kind = h->kind;
    m.size = h->length;
    m.data.reset(new (std::nothrow) char[static_cast<size_t>(std::max<uint64_t>(h->length, 1))]);
    if (!m.data) {
      mailbox_.unreserve(h->length, gen);
      reason = fmt::format("cannot allocate {} bytes", h->length);
      garbage = true;
      break;
    }
    if (!read_exact(fd, m.data.get(), static_cast<size_t>(h->length))) {
      mailbox_.unreserve(h->length, gen);
      reason = "connection closed mid-message";
      break;
    }
    if (h->kind == MsgKind::kPoison &&
        !peer::decode_poison(std::string_view(m.data.get(), m.size)).is_ok()) {
      mailbox_.unreserve(h->length, gen);
      reason = "malformed poison marker";
      garbage = true;
      break;
    }
    if (h->kind == MsgKind::kData) bytes_received_ += h->length;
    mailbox_.deliver(key, std::move(m), gen);
  }
  if (c->dropped || stopping_) return;
  if (garbage) spdlog::warn("peer link: dropping the connection from worker {} ({}): {}", from, c->remote, reason);
  bool latest;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = incoming_latest_.find(from);
    latest = it != incoming_latest_.end() && it->second == c->id;
    if (latest) incoming_latest_.erase(it);
  }
  if (latest)
    mailbox_.peer_failed(from, unavailable("worker {} disconnected ({})", from, reason), gen);
}

void TcpPeerLink::watch_outgoing(std::shared_ptr<Conn> c, uint64_t gen) {
  // Nothing flows back on an outgoing connection after the verdict: readable means the peer
  // closed it (or broke the protocol).
  while (true) {
    pollfd p{c->fd, POLLIN, 0};
    int r = ::poll(&p, 1, -1);
    if (r < 0 && errno == EINTR) continue;
    char b[64];
    ssize_t n = ::recv(c->fd, b, sizeof b, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    break;
  }
  if (c->dropped || stopping_) return;
  bool current;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = out_.find(c->peer);
    current = it != out_.end() && it->second == c;
    if (current) out_.erase(it);
  }
  if (current)
    mailbox_.peer_failed(c->peer, unavailable("worker {} ({}) closed the connection", c->peer, c->remote),
                         gen);
}

// ---- sending --------------------------------------------------------------------------------

Result<std::shared_ptr<TcpPeerLink::Conn>> TcpPeerLink::outgoing(uint32_t peer,
                                                                 Clock::time_point deadline,
                                                                 bool after_loss) {
  std::string addr;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = out_.find(peer);
    if (it != out_.end()) return it->second;
    auto a = peers_.find(peer);
    if (a == peers_.end())
      return failed_precondition("no address for worker {} (not in the peer table)", peer);
    addr = a->second;
  }
  const uint64_t gen = mailbox_.generation();
  GT_ASSIGN_OR_RETURN(std::shared_ptr<Conn> c, connect_peer(peer, addr, deadline, after_loss));
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto& slot = out_[peer];
    if (slot) {
      slot->dropped = true;
      slot->shutdown();
    }
    slot = c;
  }
  mailbox_.peer_connected(peer, gen);
  if (!spawn(c, false, gen)) return unavailable("the peer link is shutting down");
  return c;
}

Result<std::shared_ptr<TcpPeerLink::Conn>> TcpPeerLink::connect_peer(uint32_t peer,
                                                                     const std::string& addr,
                                                                     Clock::time_point deadline,
                                                                     bool after_loss) {
  std::string host, port;
  if (!split_address(addr, &host, &port))
    return invalid_argument("worker {} has a malformed peer address '{}'", peer, addr);
  uint32_t self;
  {
    std::lock_guard<std::mutex> lk(mu_);
    self = self_;
  }
  auto backoff = std::chrono::milliseconds(10);
  std::string last = "not attempted";
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
    bool refused = false;
    if (rc != 0) last = ::gai_strerror(rc);
    for (addrinfo* ai = rc == 0 ? res : nullptr; ai; ai = ai->ai_next) {
      int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) continue;
      int err = 0;
      if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        err = errno;
        if (err == EINPROGRESS) {
          pollfd p{fd, POLLOUT, 0};
          int r = ::poll(&p, 1, std::min(ms_until(deadline), 2000));
          socklen_t len = sizeof err;
          if (r <= 0) err = ETIMEDOUT;
          else ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        }
      }
      if (err != 0) {
        last = std::strerror(err);
        refused = refused || err == ECONNREFUSED;
        ::close(fd);
        continue;
      }
      ::freeaddrinfo(res);
      uint64_t id;
      {
        std::lock_guard<std::mutex> lk(mu_);
        id = next_conn_id_++;
      }
      auto c = std::make_shared<Conn>(fd, id);
      c->peer = peer;
      c->remote = addr;
      set_nodelay(fd);
      const std::string hello = peer::encode_hello(self, opts_.secret);
      Status st = write_frame(fd, hello.data(), hello.size(), nullptr, 0, deadline);
      char verdict[4];
      if (st.is_ok()) st = read_deadline(fd, verdict, 4, deadline);
      if (!st.is_ok())
        return Status(st.code(), fmt::format("worker {} at {} did not accept the connection: {}",
                                             peer, addr, st.message()));
      if (peer::get_u32(verdict) != peer::kHelloAccepted)
        return permission_denied("worker {} at {} refused this worker's connection (peer secret mismatch?)",
                                 peer, addr);
      return c;
    }
    if (rc == 0) ::freeaddrinfo(res);
    // Nothing listens there. A peer that is still starting gets until the deadline; one we
    // were connected to and lost is gone.
    if (refused && (after_loss || mailbox_.is_failed(peer)))
      return unavailable("worker {} at {} is gone: {}", peer, addr, last);
    const auto now = Clock::now();
    if (now >= deadline)
      return deadline_exceeded("cannot connect to worker {} at {} within {} ms: {}", peer, addr,
                               opts_.timeout_ms, last);
    if (stopping_) return unavailable("the peer link is shutting down");
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
}

void TcpPeerLink::drop_outgoing(uint32_t peer, const std::shared_ptr<Conn>& c) {
  c->dropped = true;
  c->shutdown();
  std::lock_guard<std::mutex> lk(mu_);
  auto it = out_.find(peer);
  if (it != out_.end() && it->second == c) out_.erase(it);
}

Status TcpPeerLink::send_message(uint32_t peer, MsgKind kind, uint64_t session, uint64_t tag,
                                 uint32_t step, const void* data, uint64_t bytes,
                                 Clock::time_point deadline) {
  uint32_t self;
  {
    std::lock_guard<std::mutex> lk(mu_);
    self = self_;
  }
  peer::FrameHeader h{kind, self, step, session, tag, bytes};
  char hdr[peer::kHeaderBytes];
  peer::encode_header(h, hdr);
  for (int attempt = 0;; ++attempt) {
    auto c = outgoing(peer, deadline, attempt > 0);
    if (!c.is_ok()) return c.status();
    Status st;
    {
      std::lock_guard<std::mutex> lk((*c)->send_mu);
      st = write_frame((*c)->fd, hdr, sizeof hdr, static_cast<const char*>(data), bytes, deadline);
    }
    if (st.is_ok()) {
      if (kind == MsgKind::kData) bytes_sent_ += bytes;
      return st;
    }
    drop_outgoing(peer, *c);  // a partial frame: the stream is unusable
    // A connection that broke (the peer restarted, or it was stale) gets one fresh try; the
    // receiver drops the partial frame with the old connection.
    if (st.code() == Code::kDeadlineExceeded || attempt >= 1)
      return Status(st.code(), fmt::format("sending {} bytes to worker {} (tag {}): {}", bytes,
                                           peer, tag, st.message()));
  }
}

// ---- running an instruction -----------------------------------------------------------------

Status TcpPeerLink::run(CommId comm, const CommGroup& g, const Tensor* input, Tensor* out,
                        uint64_t session) {
  uint32_t self;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!has_self_) return failed_precondition("the peer link does not know this worker's id yet");
    self = self_;
  }
  const bool collective = comm != CommId::k_send && comm != CommId::k_recv;
  std::shared_ptr<const ErrorRecord> poison = out ? out->poison : nullptr;
  if (!poison && input && input->poison) poison = input->poison;
  Exchange ex(*this, comm_name(comm), session, g.tag, self,
              Clock::now() + std::chrono::milliseconds(opts_.timeout_ms), poison);

  // Checks that make the memory accesses below safe. Failing them still sends the markers.
  auto check = [&]() -> Status {
    if (collective && (g.self_index < 0 || static_cast<size_t>(g.self_index) >= g.workers.size() ||
                       g.workers[static_cast<size_t>(g.self_index)] != self))
      return internal_error("this worker ({}) is not at its place in the group", self);
    if (collective && comm != CommId::k_all_reduce &&
        g.extents.size() != g.workers.size())
      return internal_error("one extent per group member expected");
    const bool needs_in = comm != CommId::k_recv;
    if (needs_in && (!input || !input->storage ||
                     input->storage->bytes() < static_cast<size_t>(input->meta.nbytes())))
      return internal_error("input storage does not hold its tensor");
    if (comm == CommId::k_send) return Status::ok();
    if (!out || !out->storage || out->storage->bytes() < static_cast<size_t>(out->meta.nbytes()))
      return internal_error("result storage is missing or too small");
    if (collective) {
      TensorMeta in_meta = input->meta;
      auto want = infer_comm_meta(comm, std::span<const TensorMeta>(&in_meta, 1), OpAttrs{}, g);
      if (!want.is_ok()) return want.status();
      if (!(*want == out->meta))
        return internal_error("result meta {} does not match the collective's {}", out->meta.shape.str(),
                              want->shape.str());
    }
    return Status::ok();
  };
  if (ex.ok()) {
    Status st = check();
    if (!st.is_ok()) ex.fail(st);
  }

  if (!ex.ok()) {  // this member only owes markers: one per message of the pattern
    if (comm == CommId::k_send) {
      ex.send(g.peer, 0, nullptr, 0);
    } else if (collective) {
      for (int step = 0; step < peer::comm_steps(comm); ++step)
        for (size_t i = 0; i < g.workers.size(); ++i)
          if (static_cast<int>(i) != g.self_index) ex.send(g.workers[i], static_cast<uint32_t>(step), nullptr, 0);
    }
    return ex.finish(out);
  }

  const void* in = comm == CommId::k_recv ? nullptr : input->storage->data();
  void* o = comm == CommId::k_send ? nullptr : out->storage->data();
  switch (comm) {
    case CommId::k_send:
      ex.send(g.peer, 0, in, static_cast<uint64_t>(input->meta.nbytes()));
      break;
    case CommId::k_recv: {
      const uint64_t n = static_cast<uint64_t>(out->meta.nbytes());
      ex.expect(g.peer, 0, n);
      auto m = ex.recv(g.peer, 0, n);
      if (m && n > 0) std::memcpy(o, m.get(), n);
      break;
    }
    case CommId::k_all_reduce: peer::all_reduce(ex, g, input->meta, in, o); break;
    case CommId::k_all_gather: peer::all_gather(ex, g, out->meta, in, o); break;
    case CommId::k_reduce_scatter: peer::reduce_scatter(ex, g, input->meta, in, o); break;
  }
  return ex.finish(out);
}

}  // namespace gt::worker
