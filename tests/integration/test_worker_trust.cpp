// Who may be a worker, and what happens when a worker or the dispatcher stops making progress
// (ARCHITECTURE §8, reliability issue item 10), against real daemons:
//   - without a worker secret, workers register only over the dispatcher's Unix socket, as the
//     dispatcher's own user or root; TCP workers need the secret (workers on other hosts);
//   - a registered worker that answers heartbeats but never executes is declared dead after
//     progress_timeout_ms, and its sessions get an error naming it instead of hanging;
//   - a client sync point with no answer from the dispatcher raises a clear gt::Error after its
//     deadline (GT_SYNC_TIMEOUT_S / gt::set_sync_timeout) instead of waiting forever.
#include <catch2/catch.hpp>
#include <gt/gt.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <sstream>
#include <thread>

#include "daemons.h"
#include "instr_builder.h"
#include "libgtclient/session_remote.h"
#include "libgtcore/frame_codec.h"
#include "gt/core/ops.h"
#include "libgtcore/socket_io.h"
#include "libgtcore/version.h"
#include "raw_client.h"

using namespace gt;
using namespace gt::testing;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr uid_t kNobody = 65534;

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Waits until `path` holds `needle` (a daemon's log line), up to `timeout`.
bool wait_for_text(const std::string& path, const std::string& needle,
                   std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (slurp(path).find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

v1::WorkerMessage worker_hello(const std::string& secret, const std::string& name) {
  v1::WorkerMessage m;
  fill_worker_hello(m.mutable_hello(), secret, name);
  return m;
}

// A worker that registers over the Unix socket and then answers heartbeats but never executes,
// acknowledges or answers anything: the fake worker of the issue (or a real one wedged in a
// kernel while its I/O thread still answers pings).
class StalledWorker {
 public:
  explicit StalledWorker(const std::string& socket_path) : fd_(connect_unix(socket_path)) {
    if (fd_ < 0) throw std::runtime_error("cannot connect to " + socket_path);
  }
  ~StalledWorker() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }

  // Registers; returns the dispatcher's answer (welcome or refusal).
  v1::DispatchMessage hello() {
    send(worker_hello("", "stalled"));
    auto m = next(5000);
    if (!m) throw std::runtime_error("no answer to the worker Hello");
    return *m;
  }
  // From here on a thread answers heartbeats and swallows everything else.
  void start() {
    thread_ = std::thread([this] {
      while (!stop_ && !closed_) {
        auto m = next(50);
        if (!m) continue;
        if (m->kind_case() == v1::DispatchMessage::kHeartbeat) {
          v1::WorkerMessage pong;
          pong.mutable_heartbeat()->set_nonce(m->heartbeat().nonce());
          send(pong);
          ++heartbeats_;
        } else if (m->kind_case() == v1::DispatchMessage::kBatch) {
          ++batches_;
        }
      }
    });
  }
  bool wait_closed(std::chrono::milliseconds timeout) const {
    auto deadline = Clock::now() + timeout;
    while (!closed_ && Clock::now() < deadline) std::this_thread::sleep_for(10ms);
    return closed_;
  }
  bool closed() const { return closed_; }
  int heartbeats() const { return heartbeats_; }
  int batches() const { return batches_; }

 private:
  void send(const v1::WorkerMessage& m) {
    std::string out;
    if (append_frame(&out, m).is_ok()) (void)send_all(fd_, out);
  }
  std::optional<v1::DispatchMessage> next(int timeout_ms) {
    while (true) {
      auto f = dec_.next();
      if (!f.is_ok()) {
        closed_ = true;
        return std::nullopt;
      }
      if (f->has_value()) {
        v1::DispatchMessage m;
        if (!parse_frame(**f, &m).is_ok()) return std::nullopt;
        return m;
      }
      Status st = read_some(fd_, &dec_, timeout_ms);
      if (st.code() == Code::kDeadlineExceeded) return std::nullopt;
      if (!st.is_ok()) {
        closed_ = true;
        return std::nullopt;
      }
    }
  }
  int fd_;
  FrameDecoder dec_;
  std::thread thread_;
  std::atomic<bool> stop_{false}, closed_{false};
  std::atomic<int> heartbeats_{0}, batches_{0};
};

// A "dispatcher" that answers the client's Hello with a Welcome and then reads and discards
// everything, never replying: a hung dispatcher (or a dead network path) as a client sees it.
class SilentDispatcher {
 public:
  SilentDispatcher() {
    char tmpl[] = "/tmp/gt-silent-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp");
    dir_ = tmpl;
    path_ = dir_ + "/d.sock";
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path_.c_str());
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 ||
        ::listen(listen_fd_, 4) != 0)
      throw std::runtime_error("cannot listen on " + path_);
    thread_ = std::thread([this] { serve(); });
  }
  ~SilentDispatcher() {
    hang_up();
    ::shutdown(listen_fd_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    ::close(listen_fd_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string address() const { return "unix:" + path_; }
  // Closes the client connection (unblocks a client that would otherwise wait forever).
  void hang_up() {
    stop_ = true;
    int fd = conn_fd_.exchange(-1);
    if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
  }
  // True once the client closed its side (it treats the session as lost).
  bool wait_client_gone(std::chrono::milliseconds timeout) const {
    auto deadline = Clock::now() + timeout;
    while (!client_gone_ && Clock::now() < deadline) std::this_thread::sleep_for(10ms);
    return client_gone_;
  }
  int requests_seen() const { return frames_ - 1; }

 private:
  void serve() {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    conn_fd_ = fd;
    FrameDecoder dec;
    bool welcomed = false;
    while (!stop_) {
      auto f = dec.next();
      if (!f.is_ok()) break;
      if (f->has_value()) {
        ++frames_;
        if (!welcomed) {
          v1::ServerMessage w;
          w.mutable_welcome()->set_proto_major(kProtoMajor);
          w.mutable_welcome()->set_proto_minor(kProtoMinor);
          w.mutable_welcome()->set_session_id(7);
          w.mutable_welcome()->set_num_workers(1);
          std::string out;
          (void)append_frame(&out, w);
          (void)send_all(fd, out);
          welcomed = true;
        }
        continue;  // everything after the Hello is swallowed: no reply, ever
      }
      Status st = read_some(fd, &dec, 50);
      if (st.code() == Code::kDeadlineExceeded) continue;
      if (!st.is_ok()) {
        client_gone_ = true;
        break;
      }
    }
    if (conn_fd_.exchange(-1) >= 0) ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }
  std::string dir_, path_;
  int listen_fd_ = -1;
  std::atomic<int> conn_fd_{-1};
  std::atomic<bool> stop_{false}, client_gone_{false};
  std::atomic<int> frames_{0};
  std::thread thread_;
};

// fork(), drop to uid/gid `uid` (the caller is root), run `fn` there; its return is the exit
// status, and what it writes to the pipe comes back as `said`.
int run_as(uid_t uid, const std::function<int(int out_fd)>& fn, std::string* said) {
  int p[2];
  if (::pipe(p) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    if (::setgid(uid) != 0 || ::setuid(uid) != 0) ::_exit(90);
    int rc = 91;
    try {
      rc = fn(p[1]);
    } catch (...) {
    }
    ::_exit(rc);
  }
  ::close(p[1]);
  char buf[1024];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof(buf))) > 0) said->append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  return wait_process(pid, 20000);
}

}  // namespace

