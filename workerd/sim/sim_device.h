// SimDevice: an asynchronous accelerator simulated on the CPU (ARCHITECTURE §6, `--device sim`).
// It implements DeviceApi with CUDA's semantics (device_api.h) so that everything that is not a
// kernel -- the caching allocator, issue vs completion, syncs, events, stream order, error
// reporting, OOM handling -- runs in CI exactly as it would on a GPU:
//
//   memory    a separate pool of `memory_bytes`, reached only through the copies below (host code
//             never dereferences a device pointer; only device threads do); malloc beyond the
//             pool is ResourceExhausted, like cudaMalloc's out-of-memory
//   streams   each stream is a FIFO drained by its own device thread, so streams progress
//             independently (one session's backlog never delays another's stream) while a
//             stream's work runs in order; enqueueing returns at once
//   events    record_event captures the stream's work so far; stream_wait_event makes a stream
//             wait, on its device thread, for the capture made at the time of the call
//   timing    a kernel or copy starts no earlier than `launch_us` after it was enqueued (and after
//             the previous item of its stream), and a copy of n bytes takes n / `gbps` more:
//             completion lags issue, so code that reads results without waiting for them sees
//             stale memory and fails its tests (the default makes that visible; it is not meant
//             to be realistic). `kernel_us` gives every kernel a device time, so a backlog of
//             queued work is cheap to make (tests of syncs behind seconds of work). New device memory is filled with 0xff bytes (NaN as floats), so
//             code that assumes zeroed memory fails too.
//   kernels   launch() enqueues a host function that the device thread runs (the sim backend
//             runs the CPU kernels this way); it is the sim's only API beyond DeviceApi
//   faults    inject_sticky_error() makes the device fail like a GPU after an illegal address:
//             every later call returns the error, queued work is dropped
//   graphs    a capturing stream records what is enqueued on it (a node per kernel, copy, wait
//             or host function) instead of queueing it; a launched graph is one queue item:
//             one launch latency, then its nodes back to back, each with its device time --
//             the saving CUDA graphs give a GPU, made visible. The rules of device_api.h are
//             enforced: waiting for, querying or recording an event on a capturing stream is
//             an error that invalidates the capture; an update keeps the executable graph
//             only for the same topology (the nodes' kinds, in order). `launch_cpu_us` and
//             `capture_cpu_us` charge the calling thread for a launch and a recorded node, as
//             CUDA's launch API does the host (benchmarks of graphs). `fail_capture_every`
//             invalidates every Nth capture at its end (tests of the callers' fallback).
//
// A stream's queue is bounded (`max_queued` items, like CUDA's launch queue): enqueueing onto a
// full stream blocks the caller until the device drains some.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <map>
#include <unordered_map>

#include "workerd/device/device_api.h"

namespace gt::worker::sim {

struct SimDeviceOptions {
  uint64_t memory_bytes = uint64_t{4} << 30;
  int64_t launch_us = 50;   // per queued item, before it starts
  int64_t kernel_us = 0;    // each kernel occupies its stream at least this long (device time)
  double gbps = 10.0;       // copy bandwidth (GB/s); 0 = instant
  size_t max_queued = 4096;  // items per stream before enqueueing blocks
  uint64_t fail_capture_every = 0;  // every Nth end_capture fails (0: none; tests)
  // Host time a launch call takes on the calling thread (a kernel, a copy, a graph), and a node
  // recorded in a capture: what CUDA's launch API costs the host, which graphs amortize
  // (benchmarks; 0: free).
  int64_t launch_cpu_us = 0;
  int64_t capture_cpu_us = 0;
};

class SimDevice final : public device::DeviceApi {
 public:
  explicit SimDevice(SimDeviceOptions opts = {});
  ~SimDevice() override;
  SimDevice(const SimDevice&) = delete;
  SimDevice& operator=(const SimDevice&) = delete;

  std::string kind() const override { return "sim"; }
  uint64_t total_memory() const override { return opts_.memory_bytes; }
  const SimDeviceOptions& options() const { return opts_; }

  Result<void*> malloc(size_t bytes) override;
  void free(void* p) override;

  Result<void*> host_alloc(size_t bytes) override;
  void host_free(void* p) override;

  Result<device::Stream> create_stream() override;
  void destroy_stream(device::Stream s) override;
  Status synchronize_stream(device::Stream s) override;
  Status synchronize_device() override;
  size_t live_streams() const;  // (tests)
  Result<bool> stream_idle(device::Stream s) override;

  Result<device::Event> create_event() override;
  void destroy_event(device::Event e) override;
  Status record_event(device::Event e, device::Stream s) override;
  Result<bool> event_done(device::Event e) override;
  Status synchronize_event(device::Event e) override;
  Status stream_wait_event(device::Stream s, device::Event e) override;

  Status copy_to_device(void* dst, const void* src, size_t n, device::Stream s) override;
  Status copy_to_host(void* dst, const void* src, size_t n, device::Stream s) override;
  Status copy_on_device(void* dst, const void* src, size_t n, device::Stream s) override;
  Status fill_zero(void* dst, size_t n, device::Stream s) override;
  Status launch_host_func(device::Stream s, std::function<void()> fn) override;

  // Bookkeeping only (the sim's copies reach any host memory): what is registered, for tests.
  Status register_host(void* p, size_t bytes) override;
  void unregister_host(void* p) override;
  uint64_t registered_host_bytes() const;

  Status begin_capture(device::Stream s) override;
  Result<device::Graph> end_capture(device::Stream s, device::Graph reuse) override;
  Status launch_graph(device::Graph g, device::Stream s) override;
  void destroy_graph(device::Graph g) override;

  Status sticky_error() const override;

  // Runs `kernel` on the stream's device thread in stream order (a kernel launch).
  Status launch(device::Stream s, std::function<void()> kernel);
  // Fault injection (tests, and the worker's sim_fault_after option): the device is lost.
  void inject_sticky_error(const std::string& why);

  struct SimStream;  // opaque: the sim's stream behind a device::Stream

  // Test hooks: bytes in device allocations; whether `p` points into one; executable graphs
  // held.
  uint64_t bytes_in_use() const;
  bool is_device_pointer(const void* p) const;
  size_t graphs() const;

 private:
  struct SimEvent;
  struct SimGraph;
  struct Capture {  // what an event stands for: a stream's count of completed items
    std::shared_ptr<SimStream> stream;  // null: never recorded (complete)
    uint64_t target = 0;
  };
  Result<Capture> capture_of(device::Event e) const;
  SimStream* stream_of(device::Stream s) const;
  Status enqueue(device::Stream s, int64_t copy_bytes, std::function<void()> work);

  SimDeviceOptions opts_;
  mutable std::mutex mu_;  // memory map, streams, events, the sticky error
  std::map<uintptr_t, size_t> allocations_;  // start -> bytes
  uint64_t in_use_ = 0;
  std::unordered_map<const void*, std::shared_ptr<SimStream>> streams_;
  std::unordered_map<const void*, std::shared_ptr<SimEvent>> events_;
  std::unordered_map<const void*, std::unique_ptr<SimGraph>> graphs_;
  std::unordered_map<const void*, size_t> registered_;  // host memory: start -> bytes
  uint64_t captures_ended_ = 0;
  std::atomic<bool> lost_{false};
  std::string lost_why_;
};

}  // namespace gt::worker::sim
