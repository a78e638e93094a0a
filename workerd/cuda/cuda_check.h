// GT_CUDA_CHECK / GT_CUBLAS_CHECK: turn a failing CUDA runtime or cuBLAS call into a Status
// carrying file:line (ARCHITECTURE §11) and return it from the enclosing function. Out of memory
// becomes ResourceExhausted (an error on that instruction, never a crash).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <atomic>

#include "libgtcore/status.h"

namespace gt::worker::cuda {

// Errors after which the CUDA context is unusable: every later call fails with them. The first
// one seen, by any call, is remembered (one GPU per worker process) and the worker must go
// (CudaDeviceApi::sticky_error, Backend::device_lost).
inline bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
    // (driver_types.h: "the process must be terminated and relaunched")
    case cudaErrorContained:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorMpsClientTerminated:
    case cudaErrorExternalDevice:
      return true;
    default:
      return false;
  }
}

struct StickyCudaError {
  std::atomic<int> code{0};  // cudaSuccess until the first sticky error
};
inline StickyCudaError& sticky_cuda_error() {
  static StickyCudaError s;
  return s;
}

inline Status cuda_sticky_error() {
  const int code = sticky_cuda_error().code.load(std::memory_order_acquire);
  if (code == 0) return Status::ok();
  const auto e = static_cast<cudaError_t>(code);
  return internal_error("the CUDA context is lost: {} ({})", cudaGetErrorName(e),
                        cudaGetErrorString(e));
}

inline Status cuda_status(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return Status::ok();
  // A failed runtime call also leaves its error as the thread's last error until something
  // reads it: every launcher returns cudaGetLastError(), so the next kernel launched on this
  // thread would report this error as its own (an invalidated capture, a failed instantiate or
  // wait, then the eager re-run's first op failing). Reported here, so cleared here; a sticky
  // error stays (the context is lost) and is latched below.
  if (!is_sticky(e)) (void)cudaGetLastError();
  if (e == cudaErrorMemoryAllocation)
    return resource_exhausted("CUDA out of memory in {} ({}:{})", what, file, line);
  if (is_sticky(e)) {
    int none = 0;
    sticky_cuda_error().code.compare_exchange_strong(none, static_cast<int>(e));
  }
  return internal_error("CUDA error {} ({}) in {} ({}:{})", cudaGetErrorName(e),
                        cudaGetErrorString(e), what, file, line);
}

inline Status cublas_status(cublasStatus_t e, const char* what, const char* file, int line) {
  if (e == CUBLAS_STATUS_SUCCESS) return Status::ok();
  if (e == CUBLAS_STATUS_ALLOC_FAILED)
    return resource_exhausted("cuBLAS out of memory in {} ({}:{})", what, file, line);
  return internal_error("cuBLAS error {} ({}) in {} ({}:{})", cublasGetStatusName(e),
                        cublasGetStatusString(e), what, file, line);
}

}  // namespace gt::worker::cuda

#define GT_CUDA_CHECK(expr)                                                                  \
  do {                                                                                       \
    ::gt::Status gt_cuda_st_ = ::gt::worker::cuda::cuda_status((expr), #expr, __FILE__, __LINE__); \
    if (!gt_cuda_st_.is_ok()) return gt_cuda_st_;                                           \
  } while (0)

#define GT_CUBLAS_CHECK(expr)                                                                  \
  do {                                                                                         \
    ::gt::Status gt_cublas_st_ =                                                               \
        ::gt::worker::cuda::cublas_status((expr), #expr, __FILE__, __LINE__);                  \
    if (!gt_cublas_st_.is_ok()) return gt_cublas_st_;                                         \
  } while (0)