TEST_CASE("without a worker secret, workers register only as the dispatcher's user on this host",
          "[hardening][auth][workers]") {
  Daemons d(DaemonOptions{1});  // its worker registered over the Unix socket, as its own user
  // The dispatcher said at start how workers may register.
  CHECK(wait_for_text(d.dir() + "/dispatcher.log", "no worker_secret_file", 2000ms));
  SECTION("a loopback TCP worker of the dispatcher's own user is accepted") {
    {
      RawClient w(d.address());
      CHECK(w.hello_as_worker("").kind_case() == v1::ServerMessage::kWelcome);
    }  // (it hangs up: a fake worker answers no stats)
    // A real gt-workerd pointed at the TCP port registers too (the kernel's socket table says
    // whose it is, as SO_PEERCRED does on the Unix socket).
    d.add_worker({"--dispatcher", d.address()});
    RawClient c(d.address());
    REQUIRE(c.hello().kind_case() == v1::ServerMessage::kWelcome);
    size_t n = 0;
    for (int i = 0; i < 250 && n < 2; ++i, std::this_thread::sleep_for(20ms))
      n = c.worker_stats().size();
    CHECK(n == 2);  // the Unix-socket worker and the TCP gt-workerd
  }
  SECTION("a TCP worker of another user is refused, with the reason") {
    if (::geteuid() != 0) {
      WARN("not root: cannot connect as another user here (skipped)");
      return;
    }
    for (const char* secret : {"", "made-up-secret-0123456789"}) {
      std::string said;
      int rc = run_as(kNobody, [&](int out) {
        RawClient impostor(d.address());
        auto m = impostor.hello_as_worker(secret);
        std::string r = m.kind_case() == v1::ServerMessage::kRefusal ? m.refusal().reason()
                                                                     : "welcomed";
        (void)!::write(out, r.data(), r.size());
        return m.kind_case() == v1::ServerMessage::kRefusal ? 0 : 1;
      }, &said);
      INFO("the nobody worker got: " << said);
      CHECK(rc == 0);
      CHECK_THAT(said, Catch::Contains("worker authentication failed") &&
                           Catch::Contains("uid 65534") && Catch::Contains("worker_secret_file"));
    }
    RawClient c(d.address());
    REQUIRE(c.hello().kind_case() == v1::ServerMessage::kWelcome);
    CHECK(c.worker_stats().size() == 1);  // only the Unix-socket worker
  }
  SECTION("a Unix-socket worker of the dispatcher's own user is accepted") {
    RawClient w(d.unix_address());
    CHECK(w.hello_as_worker("").kind_case() == v1::ServerMessage::kWelcome);
  }
}

