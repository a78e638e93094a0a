#include "daemons.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "raw_client.h"

namespace gt::testing {

// $GT_BIN_DIR when set (scripts/device-check.sh points it at the device bundle's bin/), else
// this build's bin/.
std::string bin_path(const std::string& name) {
  const char* dir = std::getenv("GT_BIN_DIR");
  return (dir && *dir ? std::string(dir) : std::string(GT_TEST_BIN_DIR)) + "/" + name;
}

pid_t spawn_process(const std::string& exe, const std::vector<std::string>& args,
                    const std::string& log) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (!log.empty()) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
  }
  ::syscall(SYS_close_range, 3u, ~0u, 0u);
  ::execv(exe.c_str(), argv.data());
  ::_exit(127);
}

int wait_process(pid_t pid, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -2;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::pair<int, std::string> run_client(const std::string& address,
                                       const std::vector<std::string>& args,
                                       const std::string& token, int timeout_ms) {
  char tmpl[] = "/tmp/gt-client-out-XXXXXX";
  int fd = ::mkstemp(tmpl);
  if (fd < 0) throw std::runtime_error("run_client: mkstemp failed");
  ::close(fd);
  ::setenv("GT_ADDRESS", address.c_str(), 1);
  if (token.empty()) ::unsetenv("GT_TOKEN");
  else ::setenv("GT_TOKEN", token.c_str(), 1);
  pid_t p = spawn_process(bin_path("gt-test-client"), args, tmpl);
  int rc = wait_process(p, timeout_ms);
  ::unsetenv("GT_ADDRESS");
  ::unsetenv("GT_TOKEN");
  std::ifstream f(tmpl);
  std::string out((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ::unlink(tmpl);
  return {rc, out};
}

Daemons::Daemons(DaemonOptions o)
    : worker_args_(o.worker_args),
      dispatcher_args_(o.dispatcher_args),
      admin_token_(o.admin_token),
      log_level_(o.log_level) {
  char tmpl[] = "/tmp/gt-test-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  start_dispatcher(0);
  for (int i = 0; i < o.workers; ++i) add_worker();
  if (o.workers > 0) wait_for_workers(static_cast<size_t>(o.workers));
}

void Daemons::start_dispatcher(int port) {
  std::string port_file = dir_ + "/port";
  ::unlink(port_file.c_str());
  // The test's own flags come first; these follow so they win over any --config file.
  std::vector<std::string> args = dispatcher_args_;
  for (const char* a : {"--port", "", "--port-file", "", "--log-level", ""}) args.push_back(a);
  args[args.size() - 5] = std::to_string(port);
  args[args.size() - 3] = port_file;
  args[args.size() - 1] = log_level_;
  args.push_back("--unix-socket");  // for the workers (no worker secret: ARCHITECTURE §8)
  args.push_back(unix_socket());
  dispatcher_ = spawn_process(bin_path("gt-dispatcherd"), args, dir_ + "/dispatcher.log");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int got = 0;
  while (got == 0) {
    std::ifstream f(port_file);
    if (f >> got && got > 0) break;
    got = 0;
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("dispatcher did not start (see " + dir_ + "/dispatcher.log)");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  port_ = got;
}

void Daemons::kill_dispatcher(int sig) {
  if (dispatcher_ > 0) {
    ::kill(dispatcher_, sig);
    wait_process(dispatcher_, 10000);
    dispatcher_ = -1;
  }
}

void Daemons::restart_dispatcher() { start_dispatcher(port_); }

size_t Daemons::add_worker(const std::vector<std::string>& extra) {
  // GT_TEST_WORKER_DEVICE=sim runs a suite on the sim device (tests/integration/CMakeLists.txt
  // registers some suites a second time that way); a test's own --device flag still wins.
  const char* device = std::getenv("GT_TEST_WORKER_DEVICE");
  std::vector<std::string> args = {"--dispatcher", unix_address(), "--device",
                                   device && *device ? device : "cpu", "--log-level", log_level_,
                                   "--reconnect-ms", "50", "--blas-threads", "1"};
  args.insert(args.end(), worker_args_.begin(), worker_args_.end());
  args.insert(args.end(), extra.begin(), extra.end());
  workers_.push_back(spawn_process(bin_path("gt-workerd"), args,
                                   dir_ + "/worker" + std::to_string(workers_.size()) + ".log"));
  return workers_.size() - 1;
}

void Daemons::kill_worker(size_t i, int sig) {
  if (i < workers_.size() && workers_[i] > 0) {
    ::kill(workers_[i], sig);
    wait_process(workers_[i], 5000);
    workers_[i] = -1;
  }
}

bool Daemons::dispatcher_alive() const {
  int status;
  return dispatcher_ > 0 && ::waitpid(dispatcher_, &status, WNOHANG) == 0;
}

void Daemons::wait_for_workers(size_t n) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      RawClient c(address());
      if (c.hello(0, 0, admin_token_).kind_case() == v1::ServerMessage::kWelcome &&
          c.worker_stats().size() >= n)
        return;
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("workers did not register (see logs in " + dir_ + ")");
}

Daemons::~Daemons() {
  for (pid_t p : workers_)
    if (p > 0) ::kill(p, SIGTERM);
  if (dispatcher_ > 0) ::kill(dispatcher_, SIGTERM);
  for (pid_t p : workers_)
    if (p > 0) wait_process(p, 3000);
  if (dispatcher_ > 0) wait_process(dispatcher_, 3000);
  if (!std::getenv("GT_KEEP_TEST_LOGS")) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

}  // namespace gt::testing

namespace gt::testing {

DpRun run_dp_bench(const Daemons& d, int steps) {
  const std::string log = d.dir() + "/dp.log";
  ::setenv("GT_ADDRESS", d.address().c_str(), 1);
  pid_t p = spawn_process(bin_path("gt-bench-dp"), {std::to_string(steps)}, log);
  ::unsetenv("GT_ADDRESS");
  DpRun r{wait_process(p, 120000), "", -1};
  std::ifstream f(log);
  r.out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  const std::string key = "bytes between workers per step: ";
  const size_t at = r.out.find(key);
  if (at != std::string::npos) r.bytes_per_step = std::stod(r.out.substr(at + key.size()));
  return r;
}

}  // namespace gt::testing
