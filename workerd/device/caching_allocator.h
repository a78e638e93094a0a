// CachingAllocator: the device-generic caching allocator of asynchronous-device workers (CUDA and
// the sim device; ARCHITECTURE §6: no cudaMalloc per op). It speaks only to DeviceApi
// (device_api.h), so the same code runs on a GPU and in CI.
//
// Modelled on PyTorch's CUDA caching allocator, which users know:
//   - requests are rounded up to 512 bytes and served from segments obtained with
//     DeviceApi::malloc: the small pool (requests <= 1 MiB) carves 2 MiB segments, the large pool
//     20 MiB segments for requests below 10 MiB and a segment of the request rounded to 2 MiB
//     above that;
//   - a free block is the best fit of its pool; a block larger than needed is split (small pool:
//     when at least 512 bytes remain; large pool: when more than 1 MiB remains), and a freed
//     block is coalesced with its free neighbours in the segment, so memory is not lost to size
//     classes that only grow;
//   - streams: a block remembers every stream it was used on (allocate's stream and use_on's).
//     Freeing records nothing. When a free block is claimed for a stream T and it was last used
//     on other streams S, then -- and only then -- an event is recorded on each S and T waits
//     for it (stream_wait_event: no host wait). Blocks last used on T alone are preferred for T;
//   - out of memory (the device's malloc fails, or a new segment would pass max_bytes): the
//     cached segments that are wholly free are released to the device (after their streams'
//     work is done) and the allocation retried once; a second failure is ResourceExhausted,
//     never a crash;
//   - workspaces the device libraries hold outside the allocator (cuBLAS, NCCL) are counted in
//     the stats through note_workspace();
//   - graph capture (begin_capture / end_capture, around a stream's capture): a wait recorded
//     into a graph waits for what its event stands for when the graph runs, and the allocator
//     re-records its pooled events, so while a stream captures no block of another stream's is
//     handed to it (a free block pending elsewhere is passed over and a segment grown instead),
//     nothing syncs or frees (the cache is not trimmed: that would wait on the capturing stream
//     and end the capture), and a claim that would need a cross-stream wait is refused, its
//     block left as it was. Such a refusal, or running out of memory, spoils the capture:
//     end_capture() says so and the caller runs the work again without a graph.
//
// Thread-safe (one mutex). Every block must be deallocated before the allocator is destroyed;
// the destructor releases the cached segments (and, defensively, live ones).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "libgtcore/status.h"
#include "workerd/device/device_api.h"

namespace gt::worker::device {

struct AllocatorStats {
  uint64_t allocated_bytes = 0;  // in live blocks (rounded sizes)
  uint64_t reserved_bytes = 0;   // in segments obtained from the device
  uint64_t peak_bytes = 0;       // high-water mark of allocated_bytes
  uint64_t workspace_bytes = 0;  // held by device libraries (note_workspace)
  uint64_t segments = 0;
  uint64_t live_blocks = 0;
  uint64_t device_mallocs = 0;   // DeviceApi::malloc calls that succeeded
  uint64_t cross_stream_waits = 0;  // events recorded to hand a block to another stream
  uint64_t retries = 0;          // allocations that trimmed the cache and retried
  uint64_t ooms = 0;             // allocations refused
};

class CachingAllocator {
 public:
  struct Block {
    void* data = nullptr;
    size_t size = 0;  // what the block holds (>= the request, a multiple of 512)
  };

  // max_bytes: at most this many bytes reserved from the device (0: as much as it gives).
  explicit CachingAllocator(DeviceApi& device, uint64_t max_bytes = 0);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` (> 0) bytes, 512-byte aligned, for use on `stream` (nullptr:
  // not known yet; the first use_on() claims it).
  Result<Block> allocate(size_t bytes, Stream stream);
  // Back to the cache (no device call). Unknown pointers are ignored.
  void deallocate(void* data);
  // The block (a pointer allocate() returned) is used on `s`: the first use after the block
  // was claimed from the cache orders `s` after the block's previous streams; `s` is added to
  // the streams it waits for when freed. Unknown pointers (nullptr for empty tensors) are
  // ignored.
  Status use_on(const void* data, Stream s);
  // The stream is about to be destroyed and its work has finished: blocks forget it.
  void forget_stream(Stream s);
  // Releases every wholly free segment to the device (after their streams' work is done); not
  // while a stream captures.
  void trim();
  // `s` captures a graph from now on (see above) / no more; end_capture() is true when
  // something the capture needed was refused meanwhile (the graph must not run).
  void begin_capture(Stream s);
  bool end_capture();
  // A device library took (delta > 0) or gave back (delta < 0) workspace memory.
  void note_workspace(int64_t delta);

  AllocatorStats stats() const;
  // The size a request of `bytes` is rounded to (a multiple of 512).
  static size_t round_size(size_t bytes);

 private:
  struct State;
  mutable std::mutex mu_;
  DeviceApi& device_;
  std::unique_ptr<State> state_;
};

}  // namespace gt::worker::device
