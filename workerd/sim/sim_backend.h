// SimBackend: the worker Backend of `--device sim` (ARCHITECTURE §6). The device-generic
// StreamBackend (sessions on streams, the caching allocator, staged uploads, asynchronous
// completion and errors) over the SimDevice, with the CPU backend's kernels as the device's
// kernels: run() returns once an op is enqueued on its session's stream, and the sim device's
// thread for that stream runs the CPU kernel later. What the executor, the allocator and the
// peer links see is what they see on CUDA; only the arithmetic is the CPU's.
//
// A kernel that fails (an index out of range: the values are data, checked when the kernel
// runs, as on a GPU) leaves its result unspecified and reports the error asynchronously: the
// session's next sync point raises it.
//
// Fused chains (StreamBackend's fused kernels) are generated and compiled as on CUDA, then run
// as the CPU's fused chain: the executor's fused path, the compile cache and its fallbacks are
// proven here, and the programs themselves by NVRTC where the build has it.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "workerd/cpu/cpu_backend.h"
#include "workerd/device/stream_backend.h"
#include "workerd/sim/sim_device.h"

namespace gt::worker {

struct SimBackendOptions {
  sim::SimDeviceOptions device;
  uint64_t max_memory_bytes = 0;  // 0: the sim device's memory
  // The device is lost (a sticky error, as after an illegal address on a GPU) when this many
  // kernels have run; 0 never. For tests of the worker's fatal-error path.
  uint64_t fault_after_kernels = 0;
  // Hot paths' elementwise chains as generated kernels (the worker option fused_kernels): the
  // program of each chain is generated and compiled as for a GPU, by make_compiler (NVRTC for
  // sm_90 where this build has CUDA and the library loads; null or failing: a compiler that
  // keeps the program itself as its binary), and cached as on CUDA (kernel_cache: the worker
  // option kernel_cache_dir); a launch runs the CPU's fused chain on the stream.
  bool fused_kernels = true;
  device::FusedKernelCache::Options kernel_cache;
  std::function<Result<std::unique_ptr<device::KernelCompiler>>()> make_compiler;
};

class SimBackend final : public device::StreamBackend {
 public:
  explicit SimBackend(SimBackendOptions opts = {});
  ~SimBackend() override;

  std::string device_kind() const override { return "sim"; }
  std::string device_name() const override;
  sim::SimDevice& sim() { return *sim_; }
  // (Tests: what a backend's end leaves on its device, looked at before the device goes.)
  using StreamBackend::shutdown;

 protected:
  Status run_kernel(const KernelArgs& args) override;
  Status run_fused_kernel(const FusedArgs& args) override;

 private:
  SimBackend(SimBackendOptions opts, std::unique_ptr<sim::SimDevice> device);
  SimBackendOptions opts_;
  sim::SimDevice* sim_;  // owned by the StreamBackend
  std::array<CpuKernel, kNumOps> kernels_{};
  std::atomic<uint64_t> kernels_run_{0};
};

}  // namespace gt::worker
