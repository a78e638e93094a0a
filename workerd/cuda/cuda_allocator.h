// CudaAllocator: the CUDA backend's caching device allocator (ARCHITECTURE §6: no cudaMalloc per op).
//
// Sizes are rounded to size classes (powers of two up to 1 MiB, then quarter steps between
// powers of two: at most 25% slack) and a freed block goes back to its class's free list; only
// a miss calls cudaMalloc. When cudaMalloc runs out of memory the whole cache is returned to the
// driver and the allocation retried once; a second failure is ResourceExhausted, never a crash.
// An optional limit (max_memory_bytes) caps what live tensors may hold.
//
// Streams: every session runs on its own stream, and a block freed by one session may be handed
// to another. The backend tells the allocator which stream last used a block (use_on); release
// records an event on that stream, and the block's next use_on from a *different* stream makes
// that stream wait for the event (cudaStreamWaitEvent: no host synchronization). Reuse on the
// same stream needs nothing: stream order already serializes it.
//
// Thread-safe (one mutex); the backend and every Storage it handed out must be released before
// the allocator is destroyed (cached blocks are freed then).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "libgtcore/status.h"
#include "workerd/backend.h"

namespace gt::worker::cuda {

class CudaAllocator {
 public:
  struct Block {
    void* data = nullptr;
    size_t capacity = 0;
  };

  explicit CudaAllocator(uint64_t max_live_bytes = 0);
  ~CudaAllocator();
  CudaAllocator(const CudaAllocator&) = delete;
  CudaAllocator& operator=(const CudaAllocator&) = delete;

  // A block of at least `bytes` (> 0) bytes, 256-byte aligned.
  Result<Block> allocate(size_t bytes);
  // Returns a block from allocate() to the cache (events recorded as described above).
  void deallocate(void* data);
  // Orders the block's next use on `s` after its previous stream's work; remembers `s` as the
  // block's stream. Unknown pointers (nullptr for empty tensors) are ignored.
  Status use_on(const void* data, cudaStream_t s);
  // The stream is about to be destroyed (its work already finished): blocks forget it.
  void forget_stream(cudaStream_t s);
  // Frees every cached block (waits for their pending events first).
  void trim();

  BackendStats stats() const;
  static size_t size_class(size_t bytes);

 private:
  struct Info {
    size_t capacity = 0;
    cudaStream_t stream = nullptr;  // last stream known to use the block
    cudaEvent_t event = nullptr;    // recorded at release on `stream` (created lazily)
    bool pending = false;           // event recorded and not yet waited for
  };
  void trim_locked();

  mutable std::mutex mu_;
  uint64_t max_live_;
  std::unordered_map<void*, Info> live_;
  std::map<size_t, std::vector<std::pair<void*, Info>>> free_;  // by capacity
  uint64_t allocated_ = 0, cached_ = 0, peak_ = 0;
};

}  // namespace gt::worker::cuda