TEST_CASE("a Unix-socket worker of another user is refused, root is accepted",
          "[hardening][auth][workers]") {
  if (::geteuid() != 0) {
    WARN("not root: cannot run a worker or a dispatcher as another user here (skipped)");
    return;
  }
  SECTION("the dispatcher (root) refuses a worker running as nobody") {
    Daemons d(DaemonOptions{0, {"--unix-socket-mode", "0666"}});
    REQUIRE(::chmod(d.dir().c_str(), 0711) == 0);  // nobody may reach the socket
    std::string said;
    int rc = run_as(kNobody, [&](int out) {
      RawClient w(d.unix_address());
      auto m = w.hello_as_worker("");
      std::string r = m.kind_case() == v1::ServerMessage::kRefusal ? m.refusal().reason()
                                                                   : "welcomed";
      (void)!::write(out, r.data(), r.size());
      return m.kind_case() == v1::ServerMessage::kRefusal ? 0 : 1;
    }, &said);
    INFO("the nobody worker got: " << said);
    CHECK(rc == 0);
    CHECK_THAT(said, Catch::Contains("uid 65534") && Catch::Contains("worker_secret_file"));
    // The dispatcher's own user (root here) is accepted.
    RawClient w(d.unix_address());
    CHECK(w.hello_as_worker("").kind_case() == v1::ServerMessage::kWelcome);
  }
  SECTION("a dispatcher running as nobody accepts a root worker") {
    char tmpl[] = "/tmp/gt-nobody-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    const std::string dir = tmpl, sock = dir + "/d.sock";
    REQUIRE(::chown(dir.c_str(), kNobody, kNobody) == 0);
    pid_t pid = ::fork();
    if (pid == 0) {
      if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(90);
      ::execl(bin_path("gt-dispatcherd").c_str(), "gt-dispatcherd", "--listen-address=",
              "--unix-socket", sock.c_str(), "--log-level", "error", nullptr);
      ::_exit(127);
    }
    // The child dies with this section however it ends (a failed check included): a dispatcher
    // left running would hold ctest's output pipe until the test's timeout.
    struct Reap {
      pid_t pid;
      std::string dir;
      ~Reap() {
        ::kill(pid, SIGTERM);
        wait_process(pid, 5000);
        std::filesystem::remove_all(dir);
      }
    } reap{pid, dir};
    // Up = accepting connections: the socket file appears at bind(), before listen(), so a
    // connect right after it exists can be refused on a loaded machine.
    std::unique_ptr<RawClient> w;
    for (int i = 0; i < 500 && !w; ++i) {
      struct stat st{};
      if (::stat(sock.c_str(), &st) == 0) {
        try {
          w = std::make_unique<RawClient>("unix:" + sock);
        } catch (const std::exception&) {
        }
      }
      if (!w) std::this_thread::sleep_for(20ms);
    }
    if (!w) {
      WARN("gt-dispatcherd could not run as nobody here (is the build folder readable?): skipped");
    } else {
      CHECK(w->hello_as_worker("").kind_case() == v1::ServerMessage::kWelcome);
    }
  }
}

