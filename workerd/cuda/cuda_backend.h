// CudaBackend: the CUDA implementation of the worker Backend (DESIGN §6, issue 4).
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
// run() never trusts its arguments: like the CPU backend it checks every storage against its
// meta and out.meta against infer_meta() before anything is enqueued. All entry points may be
// called from any thread (the current device is set per call), but like the CPU backend it
// expects one executor thread to issue the ops.
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

class CudaBackend final : public Backend {
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

  bool supports(OpId op) const override;
  Status run(const KernelArgs& args) override;

  Status copy_to_host(const Tensor& t, size_t offset, void* dst, size_t n,
                      uint64_t session) override;
  Status synchronize(uint64_t session) override;
  void end_session(uint64_t session) override;

  BackendStats stats() const override;

  // For tests and benchmarks: the session's stream (created if needed) and cached-block trim.
  Result<cudaStream_t> stream_of(uint64_t session);
  void trim_cache();
  int device() const { return device_; }
  // For a peer link that enqueues its own work (NCCL) on the session's stream: orders the
  // block's use there after its previous stream's work, like run() does for its operands.
  Status use_on_session(const void* data, uint64_t session);

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
  Status check_args(const KernelArgs& args) const;
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
