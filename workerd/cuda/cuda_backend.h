// CudaBackend: the CUDA implementation of the worker Backend (ARCHITECTURE §6, issue 4).
//
//   device     chosen by index among the visible GPUs (CUDA_VISIBLE_DEVICES applies); its name,
//              memory and compute capability are what the worker registers
//   streams    one non-blocking CUDA stream (and cuBLAS handle) per session, created on first
//              use and destroyed by end_session(), so independent clients overlap on one GPU;
//              synchronize(session) waits for that stream only
//   memory     a caching allocator (cuda_allocator.h); out of memory is a ResourceExhausted
//              status on that instruction, the worker carries on
//   ops        kernel tables per op family (ops_*.cpp host side, k_*.cu device side); an op
//              without a kernel is supports() == false
//
// Backend::run() checks every argument before anything is enqueued (backend.h). All entry
// points may be called from any thread (the current device is set per call), but like the CPU
// backend it expects one executor thread to issue the ops. Its SessionStreams (backend.h) give
// the NCCL peer link the session streams to enqueue on.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "workerd/backend.h"
#include "workerd/cuda/cuda_ops.h"

namespace gt::worker {

struct CudaBackendOptions {
  uint64_t max_memory_bytes = 0;  // 0 = whatever the GPU has
  // float32 matmul on TF32 tensor cores (PyTorch's allow_tf32; the worker option allow_tf32).
  // No instruction attribute carries it yet, so it is backend-wide; off by default (exact float32).
  bool allow_tf32 = false;
};

// Visible CUDA devices (0 when there is no driver or no GPU).
int cuda_device_count();
// A backend on visible device `index` (workerd/backend_factory.cpp fills the options from the
// worker's options).
Result<std::unique_ptr<Backend>> make_cuda_backend(int index, const CudaBackendOptions& opts);

class CudaBackend final : public Backend, public SessionStreams {
 public:
  // Use create(): the constructor cannot report a failing device.
  static Result<std::unique_ptr<CudaBackend>> create(int index, CudaBackendOptions opts = {});
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string device_kind() const override { return "cuda"; }
  std::string device_name() const override { return name_; }
  uint64_t memory_bytes() const override { return memory_; }

  Result<std::shared_ptr<Storage>> alloc(size_t bytes) override;
  void release(void* data, size_t capacity) override;

  Status synchronize(uint64_t session) override;
  void end_session(uint64_t session) override;

  BackendStats stats() const override;

  SessionStreams* session_streams() override { return this; }
  int device_ordinal() const override { return device_; }
  Result<void*> native_stream(uint64_t session) override;
  Status use_on_session(const void* data, uint64_t session) override;

  // For tests and benchmarks: the session's stream (created if needed) and cached-block trim.
  Result<cudaStream_t> stream_of(uint64_t session);
  void trim_cache();

 protected:
  Status run_kernel(const KernelArgs& args) override;
  // On the session's stream (after its queued ops); a read waits for its copy.
  Status read_bytes(const DeviceBytes& bytes, void* dst, uint64_t session) override;
  Status write_bytes(const DeviceBytes& bytes, const void* src, uint64_t session) override;
  Status zero_bytes(const DeviceBytes& bytes, uint64_t session) override;

 private:
  struct Session {
    cudaStream_t stream = nullptr;
    cublasHandle_t blas = nullptr;
    int64_t* check_slot = nullptr;  // device scratch for index checks
  };

  CudaBackend(int device, CudaBackendOptions opts);
  Status init();
  Status use_device() const;
  Result<Session*> session(uint64_t id);
  // The session's stream, current device set and `data`'s block ordered onto it.
  Result<cudaStream_t> stream_for(const void* data, uint64_t id);
  void destroy(Session& s);

  int device_;
  CudaBackendOptions opts_;
  std::string name_;
  uint64_t memory_ = 0;
  std::unique_ptr<cuda::CudaAllocator> allocator_;
  cuda::KernelTable kernels_{};
  std::mutex sessions_mu_;
  std::unordered_map<uint64_t, Session> sessions_;
};

}  // namespace gt::worker