TEST_CASE("with the worker secret, workers may register over TCP (other hosts)",
          "[hardening][auth][workers]") {
  char tmpl[] = "/tmp/gt-secret-XXXXXX";
  REQUIRE(::mkdtemp(tmpl));
  const std::string dir = tmpl, secret = dir + "/worker.secret";
  std::ofstream(secret) << "another-secret-for-the-workers\n";
  ::chmod(secret.c_str(), 0600);
  {
    Daemons d(DaemonOptions{0, {"--worker-secret-file", secret}});
    d.add_worker({"--worker-secret-file", secret, "--dispatcher", d.address()});
    d.wait_for_workers(1);
    // With a secret configured, it is required on every transport.
    RawClient w(d.unix_address());
    auto m = w.hello_as_worker("");
    REQUIRE(m.kind_case() == v1::ServerMessage::kRefusal);
    CHECK_THAT(m.refusal().reason(), Catch::Contains("worker secret"));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("a worker that answers heartbeats but never executes is dropped after progress_timeout",
          "[hardening][faults][workers]") {
  Daemons d(DaemonOptions{0, {"--heartbeat-interval-ms", "100", "--heartbeat-timeout-ms", "1000",
                              "--progress-timeout-ms", "1500"}});
  StalledWorker fake(d.unix_socket());
  REQUIRE(fake.hello().kind_case() == v1::DispatchMessage::kWelcome);
  fake.start();
  // Idle for longer than the progress timeout: a worker with nothing to do is not stalled.
  std::this_thread::sleep_for(2000ms);
  REQUIRE_FALSE(fake.closed());
  CHECK(fake.heartbeats() > 5);

  RawClient c(d.address());
  REQUIRE(c.hello().kind_case() == v1::ServerMessage::kWelcome);
  c.send(batch_of({from_floats(1, {1, 2}, Shape{2}), make_instr(OpId::k_neg, 2, {1})}));
  auto t0 = Clock::now();
  v1::Reply r = c.request(v1::Request::SYNC);  // would wait forever without the watchdog
  double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  CHECK(fake.batches() >= 1);
  REQUIRE(r.errors_size() >= 1);
  CHECK_THAT(r.errors(0).message(), Catch::Contains("worker 0") && Catch::Contains("progress"));
  CHECK(waited > 1.2);                // not before the timeout (minus a heartbeat tick)
  CHECK(waited < 1.5 + 1.0);          // soon after it
  CHECK(fake.wait_closed(2000ms));    // the dispatcher dropped the connection
  CHECK(wait_for_text(d.dir() + "/dispatcher.log", "no progress", 2000ms));

  // The session goes on: its lost tensor is an error, new work runs on a real worker.
  CHECK(c.request(v1::Request::FETCH, 2).errors_size() == 1);
  d.add_worker();
  d.wait_for_workers(1);
  c.send(batch_of({from_floats(3, {4, 5}, Shape{2}), make_instr(OpId::k_neg, 4, {3})}));
  v1::Reply ok = c.request(v1::Request::FETCH, 4);
  REQUIRE(ok.errors_size() == 0);
  CHECK(floats_of(ok) == std::vector<float>{-4, -5});
}

TEST_CASE("a sync point with no answer from the dispatcher raises after its deadline",
          "[client][faults]") {
  SilentDispatcher silent;
  auto sync_in_background = [](detail::RemoteSession& s) {
    return std::async(std::launch::async, [&s] {
      auto t0 = Clock::now();
      std::string what = "returned without an error";
      try {
        s.synchronize();
      } catch (const gt::Error& e) {
        what = e.what();
      }
      return std::make_pair(what, std::chrono::duration<double>(Clock::now() - t0).count());
    });
  };
  auto expect_deadline = [&](detail::RemoteSession& s, double deadline_s) {
    auto fut = sync_in_background(s);
    if (fut.wait_for(std::chrono::duration<double>(deadline_s + 8)) != std::future_status::ready) {
      FAIL_CHECK("synchronize() still waiting " << deadline_s + 8 << " s later");
      silent.hang_up();  // lets it return so the test can end
    }
    auto [what, waited] = fut.get();
    INFO("synchronize() raised: " << what);
    CHECK_THAT(what, Catch::Contains("no answer from the dispatcher"));
    CHECK(waited >= deadline_s * 0.9);
    CHECK(waited < deadline_s + 2.0);
    // The session is lost: the next sync point says so at once, and the connection is closed
    // (a real dispatcher then frees the session's tensors).
    auto t0 = Clock::now();
    CHECK_THROWS_WITH(s.synchronize(), Catch::Contains("session lost") &&
                                           Catch::Contains("no answer from the dispatcher"));
    CHECK(Clock::now() - t0 < 500ms);
    CHECK(silent.wait_client_gone(2000ms));
  };
  SECTION("GT_SYNC_TIMEOUT_S") {
    ::setenv("GT_SYNC_TIMEOUT_S", "1", 1);
    detail::RemoteSession s(silent.address(), nullptr);
    ::unsetenv("GT_SYNC_TIMEOUT_S");
    expect_deadline(s, 1.0);
  }
  SECTION("gt::set_sync_timeout") {
    gt::set_sync_timeout(0.5);
    detail::RemoteSession s(silent.address(), nullptr);
    expect_deadline(s, 0.5);
    gt::set_sync_timeout(-1);  // back to GT_SYNC_TIMEOUT_S / the default
  }
}
