// One accepted connection, before and after its Hello. The Dispatcher accepts, authenticates
// and closes it; the WorkerPool and the ClientSessions only send on it and name it in the
// instruction log (source_of).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <string>

#include "libgtcore/asio.h"
#include "libgtcore/framed_connection.h"

namespace gt::dispatcher {

struct Conn {
  enum class Role { kPending, kClient, kWorker, kClosed };
  uint64_t id = 0;
  Role role = Role::kPending;
  std::shared_ptr<FramedConnection> io;
  std::string transport;  // "tcp" / "unix"
  std::unique_ptr<asio::steady_timer> deadline;
  uint64_t session = 0;   // kClient
  uint32_t worker = 0;    // kWorker
  std::string peer_key;   // the address pending connections are counted by
  bool counted_pending = false;  // included in the pending-connection counts
};

// The instruction log's name for the far end: CLIENT:<session>, WORKER:<id> or CONN:<id>.
inline std::string source_of(const Conn& c) {
  switch (c.role) {
    case Conn::Role::kClient: return fmt::format("CLIENT:{}", c.session);
    case Conn::Role::kWorker: return fmt::format("WORKER:{}", c.worker);
    default: return fmt::format("CONN:{}", c.id);
  }
}

}  // namespace gt::dispatcher
