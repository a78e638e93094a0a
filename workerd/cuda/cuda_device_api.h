// CudaDeviceApi: DeviceApi (workerd/device/device_api.h) over the CUDA runtime, for one visible
// device. Every call first makes that device current on the calling thread (the executor, the
// completion thread and the I/O thread all reach it). Host staging memory is pinned
// (cudaHostAlloc). Errors become statuses with file:line (cuda_check.h); a sticky error -- one
// after which the context is unusable (an illegal address, a launch failure, a device-side
// assert) -- is remembered process-wide by cuda_status(), whichever call saw it first, and
// reported by sticky_error(): the worker then has to go (ARCHITECTURE §6).
//
// Graph capture runs in cudaStreamCaptureModeRelaxed, so that the caching allocator may still
// call cudaMalloc while a session's stream captures; a wait on an event is then recorded as an
// external event wait (the allocator's cross-stream handoff), and poll_health() leaves the
// capturing streams alone (a query of one would invalidate its capture).
#pragma once

#include <cuda_runtime_api.h>

#include <mutex>
#include <unordered_set>

#include "workerd/device/device_api.h"

namespace gt::worker::cuda {

class CudaDeviceApi final : public device::DeviceApi {
 public:
  CudaDeviceApi(int device, uint64_t total_memory) : device_(device), total_(total_memory) {}

  std::string kind() const override { return "cuda"; }
  uint64_t total_memory() const override { return total_; }

  Result<void*> malloc(size_t bytes) override;
  void free(void* p) override;
  Result<void*> host_alloc(size_t bytes) override;
  void host_free(void* p) override;

  Result<device::Stream> create_stream() override;
  void destroy_stream(device::Stream s) override;
  Status synchronize_stream(device::Stream s) override;
  Status synchronize_device() override;
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

  Status register_host(void* p, size_t bytes) override;
  void unregister_host(void* p) override;

  Status begin_capture(device::Stream s) override;
  Result<device::Graph> end_capture(device::Stream s, device::Graph reuse) override;
  Status launch_graph(device::Graph g, device::Stream s) override;
  void destroy_graph(device::Graph g) override;

  Status sticky_error() const override;
  Status poll_health() override;

  int device() const { return device_; }
  Status use_device() const;

 private:
  Status copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind, device::Stream s);

  int device_;
  uint64_t total_;
  std::mutex mu_;
  std::unordered_set<cudaStream_t> streams_;    // polled by poll_health()
  std::unordered_set<cudaStream_t> capturing_;  // not polled: a query would invalidate it
};

}  // namespace gt::worker::cuda
