// CpuBackend: the CPU implementation of the worker Backend (ARCHITECTURE §6). OpenBLAS for GEMM, its
// own loops for everything else; float16/bfloat16 are stored as 16 bits and computed through
// float32. Memory comes from a caching, size-classed allocator with an optional hard limit.
//
// Backend::run() checks every argument before a kernel runs (backend.h). Every op in ops.def
// has a kernel (or is a host upload).
//
// The backend must outlive every Storage it handed out (~Storage calls release()). Kernels run
// on the calling thread; the expensive ones (random numbers, transcendental functions, fused
// chains, large GEMMs) split large tensors over the process's compute pool (compute_pool.h, up
// to 8 threads). OpenBLAS runs one thread per call (process-wide, openblas_set_num_threads);
// blas_threads > 0 gives it that many threads of its own instead, and GT then does not split.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "workerd/backend.h"
#include "workerd/cpu/host_memory.h"

namespace gt::worker {

namespace cpu {
class CpuAllocator;
}  // namespace cpu

struct CpuBackendOptions {
  // 0 = no limit (beyond the system's); gt-workerd's default ("auto") sets
  // auto_cpu_memory_limit() here (workerd/backend_factory.cpp).
  uint64_t max_memory_bytes = 0;
  int blas_threads = 0;                             // 0 = GT splits, OpenBLAS 1 thread
  uint64_t max_cached_bytes = uint64_t{256} << 20;  // freed blocks kept for reuse, at most
  // Large allocations are checked against the host's free memory and committed at once.
  HostMemoryGuard guard = HostMemoryGuard::system();
};

// A kernel: out is allocated (out.meta = infer_meta(...)), inputs are valid.
using CpuKernel = Status (*)(const KernelArgs&);

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(CpuBackendOptions opts = {});
  ~CpuBackend() override;
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;

  std::string device_kind() const override { return "cpu"; }
  std::string device_name() const override;
  uint64_t memory_bytes() const override;

  Result<std::shared_ptr<Storage>> alloc(size_t bytes) override;
  void release(void* data, size_t capacity) override;
  void trim_cache();  // returns every cached (free) block to the system
  BackendStats stats() const override;
  bool fuses_chains() const override { return true; }
  bool fuses_chain_casts() const override { return true; }
  bool folds_transposes() const override { return true; }

 protected:
  Status run_kernel(const KernelArgs& args) override;
  Status run_fused_kernel(const FusedArgs& args) override;
  Status run_matmul_t_kernel(const TransposedMatmul& args) override;
  // Tensors live in host memory: plain copies, done when they return.
  Status read_bytes(const DeviceBytes& bytes, void* dst, uint64_t session) override;
  // CPU tensors live in host memory: fetches are sent from it directly.
  const void* host_address(const void* block) const override { return block; }
  Status write_bytes(const DeviceBytes& bytes, const void* src, uint64_t session) override;
  Status zero_bytes(const DeviceBytes& bytes, uint64_t session) override;

 private:
  CpuBackendOptions opts_;
  std::unique_ptr<cpu::CpuAllocator> allocator_;
  std::array<CpuKernel, kNumOps> kernels_{};
};

}  // namespace gt::worker
