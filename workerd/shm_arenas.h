// ShmArenaTable: the shared-memory arenas clients on this host registered (libgtcore/shm_arena.h,
// issue 15), per session: a fetch that names one is written into it instead of the socket.
// Attached on the I/O thread (the dispatcher passes the descriptor ahead of the batch with the
// fetch), looked up on the executor thread, dropped with the session. A session keeps its two
// newest arenas: a fetch naming an older one is answered over the socket, which the client
// always accepts.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "libgtcore/shm_arena.h"

namespace gt::worker {

class ShmArenaTable {
 public:
  static constexpr size_t kPerSession = 2;

  // Checks `fd` (a sealed memfd of `bytes`, all of it allocated by the client that made it, so
  // mapping it costs this worker no memory) and maps it for `session`.
  Status attach(uint64_t session, uint64_t generation, uint64_t bytes, UniqueFd fd);
  // The mapping of that arena, or null.
  std::shared_ptr<ShmMapping> find(uint64_t session, uint64_t generation) const;
  void drop(uint64_t session);
  void clear();
  size_t size() const;  // arenas held, all sessions (tests)

 private:
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, std::deque<std::pair<uint64_t, std::shared_ptr<ShmMapping>>>> arenas_;
};

}  // namespace gt::worker
