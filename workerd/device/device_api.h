// DeviceApi: the small interface an asynchronous accelerator offers the device-generic parts of a
// worker (ARCHITECTURE §6): device memory, streams, events, transfers and host callbacks. CUDA
// implements it over the runtime API (workerd/cuda/cuda_device_api.h); the sim device
// (workerd/sim/sim_device.h) implements it on the CPU, so everything built on it -- the caching
// allocator, the stream backend, issue vs completion, error reporting -- is tested in CI without
// a GPU and cannot tell the two apart.
//
// Semantics are CUDA's, and the sim device keeps them exactly:
//   - work enqueued on one stream runs in order; streams run independently of each other;
//   - record_event(e, s) captures the work enqueued on s so far; a later record replaces what
//     e stands for, but a stream_wait_event() already issued keeps waiting for the old capture;
//   - an event never recorded counts as complete;
//   - transfers read or write host memory when the stream reaches them: the caller keeps the
//     host buffer valid (and untouched) until then (an event or a host callback says when);
//   - a host callback runs on a device/driver thread once the stream reaches it, and may not
//     call this API (on CUDA that deadlocks or fails);
//   - a sticky error (the context is lost) makes every later call fail: sticky_error() says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "libgtcore/status.h"

namespace gt::worker::device {

using Stream = void*;  // a cudaStream_t, or the sim device's stream
using Event = void*;   // a cudaEvent_t, or the sim device's event

class DeviceApi {
 public:
  virtual ~DeviceApi() = default;

  virtual std::string kind() const = 0;  // "cuda" / "sim"
  virtual uint64_t total_memory() const = 0;

  // Device memory. malloc returns ResourceExhausted when the device has no room (the caching
  // allocator then trims and retries); free may wait for the device (cudaFree does).
  virtual Result<void*> malloc(size_t bytes) = 0;
  virtual void free(void* p) = 0;

  // Host memory the device copies from and to asynchronously (pinned, on CUDA: a pageable
  // buffer would make cudaMemcpyAsync wait for the stream). The stream backend pools it.
  virtual Result<void*> host_alloc(size_t bytes) = 0;
  virtual void host_free(void* p) = 0;

  virtual Result<Stream> create_stream() = 0;
  // The stream's work must have finished (synchronize_stream first).
  virtual void destroy_stream(Stream s) = 0;
  // Blocks the calling thread until the stream's queued work is done. Never on an I/O thread.
  virtual Status synchronize_stream(Stream s) = 0;
  // True when everything enqueued on the stream so far has finished (non-blocking).
  virtual Result<bool> stream_idle(Stream s) = 0;

  virtual Result<Event> create_event() = 0;
  virtual void destroy_event(Event e) = 0;
  virtual Status record_event(Event e, Stream s) = 0;
  // True when the work the event captured is done (non-blocking).
  virtual Result<bool> event_done(Event e) = 0;
  // Blocks the calling thread until the event's work is done.
  virtual Status synchronize_event(Event e) = 0;
  // Work enqueued on `s` from now on waits for the event's current capture (no host wait).
  virtual Status stream_wait_event(Stream s, Event e) = 0;

  // Transfers, enqueued on `s` (see above for the host buffer's lifetime).
  virtual Status copy_to_device(void* dst, const void* src, size_t n, Stream s) = 0;
  virtual Status copy_to_host(void* dst, const void* src, size_t n, Stream s) = 0;
  virtual Status copy_on_device(void* dst, const void* src, size_t n, Stream s) = 0;
  virtual Status fill_zero(void* dst, size_t n, Stream s) = 0;

  // Runs fn on a device thread once `s` reaches this point (it may not call this API).
  virtual Status launch_host_func(Stream s, std::function<void()> fn) = 0;

  // Ok, or the error that made the device unusable (CUDA's sticky errors: an illegal address,
  // a launch failure). Once set it stays set.
  virtual Status sticky_error() const = 0;
  // Looks for a sticky error without waiting (CUDA: queries the streams, since a kernel's fault
  // shows only at the next call that looks); called periodically while completions are due,
  // because a lost context never runs the host functions they wait for.
  virtual Status poll_health() { return sticky_error(); }
};

}  // namespace gt::worker::device
