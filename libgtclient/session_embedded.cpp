#include "libgtclient/session_embedded.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace gt::detail {

namespace fs = std::filesystem;

namespace {

pid_t spawn(const std::string& exe, const std::vector<std::string>& args) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  // Child: only async-signal-safe calls until exec.
  int devnull = ::open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
  }
  ::syscall(SYS_close_range, 3u, ~0u, 0u);  // no inherited sockets from the client
  ::setpgid(0, 0);  // the user's Ctrl-C reaches the client, which then shuts us down
  ::execv(exe.c_str(), argv.data());
  ::_exit(127);
}

}  // namespace

Result<std::unique_ptr<EmbeddedDaemons>> EmbeddedDaemons::start(int num_workers) {
  GT_ASSIGN_OR_RETURN(std::string bin, find_daemon_dir());
  const char* base = std::getenv("XDG_RUNTIME_DIR");
  std::string tmpl = std::string(base && ::access(base, W_OK) == 0 ? base : "/tmp") + "/gt-XXXXXX";
  if (!::mkdtemp(tmpl.data()))  // mkdtemp creates the directory with mode 0700
    return unavailable("cannot create a private directory for the embedded dispatcher");
  auto d = std::unique_ptr<EmbeddedDaemons>(new EmbeddedDaemons());
  d->dir_ = tmpl;
  std::string sock = d->dir_ + "/dispatcher.sock";
  d->address_ = "unix:" + sock;
  const char* level = std::getenv("GT_EMBEDDED_LOG_LEVEL");
  std::string log_level = level ? level : "warn";
  std::vector<std::string> dargs = {"--listen-address=", "--unix-socket", sock,
                                    "--unix-socket-mode", "0600",  // this user only
                                    "--min-workers", std::to_string(std::max(1, num_workers)),
                                    "--exit-when-idle", "--parent-pid",
                                    std::to_string(::getpid()), "--log-level", log_level};
  if (const char* ilog = std::getenv("GT_INSTRUCTION_LOG")) {
    dargs.push_back("--instruction-log");
    dargs.push_back(ilog);
  }
  pid_t dp = spawn(bin + "/gt-dispatcherd", dargs);
  if (dp < 0) return unavailable("cannot start gt-dispatcherd");
  d->pids_.push_back(dp);
  for (int i = 0; i < num_workers; ++i) {
    pid_t wp = spawn(bin + "/gt-workerd",
                     {"--dispatcher", d->address_, "--device", "auto:" + std::to_string(i),
                      "--exit-on-disconnect", "--reconnect-ms", "20", "--log-level", log_level});
    if (wp < 0) return unavailable("cannot start gt-workerd");
    d->pids_.push_back(wp);
  }
  return d;
}

void EmbeddedDaemons::stop(int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool signalled = false;
  while (!pids_.empty()) {
    std::erase_if(pids_, [](pid_t p) {
      int status;
      pid_t r = ::waitpid(p, &status, WNOHANG);
      return r == p || r < 0;
    });
    if (pids_.empty()) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      if (signalled) {
        for (pid_t p : pids_) ::kill(p, SIGKILL);
        for (pid_t p : pids_) ::waitpid(p, nullptr, 0);
        pids_.clear();
        break;
      }
      for (pid_t p : pids_) ::kill(p, SIGTERM);
      signalled = true;
      deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(2000);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
  dir_.clear();
}

EmbeddedDaemons::~EmbeddedDaemons() { stop(0); }

}  // namespace gt::detail
