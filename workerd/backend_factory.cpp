#include "workerd/backend_factory.h"

#include <charconv>
#include <cstdlib>
#include <optional>

#include "workerd/cpu/cpu_backend.h"
#include "workerd/cpu/host_memory.h"
#include "workerd/sim/sim_backend.h"
#ifdef GT_HAVE_CUDA
#include "workerd/cuda/cuda_backend.h"
#include "workerd/cuda/nvrtc_compiler.h"
#endif

namespace gt::worker {

Result<std::unique_ptr<Backend>> make_backend(const WorkerOptions& opts) {
  const std::string& device = opts.device;
  // "auto" (nullopt): a CPU worker takes the host's memory less headroom, a CUDA worker the
  // device's memory (0 in CudaBackendOptions).
  GT_ASSIGN_OR_RETURN(std::optional<uint64_t> limit, parse_max_memory_bytes(opts.max_memory_bytes));
  auto make_cpu = [&]() -> std::unique_ptr<Backend> {
    CpuBackendOptions o;
    o.max_memory_bytes = limit ? *limit : auto_cpu_memory_limit();
    o.blas_threads = opts.blas_threads;
    return std::make_unique<CpuBackend>(o);
  };
#ifdef GT_HAVE_CUDA
  CudaBackendOptions cuda;
  cuda.max_memory_bytes = limit.value_or(0);
  cuda.allow_tf32 = opts.allow_tf32;
  cuda.fused_kernels = opts.fused_kernels;
  cuda.kernel_cache_dir = opts.kernel_cache_dir;
#endif
  if (device == "cpu") return make_cpu();
  if (device == "sim") {
    SimBackendOptions so;
    so.device.memory_bytes = opts.sim_memory_bytes;
    so.device.launch_us = opts.sim_launch_us;
    so.device.kernel_us = opts.sim_kernel_us;
    so.device.gbps = opts.sim_gbps;
    so.max_memory_bytes = limit.value_or(0);
    so.fault_after_kernels = opts.sim_fault_after;
    so.device.fail_capture_every = opts.sim_graph_fault_every;
    so.device.launch_cpu_us = opts.sim_launch_cpu_us;
    so.device.capture_cpu_us = opts.sim_capture_cpu_us;
    so.fused_kernels = opts.fused_kernels;
    so.kernel_cache.dir = opts.kernel_cache_dir;
#ifdef GT_HAVE_CUDA
    // The programs a GPU would run, compiled for the H100/H200 generation (sm_90).
    so.make_compiler = [] { return cuda::make_nvrtc_compiler(90); };
#endif
    return std::unique_ptr<Backend>(std::make_unique<SimBackend>(so));
  }
  int index = -1;
  std::string dev = device;
  if (device.rfind("auto:", 0) == 0) {  // "auto:i": GPU i when present, else the CPU
    dev = device.substr(5);
#ifdef GT_HAVE_CUDA
    int i = std::atoi(dev.c_str());
    if (i >= 0 && i < cuda_device_count()) return make_cuda_backend(i, cuda);
#endif
    return make_cpu();
  }
  if (device != "auto") {
    auto [p, ec] = std::from_chars(device.data(), device.data() + device.size(), index);
    if (ec != std::errc() || p != device.data() + device.size() || index < 0)
      return invalid_argument("device: expected 'cpu', 'sim', 'auto' or a GPU index, got '{}'",
                              device);
  }
#ifdef GT_HAVE_CUDA
  if (device == "auto") {
    if (cuda_device_count() > 0) index = 0;
    else return make_cpu();
  }
  return make_cuda_backend(index, cuda);
#else
  if (device == "auto") return make_cpu();
  return unavailable("device {}: this gt-workerd was built without CUDA", device);
#endif
}

}  // namespace gt::worker
