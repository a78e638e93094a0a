// ShmArenaTable: the shared-memory arenas clients on this host registered (libgtcore/shm_arena.h,
// issue 15), per session: a fetch that names one is written into it instead of the socket.
// Attached on the I/O thread (the dispatcher passes the descriptor ahead of the batch with the
// fetch), looked up on the executor thread, dropped with the session. A session keeps its
// kPerSession newest arenas: a fetch naming an older one is answered over the socket, which the
// client always accepts, and an upload naming one fails with a clear error (a client keeps at
// most that many arenas alive, and only ever fills its newest).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "libgtcore/shm_arena.h"

namespace gt::worker {

class ShmArenaTable {
 public:
  static constexpr size_t kPerSession = 8;

  // Checks `fd` (a sealed memfd of `bytes`, all of it allocated by the client that made it, so
  // mapping it costs this worker no memory) and maps it for `session`.
  Status attach(uint64_t session, uint64_t generation, uint64_t bytes, UniqueFd fd);
  // The mapping of that arena, or null.
  std::shared_ptr<ShmMapping> find(uint64_t session, uint64_t generation) const;
  // An upload's payload (Instr.shm) in the arena it names, checked to lie inside it with its
  // release word; `mapping` keeps it mapped while the caller reads it.
  struct Upload {
    std::shared_ptr<ShmMapping> mapping;
    char* region = nullptr;
    uint64_t bytes = 0;
  };
  Result<Upload> upload(uint64_t session, uint64_t generation, uint64_t offset, uint64_t bytes) const;
  void drop(uint64_t session);
  void clear();
  size_t size() const;  // arenas held, all sessions (tests)

 private:
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, std::map<uint64_t, std::shared_ptr<ShmMapping>>> arenas_;
};

}  // namespace gt::worker
