// NVRTC as the fused kernels' compiler (device/fused_kernel_cache.h). libnvrtc.so.13 is loaded
// at run time, as libnccl is: only nvrtc.h is needed to build, and a worker whose machine lacks
// the library still starts (its chains run op by op). Used by the CUDA backend for its GPU and
// by the sim device, which compiles for sm_90 to prove the generated programs in CI.
#pragma once

#include <memory>

#include "libgtcore/status.h"
#include "workerd/device/fused_kernel_cache.h"

namespace gt::worker::cuda {

// A compiler for the GPU of compute capability `arch` (major * 10 + minor): machine code (CUBIN)
// where this NVRTC knows the architecture, else PTX for the newest one it knows below it (the
// driver compiles that). unavailable() when libnvrtc cannot be loaded.
Result<std::unique_ptr<device::KernelCompiler>> make_nvrtc_compiler(int arch);

}  // namespace gt::worker::cuda
