// The embedded default (ARCHITECTURE §1): with no GT_ADDRESS and no gt::connect, the first op spawns
// a private gt-dispatcherd and its workers on a Unix socket in a fresh 0700 directory. They exit
// when this process disconnects or dies, and are reaped when the session shuts down.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "libgtcore/status.h"

namespace gt::detail {

class EmbeddedDaemons {
 public:
  ~EmbeddedDaemons();
  const std::string& address() const { return address_; }  // "unix:/..."
  // Starts a dispatcher and `num_workers` workers (worker i uses device "auto:i").
  static Result<std::unique_ptr<EmbeddedDaemons>> start(int num_workers);
  // Waits up to `timeout_ms` for every child to exit, then kills what is left.
  void stop(int timeout_ms);

 private:
  std::string dir_, address_;
  std::vector<pid_t> pids_;
};

// Where gt-dispatcherd / gt-workerd live: $GT_BIN_DIR, relative to the file holding
// libgtclient, $PATH, then (for a library inside it only) the build tree. See
// session_daemon_lookup.cpp for the details.
Result<std::string> find_daemon_dir();

}  // namespace gt::detail
