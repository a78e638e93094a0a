#include "tests/fuzz/dispatcher_rig.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "gt/core/ops.h"
#include "libgtcore/version.h"
#include "tests/fuzz/harness.h"

namespace gt::fuzz {

Peer::Peer(int fd) : fd_(fd) {}

Peer::~Peer() {
  if (fd_ >= 0) ::close(fd_);
}

void Peer::queue(const google::protobuf::MessageLite& m) {
  Status st = append_frame(&out_, m, 0xffffffffull);
  GT_FUZZ_CHECK(st.is_ok(), "cannot frame a message: %s", st.message().c_str());
}

bool Peer::pump() {
  bool moved = false;
  while (out_off_ < out_.size()) {
    ssize_t n = ::send(fd_, out_.data() + out_off_, out_.size() - out_off_,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n <= 0) {
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      out_off_ = out_.size();  // the dispatcher hung up: the rest is moot
      break;
    }
    out_off_ += static_cast<size_t>(n);
    moved = true;
  }
  if (out_off_ == out_.size() && !out_.empty()) {
    out_.clear();
    out_off_ = 0;
  }
  if (want_shutdown_ && !shut_ && out_off_ == out_.size()) {
    ::shutdown(fd_, SHUT_WR);
    shut_ = true;
    moved = true;
  }
  while (!eof_) {
    char* p = dec_.prepare(64 * 1024);
    ssize_t n = ::recv(fd_, p, dec_.prepared_size(), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      eof_ = true;
      moved = true;
      break;
    }
    dec_.commit(static_cast<size_t>(n));
    moved = true;
  }
  while (!bad_stream_) {
    auto f = dec_.next();
    if (!f.is_ok()) {
      bad_stream_ = true;
      break;
    }
    if (!f->has_value()) break;
    inbox_.emplace_back(**f);
  }
  GT_FUZZ_CHECK(!bad_stream_, "the dispatcher sent an undecodable stream");
  return moved;
}

std::optional<std::string> Peer::next_frame() {
  if (inbox_.empty()) return std::nullopt;
  std::string s = std::move(inbox_.front());
  inbox_.pop_front();
  return s;
}

FakeWorker::FakeWorker(int fd, bool execute, uint64_t max_memory_bytes)
    : peer_(fd),
      execute_(execute),
      backend_(worker::CpuBackendOptions{max_memory_bytes, 1, uint64_t{1} << 20}),
      executor_(backend_, [this](v1::WorkerMessage&& m) { peer_.queue(m); }, 64 * 1024) {}

void FakeWorker::hello(const std::string& secret) { peer_.queue(worker_hello(secret)); }

bool FakeWorker::step() {
  bool moved = peer_.pump();
  while (auto body = peer_.next_frame()) {
    moved = true;
    v1::DispatchMessage m;
    GT_FUZZ_CHECK(m.ParseFromString(*body), "the dispatcher sent a malformed frame to a worker");
    switch (m.kind_case()) {
      case v1::DispatchMessage::kWelcome: welcomed_ = true; break;
      case v1::DispatchMessage::kHeartbeat: {
        v1::WorkerMessage pong;
        pong.mutable_heartbeat()->set_nonce(m.heartbeat().nonce());
        peer_.queue(pong);
        break;
      }
      case v1::DispatchMessage::kBatch: {
        if (!execute_) break;
        v1::WorkerBatch& b = *m.mutable_batch();
        GT_FUZZ_CHECK(b.first_seq() == executed_seq_,
                      "batch sequence gap: got %llu, executed up to %llu",
                      static_cast<unsigned long long>(b.first_seq()),
                      static_cast<unsigned long long>(executed_seq_));
        executor_.execute(b);
        // (a HotRun counts as the instructions it stands for: WorkerBatch.hot_extra)
        executed_seq_ = b.first_seq() + static_cast<uint64_t>(b.instrs_size()) +
                        static_cast<uint64_t>(b.frees_size()) + b.hot_extra();
        v1::WorkerMessage ack;
        ack.mutable_ack()->set_executed_seq(executed_seq_);
        peer_.queue(ack);
        break;
      }
      default: break;
    }
  }
  if (moved) peer_.pump();
  return moved;
}

DispatcherRig::DispatcherRig(dispatcher::DispatcherOptions o, dispatcher::UserTable users,
                             bool instruction_log) {
  if (instruction_log) (void)log_.open("/dev/null");
  dispatcher_ = std::make_unique<dispatcher::Dispatcher>(io_, std::move(o), &log_, std::move(users));
}

DispatcherRig::~DispatcherRig() {
  // Orderly teardown: the dispatcher closes everything, peers see it, then objects go.
  dispatcher_->shutdown();
  settle(2000);
  workers_.clear();
  peers_.clear();
  settle(2000);
  dispatcher_.reset();
}

int DispatcherRig::make_pair(const std::string& transport) {
  int sv[2];
  GT_FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
  int flags = ::fcntl(sv[1], F_GETFL);
  ::fcntl(sv[1], F_SETFL, flags | O_NONBLOCK);
  dispatcher_->accept(StreamSocket(io_, asio::generic::stream_protocol(AF_UNIX, 0), sv[0]),
                      transport);
  return sv[1];
}

Peer& DispatcherRig::connect(const std::string& transport) {
  peers_.push_back(std::make_unique<Peer>(make_pair(transport)));
  return *peers_.back();
}

FakeWorker& DispatcherRig::add_worker(bool execute, const std::string& secret,
                                      uint64_t max_memory_bytes) {
  // Over the Unix transport (a socketpair: SO_PEERCRED says it is us), where a dispatcher
  // without a worker secret accepts workers of its own user.
  workers_.push_back(std::make_unique<FakeWorker>(make_pair("unix"), execute, max_memory_bytes));
  workers_.back()->hello(secret);
  return *workers_.back();
}

void DispatcherRig::settle(int max_rounds) {
  int idle = 0;
  for (int r = 0; r < max_rounds && idle < 3; ++r) {
    if (io_.stopped()) io_.restart();
    bool moved = io_.poll() > 0;
    for (auto& p : peers_) {
      moved |= p->pump();
      if (p->keeps_frames()) continue;
      while (auto body = p->next_frame()) {  // a ServerMessage, or a DispatchMessage when the
        v1::ServerMessage m;                  // connection registered as a worker
        v1::DispatchMessage d;
        GT_FUZZ_CHECK(m.ParseFromString(*body) || d.ParseFromString(*body),
                      "the dispatcher sent a malformed frame");
        moved = true;
      }
    }
    for (auto& w : workers_) moved |= w->step();
    idle = moved ? 0 : idle + 1;
  }
}

// alice: a token, a session quota and a byte quota; root: an admin. Loaded once.
const dispatcher::UserTable& fuzz_users() {
  static const dispatcher::UserTable table = [] {
    char path[] = "/tmp/gt-fuzz-users-XXXXXX";
    int fd = ::mkstemp(path);
    GT_FUZZ_CHECK(fd >= 0, "mkstemp");
    ::close(fd);
    {
      std::ofstream f(path);
      f << "defaults:\n  max_sessions: 4\n  max_bytes: 1048576\n  window: 1024\n"
        << "users:\n"
        << "  alice:\n    token_sha256: " << dispatcher::sha256_hex(kTokenAlice) << "\n"
        << "    max_sessions: 1\n    max_bytes: 65536\n    weight: 2\n"
        << "  root:\n    token_sha256: " << dispatcher::sha256_hex(kTokenRoot) << "\n"
        << "    admin: true\n";
    }
    auto t = dispatcher::UserTable::load(path);
    ::unlink(path);
    GT_FUZZ_CHECK(t.is_ok(), "users file: %s", t.status().message().c_str());
    return *t;
  }();
  return table;
}

v1::ClientMessage client_hello(const std::string& token) {
  v1::ClientMessage m;
  auto* h = m.mutable_hello();
  h->set_proto_major(kProtoMajor);
  h->set_proto_minor(kProtoMinor);
  h->set_op_table_hash(op_table_hash());
  h->set_role(v1::ROLE_CLIENT);
  h->set_client_name("fuzz");
  if (!token.empty()) h->mutable_credentials()->set_token(token);
  return m;
}

v1::WorkerMessage worker_hello(const std::string& secret) {
  v1::WorkerMessage m;
  auto* h = m.mutable_hello();
  h->set_proto_major(kProtoMajor);
  h->set_proto_minor(kProtoMinor);
  h->set_op_table_hash(op_table_hash());
  h->set_role(v1::ROLE_WORKER);
  h->mutable_credentials()->set_worker_secret(secret);
  h->mutable_worker()->set_device_kind("cpu");
  h->mutable_worker()->set_device_name("fuzz-worker");
  h->mutable_worker()->set_memory_bytes(kRigWorkerMemoryBytes);
  return m;
}

}  // namespace gt::fuzz
