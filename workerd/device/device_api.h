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
//   - a sticky error (the context is lost) makes every later call fail: sticky_error() says so;
//   - graph capture (CUDA graphs; hot paths, ARCHITECTURE §7): between begin_capture(s) and
//     end_capture(s), work enqueued on s is recorded into a graph instead of run, and
//     launch_graph() runs the recorded work later as one launch. While s captures, waiting for
//     it or asking about it (synchronize_stream, stream_idle) and recording an event on it are
//     errors that also invalidate the capture (end_capture then fails and nothing of it runs);
//     stream_wait_event(s, e) is recorded as a wait for what e stands for when the graph runs
//     (CUDA's external event wait); a transfer reads or writes its host buffer when the graph
//     runs. Only the capturing thread may enqueue on s meanwhile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "libgtcore/status.h"

namespace gt::worker::device {

using Stream = void*;  // a cudaStream_t, or the sim device's stream
using Event = void*;   // a cudaEvent_t, or the sim device's event
using Graph = void*;   // a cudaGraphExec_t, or the sim device's executable graph

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
  // Blocks until the work enqueued so far on every stream -- the host functions included --
  // has finished (a backend's shutdown: no host function may run after it).
  virtual Status synchronize_device() = 0;

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

  // Graph capture (see above). end_capture turns what was recorded into an executable graph:
  // `reuse` (an executable graph from an earlier capture, or nullptr) is updated in place when
  // the new graph has the same topology -- the same nodes with other arguments, which is what a
  // hot path's next run records (cudaGraphExecUpdate) -- and returned; else a new one is made
  // and `reuse` destroyed. On error (an invalidated capture) `reuse` is left as it was and
  // nothing recorded runs. A device without graphs says so (Unimplemented) at begin_capture.
  virtual Status begin_capture(Stream s) { return unimplemented("{}: no graph capture", kind()); }
  virtual Result<Graph> end_capture(Stream s, Graph reuse) {
    return unimplemented("{}: no graph capture", kind());
  }
  // Enqueues the graph's work on `s`, in the order it was recorded, as one launch.
  virtual Status launch_graph(Graph g, Stream s) {
    return unimplemented("{}: no graph capture", kind());
  }
  // A launched graph finishes its work first (the device keeps what it needs).
  virtual void destroy_graph(Graph g) {}

  // Host memory the device may copy from and to directly, as host_alloc's (cudaHostRegister: the
  // pages are pinned until unregister_host). A device without it says so (Unimplemented).
  virtual Status register_host(void* p, size_t bytes) {
    return unimplemented("{}: no host memory registration", kind());
  }
  virtual void unregister_host(void* p) {}

  // Ok, or the error that made the device unusable (CUDA's sticky errors: an illegal address,
  // a launch failure). Once set it stays set.
  virtual Status sticky_error() const = 0;
  // Looks for a sticky error without waiting (CUDA: queries the streams, since a kernel's fault
  // shows only at the next call that looks); called periodically while completions are due,
  // because a lost context never runs the host functions they wait for.
  virtual Status poll_health() { return sticky_error(); }
};

}  // namespace gt::worker::device
