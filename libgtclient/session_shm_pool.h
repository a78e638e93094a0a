// ShmArenaPool: a client's shared-memory arenas for fetches (libgtcore/shm_arena.h, issue 15).
//
// A fetch from the Unix socket takes a region of the newest arena; the worker writes the value
// there and the client copies it out (fetch_into) or hands the region itself to the caller
// (fetch_shared: a numpy array over it, no copy at all). A region goes back to its arena when
// its last owner lets go, from any thread, possibly after the session has ended: regions keep
// their arena (and its mapping) alive. When the newest arena has no room a larger one is made
// (and registered with the dispatcher by the caller); old ones are unmapped once their last
// region is released. All live arenas together stay within the dispatcher's limit.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "libgtcore/shm_arena.h"

namespace gt::detail {

class ShmArenaPool;

class ShmRegion {
 public:
  struct Arena;
  ShmRegion(std::shared_ptr<Arena> arena, uint64_t offset, uint64_t bytes);
  ~ShmRegion();
  ShmRegion(const ShmRegion&) = delete;
  ShmRegion& operator=(const ShmRegion&) = delete;

  char* data() const;
  uint64_t generation() const;
  uint64_t offset() const { return offset_; }
  uint64_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<Arena> arena_;
  uint64_t offset_, bytes_;
};

class ShmArenaPool {
 public:
  // Regions are aligned to (and sized in) pages; arenas start at kMinArenaBytes.
  static constexpr uint64_t kAlign = 4096;
  static constexpr uint64_t kMinArenaBytes = 64ull << 20;
  // Live arenas at most: as many as the dispatcher and a worker keep per session, so a region
  // handed out always names an arena they still hold.
  static constexpr uint32_t kMaxLiveArenas = 8;

  // `min_arena_bytes`: the first arena's size (tests make it small).
  explicit ShmArenaPool(uint64_t max_bytes, uint64_t min_arena_bytes = kMinArenaBytes);

  // A new arena to register with the dispatcher before a region of it is used.
  struct NewArena {
    UniqueFd fd;
    uint64_t generation = 0;
    uint64_t bytes = 0;
  };
  // A region of at least `bytes` bytes in the newest arena, making a new arena (returned in
  // *made, its fd valid) when that one has no room. Null when it cannot be had within the
  // limit (or the memory for a new arena is short): the fetch then takes the socket.
  std::shared_ptr<ShmRegion> allocate(uint64_t bytes, NewArena* made);

  // Bytes of all live arenas (mapped here), for tests and the limit.
  uint64_t live_bytes() const { return live_->bytes.load(); }
  uint32_t live_arenas() const { return live_->arenas.load(); }

  struct Live {
    std::atomic<uint64_t> bytes{0};
    std::atomic<uint32_t> arenas{0};
  };

 private:
  std::mutex mu_;
  uint64_t max_bytes_;
  uint64_t min_arena_bytes_;
  uint64_t next_generation_ = 1;
  std::shared_ptr<ShmRegion::Arena> newest_;
  std::shared_ptr<Live> live_ = std::make_shared<Live>();
};

}  // namespace gt::detail
