#include "workerd/cuda/cuda_device_api.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <memory>

#include "workerd/cuda/cuda_check.h"

namespace gt::worker::cuda {

using device::Event;
using device::Graph;
using device::Stream;

namespace {
cudaStream_t as_stream(Stream s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(Event e) { return static_cast<cudaEvent_t>(e); }

// "Not ready" is no error, but the runtime may keep it as the thread's last error, which the
// next launcher's cudaGetLastError() would then report as its own (PyTorch clears it too).
void clear_not_ready() {
  if (cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();
}

// A query's answer: done, not yet (cudaErrorNotReady), or an error.
Result<bool> query_result(cudaError_t r, const char* what) {
  if (r == cudaErrorNotReady) {
    clear_not_ready();
    return false;
  }
  GT_RETURN_IF_ERROR(cuda_status(r, what, __FILE__, __LINE__));
  return true;
}

// cudaLaunchHostFunc takes a C function: the std::function travels on the heap. Nothing may
// escape into the driver's thread (an exception there terminates the process).
void CUDART_CB run_host_func(void* arg) {
  std::unique_ptr<std::function<void()>> fn(static_cast<std::function<void()>*>(arg));
  try {
    (*fn)();
  } catch (const std::exception& e) {
    spdlog::error("a host function on a CUDA stream threw: {}", e.what());
  } catch (...) {
    spdlog::error("a host function on a CUDA stream threw");
  }
}
}  // namespace

// The current device is per host thread; another backend or the caller may have switched it.
Status CudaDeviceApi::use_device() const {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == device_) return Status::ok();
  GT_CUDA_CHECK(cudaSetDevice(device_));
  return Status::ok();
}

Result<void*> CudaDeviceApi::malloc(size_t bytes) {
  GT_RETURN_IF_ERROR(use_device());
  void* p = nullptr;
  GT_CUDA_CHECK(cudaMalloc(&p, bytes));  // out of memory: ResourceExhausted (cuda_check.h)
  return p;
}

void CudaDeviceApi::free(void* p) {
  if (p == nullptr || !use_device().is_ok()) return;
  (void)cuda_status(cudaFree(p), "cudaFree", __FILE__, __LINE__);
}

Result<void*> CudaDeviceApi::host_alloc(size_t bytes) {
  GT_RETURN_IF_ERROR(use_device());
  void* p = nullptr;
  GT_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
  return p;
}

void CudaDeviceApi::host_free(void* p) {
  if (p != nullptr) (void)cuda_status(cudaFreeHost(p), "cudaFreeHost", __FILE__, __LINE__);
}

Result<Stream> CudaDeviceApi::create_stream() {
  GT_RETURN_IF_ERROR(use_device());
  cudaStream_t s = nullptr;
  // Non-blocking: a session's work must not serialize with the legacy default stream.
  GT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::lock_guard<std::mutex> lk(mu_);
  streams_.insert(s);
  return static_cast<Stream>(s);
}

void CudaDeviceApi::destroy_stream(Stream s) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    streams_.erase(as_stream(s));
  }
  if (!use_device().is_ok()) return;
  (void)cuda_status(cudaStreamDestroy(as_stream(s)), "cudaStreamDestroy", __FILE__, __LINE__);
}

Status CudaDeviceApi::synchronize_stream(Stream s) {
  GT_RETURN_IF_ERROR(use_device());
  GT_CUDA_CHECK(cudaStreamSynchronize(as_stream(s)));
  return Status::ok();
}

Status CudaDeviceApi::synchronize_device() {
  GT_RETURN_IF_ERROR(use_device());
  GT_CUDA_CHECK(cudaDeviceSynchronize());
  return Status::ok();
}

Result<bool> CudaDeviceApi::stream_idle(Stream s) {
  GT_RETURN_IF_ERROR(use_device());
  return query_result(cudaStreamQuery(as_stream(s)), "cudaStreamQuery");
}

Result<Event> CudaDeviceApi::create_event() {
  GT_RETURN_IF_ERROR(use_device());
  cudaEvent_t e = nullptr;
  GT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return static_cast<Event>(e);
}

void CudaDeviceApi::destroy_event(Event e) {
  if (use_device().is_ok())
    (void)cuda_status(cudaEventDestroy(as_event(e)), "cudaEventDestroy", __FILE__, __LINE__);
}

Status CudaDeviceApi::record_event(Event e, Stream s) {
  GT_RETURN_IF_ERROR(use_device());
  GT_CUDA_CHECK(cudaEventRecord(as_event(e), as_stream(s)));
  return Status::ok();
}

Result<bool> CudaDeviceApi::event_done(Event e) {
  GT_RETURN_IF_ERROR(use_device());
  return query_result(cudaEventQuery(as_event(e)), "cudaEventQuery");
}

Status CudaDeviceApi::synchronize_event(Event e) {
  GT_RETURN_IF_ERROR(use_device());
  GT_CUDA_CHECK(cudaEventSynchronize(as_event(e)));
  return Status::ok();
}

