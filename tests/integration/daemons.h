// Real daemons on loopback for integration tests: a gt-dispatcherd on an ephemeral TCP port and
// N gt-workerd processes, started from the build's bin/ folder and killed at the end. Clients
// use the TCP port; workers register over the dispatcher's Unix socket (in the test's private
// folder), as on a deployed box without a worker secret (ARCHITECTURE §8).
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace gt::testing {

struct DaemonOptions {
  int workers = 1;
  std::vector<std::string> dispatcher_args;  // extra flags
  std::vector<std::string> worker_args;
  std::string admin_token;  // when the dispatcher requires tokens: used to watch for workers
  std::string log_level = "warn";  // both daemons' (their stderr: dir()/dispatcher.log, workerN.log)
};

class Daemons {
 public:
  explicit Daemons(DaemonOptions o = {});
  ~Daemons();
  Daemons(const Daemons&) = delete;
  Daemons& operator=(const Daemons&) = delete;

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // The dispatcher's Unix socket ("unix:/path"): where add_worker's workers connect.
  std::string unix_address() const { return "unix:" + unix_socket(); }
  std::string unix_socket() const { return dir_ + "/dispatcher.sock"; }
  const std::string& dir() const { return dir_; }
  // Starts one more worker; returns its index in workers().
  size_t add_worker(const std::vector<std::string>& extra = {});
  void kill_worker(size_t i, int sig);
  pid_t dispatcher_pid() const { return dispatcher_; }
  pid_t worker_pid(size_t i) const { return workers_.at(i); }
  // Kills the dispatcher with `sig` and waits for it.
  void kill_dispatcher(int sig);
  // Starts a dispatcher again on the same port (after kill_dispatcher).
  void restart_dispatcher();
  bool dispatcher_alive() const;
  // Waits until the dispatcher reports `n` registered workers (through a stats request).
  void wait_for_workers(size_t n);

 private:
  std::string dir_;
  int port_ = 0;
  pid_t dispatcher_ = -1;
  std::vector<pid_t> workers_;
  std::vector<std::string> worker_args_;
  std::vector<std::string> dispatcher_args_;
  std::string admin_token_;
  std::string log_level_;
  void start_dispatcher(int port);
};

// Path of a program in the build's bin/ folder.
std::string bin_path(const std::string& name);
// fork+exec a program with args; stdout/stderr go to `log` (appended) when given.
pid_t spawn_process(const std::string& exe, const std::vector<std::string>& args,
                    const std::string& log = "");
// Waits for a child with a timeout; returns its exit status (or -1 on timeout, after SIGKILL).
int wait_process(pid_t pid, int timeout_ms);
// Runs gt-bench-dp (data-parallel training on the daemons' workers, checked against one worker)
// for `steps` steps; returns its exit status and output, and the bytes the workers exchanged per
// step as it reports them (-1 when it printed none).
struct DpRun {
  int rc;
  std::string out;
  double bytes_per_step;
};
DpRun run_dp_bench(const Daemons& d, int steps);
// Runs gt-test-client (client_tool.cpp) with `args` against `address` (GT_ADDRESS; GT_TOKEN when
// `token` is set); returns its exit status and what it printed.
std::pair<int, std::string> run_client(const std::string& address,
                                       const std::vector<std::string>& args,
                                       const std::string& token = "", int timeout_ms = 90000);

}  // namespace gt::testing
