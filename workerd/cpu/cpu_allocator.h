// CpuAllocator: 64-byte aligned host blocks with a per-size-class cache, so a steady stream of
// same-sized tensors (the common case: the same ops every step) never reaches malloc/mmap.
//
// Size classes: at least 64 bytes; powers of two up to 1 MiB; above that, steps of a quarter of
// the power of two below (1, 1.25, 1.5, 1.75, 2 MiB, 2.5 MiB, ...), so at most 25% is wasted.
// A freed block goes to its class's free list while the cache holds at most max_cached_bytes;
// for a moment (kOvershoot) it may hold up to twice that, so that a loop whose temporaries
// outgrow the cap between two of its steps -- a C++ expression frees its temporaries only at
// its end -- reuses them instead of giving a block back to the system and faulting a fresh one
// in at every step (~10 ms per 64 MiB); a cache that stays over the cap that long is trimmed
// back to it at the next call. Beyond twice the cap a freed block goes back to the system. With a memory limit, `live + cached + new` may not
// exceed it: cached blocks are returned to the system first, and only when the live blocks
// alone leave no room is the request refused (ResourceExhausted, never a crash). A failing
// system allocation is handled the same way (trim the cache, retry once, then refuse).
// Large requests from the system pass the host memory guard first (host_memory.h): refused
// unless the host has room for them plus the guard's headroom, then committed page by page at
// once, so that the kernel's overcommit cannot turn them into an OOM kill later.
// Thread-safe (one mutex): the executor allocates while the I/O thread may drop tensors; the
// system allocation and its commit run outside the lock.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "libgtcore/status.h"
#include "workerd/backend.h"
#include "workerd/cpu/host_memory.h"

namespace gt::worker::cpu {

class CpuAllocator {
 public:
  static constexpr size_t kAlignment = 64;
  static constexpr size_t kMinBlock = 64;
  static constexpr size_t kLargeThreshold = size_t{1} << 20;
  static constexpr size_t kMaxRequest = size_t{1} << 56;

  struct Block {
    void* data = nullptr;
    size_t capacity = 0;
  };

  // max_memory_bytes 0 = no limit. `guard`: see host_memory.h (a default-constructed one, with
  // no `available` probe, turns the guard off).
  CpuAllocator(uint64_t max_memory_bytes, uint64_t max_cached_bytes,
               HostMemoryGuard guard = HostMemoryGuard::system());
  ~CpuAllocator();
  CpuAllocator(const CpuAllocator&) = delete;
  CpuAllocator& operator=(const CpuAllocator&) = delete;

  // A block of at least max(bytes, 1) bytes (zero-byte requests get the smallest class, so
  // data is never null).
  Result<Block> allocate(size_t bytes);
  void deallocate(void* data, size_t capacity);
  void trim();
  // Trims the cache back to max_cached_bytes if it has been over it since kOvershoot before
  // `now` (every allocate and deallocate calls it; tests pass a later time).
  void decay(std::chrono::steady_clock::time_point now);
  static constexpr std::chrono::seconds kOvershoot{2};

  BackendStats stats() const;
  size_t cached_blocks() const;

  // The capacity a request of `bytes` gets; 0 when the request is impossibly large.
  static size_t size_class(size_t bytes);

 private:
  // Frees cached blocks until `live + cached + need <= limit` (or the cache is empty).
  void trim_locked(uint64_t need);
  void decay_locked(std::chrono::steady_clock::time_point now);
  // Frees cached blocks until at most `keep` bytes are cached (or the cache is empty).
  void release_cached_locked(uint64_t keep);
  void free_all_cached_locked();
  // A new block from the system (called without the lock; `cap` is already counted as live).
  Result<void*> system_allocate(size_t bytes, size_t cap);

  const uint64_t max_memory_;
  const HostMemoryGuard guard_;
  const uint64_t max_cached_;
  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // capacity -> free blocks
  uint64_t live_ = 0;    // bytes (by capacity) in blocks handed out
  uint64_t cached_ = 0;  // bytes in free lists
  uint64_t peak_ = 0;
  std::chrono::steady_clock::time_point over_since_{};  // cached_ went over max_cached_ (0: not)
};

}  // namespace gt::worker::cpu