Status CudaDeviceApi::stream_wait_event(Stream s, Event e) {
  GT_RETURN_IF_ERROR(use_device());
  bool capturing = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    capturing = capturing_.count(as_stream(s)) != 0;
  }
  // In a capture an event recorded outside it can only be waited for as an external node.
  GT_CUDA_CHECK(cudaStreamWaitEvent(as_stream(s), as_event(e),
                                    capturing ? cudaEventWaitExternal : cudaEventWaitDefault));
  return Status::ok();
}

Status CudaDeviceApi::copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind, Stream s) {
  GT_RETURN_IF_ERROR(use_device());
  GT_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, kind, as_stream(s)));
  return Status::ok();
}

Status CudaDeviceApi::copy_to_device(void* dst, const void* src, size_t n, Stream s) {
  return copy(dst, src, n, cudaMemcpyHostToDevice, s);
}

Status CudaDeviceApi::copy_to_host(void* dst, const void* src, size_t n, Stream s) {
  return copy(dst, src, n, cudaMemcpyDeviceToHost, s);
}

Status CudaDeviceApi::copy_on_device(void* dst, const void* src, size_t n, Stream s) {
  return copy(dst, src, n, cudaMemcpyDeviceToDevice, s);
}

Status CudaDeviceApi::fill_zero(void* dst, size_t n, Stream s) {
  GT_RETURN_IF_ERROR(use_device());
  GT_CUDA_CHECK(cudaMemsetAsync(dst, 0, n, as_stream(s)));
  return Status::ok();
}

Status CudaDeviceApi::launch_host_func(Stream s, std::function<void()> fn) {
  GT_RETURN_IF_ERROR(use_device());
  auto* heap = new std::function<void()>(std::move(fn));
  const cudaError_t e = cudaLaunchHostFunc(as_stream(s), run_host_func, heap);
  if (e != cudaSuccess) delete heap;  // never called: it is still ours
  GT_CUDA_CHECK(e);
  return Status::ok();
}

// Pins the pages (page-locked, mapped for DMA): async copies then go straight to or from them.
Status CudaDeviceApi::register_host(void* p, size_t bytes) {
  GT_RETURN_IF_ERROR(use_device());
  GT_CUDA_CHECK(cudaHostRegister(p, bytes, cudaHostRegisterPortable));
  return Status::ok();
}

void CudaDeviceApi::unregister_host(void* p) {
  if (p != nullptr && use_device().is_ok())
    (void)cuda_status(cudaHostUnregister(p), "cudaHostUnregister", __FILE__, __LINE__);
}

Status CudaDeviceApi::begin_capture(Stream s) {
  GT_RETURN_IF_ERROR(use_device());
  {
    std::lock_guard<std::mutex> lk(mu_);  // before the capture starts: poll_health stays away
    capturing_.insert(as_stream(s));
  }
  const cudaError_t e = cudaStreamBeginCapture(as_stream(s), cudaStreamCaptureModeRelaxed);
  if (e != cudaSuccess) {
    std::lock_guard<std::mutex> lk(mu_);
    capturing_.erase(as_stream(s));
  }
  GT_CUDA_CHECK(e);
  return Status::ok();
}

Result<Graph> CudaDeviceApi::end_capture(Stream s, Graph reuse) {
  GT_RETURN_IF_ERROR(use_device());
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(as_stream(s), &graph);
  {
    std::lock_guard<std::mutex> lk(mu_);
    capturing_.erase(as_stream(s));
  }
  GT_CUDA_CHECK(ended);  // an invalidated capture: nothing of it runs
  struct GraphGuard {
    cudaGraph_t g;
    ~GraphGuard() { (void)cudaGraphDestroy(g); }
  } guard{graph};
  auto* old = static_cast<cudaGraphExec_t>(reuse);
  if (old != nullptr) {
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(old, graph, &info) == cudaSuccess) return reuse;
    (void)cudaGetLastError();  // another topology: instantiate instead
  }
  cudaGraphExec_t exec = nullptr;
  GT_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  if (old != nullptr) (void)cudaGraphExecDestroy(old);
  return static_cast<Graph>(exec);
}

Status CudaDeviceApi::launch_graph(Graph g, Stream s) {
  GT_RETURN_IF_ERROR(use_device());
  GT_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(g), as_stream(s)));
  return Status::ok();
}

// A graph in flight is freed once it has finished (cudaGraphExecDestroy's contract).
void CudaDeviceApi::destroy_graph(Graph g) {
  if (g != nullptr && use_device().is_ok())
    (void)cuda_status(cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(g)),
                      "cudaGraphExecDestroy", __FILE__, __LINE__);
}

Status CudaDeviceApi::sticky_error() const { return cuda_sticky_error(); }

// A kernel's fault surfaces at the next call that looks at its stream: query them all (none
// blocks; "not ready" is no error).
Status CudaDeviceApi::poll_health() {
  GT_RETURN_IF_ERROR(cuda_sticky_error());
  if (!use_device().is_ok()) return cuda_sticky_error();
  std::lock_guard<std::mutex> lk(mu_);
  for (cudaStream_t s : streams_) {
    if (capturing_.count(s)) continue;
    const cudaError_t r = cudaStreamQuery(s);
    if (r == cudaErrorNotReady) clear_not_ready();
    else if (r != cudaSuccess) (void)cuda_status(r, "cudaStreamQuery", __FILE__, __LINE__);
  }
  return cuda_sticky_error();
}

}  // namespace gt::worker::cuda
