// CudaBackend: the CUDA implementation of the worker Backend (ARCHITECTURE §6, issues 4 and 10).
//
//   device     chosen by index among the visible GPUs (CUDA_VISIBLE_DEVICES applies); its name,
//              memory and compute capability are what the worker registers
//   async      the device-generic StreamBackend (workerd/device/stream_backend.h) over
//              CudaDeviceApi: one non-blocking stream per session (independent clients overlap
//              on one GPU), the device-generic caching allocator, uploads and fetches staged
//              through pinned buffers, syncs and fetches completed from the completion thread,
//              sticky errors detected -- the same code the sim device runs in CI
//   sessions   each also gets a cuBLAS handle on its stream, with a workspace from the caching
//              allocator (so it shows in the memory stats), and a device/pinned slot pair for
//              index checks; an out-of-memory while creating them trims the cache and retries
//   errors     index values are checked on the device: a bad index leaves the result unspecified
//              (kernels skip it, never read out of bounds) and is reported asynchronously
//              (StreamBackend::report_kernel_failure), raised at the session's next sync point
//   ops        kernel tables per op family (ops_*.cpp host side, k_*.cu device side); an op
//              without a kernel is supports() == false
//
// Backend::run() checks every argument before anything is enqueued (backend.h). Its
// SessionStreams (backend.h) give the NCCL peer link the session streams to enqueue on.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "workerd/cuda/cuda_device_api.h"
#include "workerd/cuda/cuda_ops.h"
#include "workerd/device/stream_backend.h"

namespace gt::worker {

struct CudaBackendOptions {
  uint64_t max_memory_bytes = 0;  // 0 = whatever the GPU has
  // float32 matmul on TF32 tensor cores (PyTorch's allow_tf32; the worker option allow_tf32).
  // No instruction attribute carries it yet, so it is backend-wide; off by default (exact float32).
  bool allow_tf32 = false;
  // Hot paths' elementwise chains as kernels compiled with NVRTC (worker options fused_kernels,
  // kernel_cache_dir; workerd/cuda/fused_launch.cpp).
  bool fused_kernels = true;
  std::string kernel_cache_dir;
};

// Visible CUDA devices (0 when there is no driver or no GPU).
int cuda_device_count();
// A backend on visible device `index` (workerd/backend_factory.cpp fills the options from the
// worker's options).
Result<std::unique_ptr<Backend>> make_cuda_backend(int index, const CudaBackendOptions& opts);

class CudaBackend final : public device::StreamBackend, public SessionStreams {
 public:
  // Use create(): the constructor cannot report a failing device.
  static Result<std::unique_ptr<CudaBackend>> create(int index, CudaBackendOptions opts = {});
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string device_kind() const override { return "cuda"; }
  std::string device_name() const override { return name_; }

  SessionStreams* session_streams() override { return this; }
  int device_ordinal() const override { return device_; }
  Result<void*> native_stream(uint64_t session) override;
  Status use_on_session(const void* data, uint64_t session) override;

 protected:
  Status run_kernel(const KernelArgs& args) override;
  Status run_fused_kernel(const FusedArgs& args) override;
  Status on_session_created(uint64_t session, device::Stream s) override;
  void on_session_destroyed(uint64_t session) override;

 private:
  struct SessionLibs {
    cublasHandle_t blas = nullptr;
    void* workspace = nullptr;      // cuBLAS's, from the caching allocator
    int64_t* check_slot = nullptr;  // device: first bad index position, its value
    int64_t* check_host = nullptr;  // pinned: where the host function reads them
  };

  CudaBackend(int device, std::string name, uint64_t total_memory, CudaBackendOptions opts);
  Result<SessionLibs> make_libs(device::Stream s);
  // Fused chains (fused_launch.cpp): the cache of their kernels, compiled for this GPU, whose
  // loaded libraries live until the backend goes.
  void enable_fused(int arch);
  Result<void*> load_fused(const std::string& binary, const std::string& name);
  void free_libs(SessionLibs& l);

  int device_;
  CudaBackendOptions opts_;
  std::string name_;
  cuda::CudaDeviceApi* api_;  // owned by the StreamBackend
  cuda::KernelTable kernels_{};
  std::mutex libs_mu_;
  std::unordered_map<uint64_t, SessionLibs> libs_;
  // Libraries of ended sessions, for the next sessions: cublasDestroy synchronizes the whole
  // device, which the completion thread (where a session ends) must never wait for -- every
  // session's replies go through it. At most kSpareLibs are kept; the rest go as before.
  static constexpr size_t kSpareLibs = 8;
  std::vector<SessionLibs> spare_libs_;
  int sm_count_ = 1;
  std::mutex fused_libs_mu_;
  std::vector<cudaLibrary_t> fused_libs_;
};

}  // namespace gt::worker
