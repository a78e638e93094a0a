#include "workerd/cpu/cpu_backend.h"

#include <cblas.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstring>
#include <new>
#include <thread>

#include "workerd/cpu/cpu_allocator.h"
#include "workerd/cpu/kernels.h"

namespace gt::worker {

CpuBackend::CpuBackend(CpuBackendOptions opts)
    : opts_(opts),
      allocator_(std::make_unique<cpu::CpuAllocator>(opts.max_memory_bytes,
                                                     opts.max_cached_bytes, opts.guard)) {
  // By default OpenBLAS runs each call on the calling thread and the large GEMMs are split over
  // the kernels' own compute pool (matmul.cpp): OpenBLAS's threads spin ~0.1 s after every call,
  // a core taken from the dispatcher and the clients of a small box for as long as a training
  // loop runs. blas_threads > 0 hands the threading back to OpenBLAS (then GT does not split).
  openblas_set_num_threads(opts_.blas_threads > 0 ? opts_.blas_threads : 1);
  cpu::register_all(kernels_);
  set_kernels(kernels_);
}

namespace cpu {
void register_all(KernelTable& t) {
  register_creation(t);
  register_binary(t);
  register_unary(t);
  register_elementwise(t);
  register_reduce(t);
  register_matmul(t);
  register_layout(t);
  register_indexing(t);
  register_fill_clamp(t);
  register_reduce_stats(t);
  register_sort(t);
}
}  // namespace cpu

CpuBackend::~CpuBackend() = default;

std::string CpuBackend::device_name() const {
  unsigned cores = std::thread::hardware_concurrency();
  // The kernels OpenBLAS loaded for this CPU (or OPENBLAS_CORETYPE): GEMM speed depends on it.
  const char* core = openblas_get_corename();
  return fmt::format("CPU ({} cores, OpenBLAS {})", cores == 0 ? 1u : cores, core ? core : "?");
}

uint64_t CpuBackend::memory_bytes() const {
  if (opts_.max_memory_bytes != 0) return opts_.max_memory_bytes;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

Result<std::shared_ptr<Storage>> CpuBackend::alloc(size_t bytes) {
  GT_ASSIGN_OR_RETURN(cpu::CpuAllocator::Block b, allocator_->allocate(bytes));
  try {
    return std::make_shared<Storage>(b.data, bytes, b.capacity, this);
  } catch (const std::bad_alloc&) {
    allocator_->deallocate(b.data, b.capacity);
    return resource_exhausted("out of memory: no room for the storage record of {} bytes", bytes);
  }
}

void CpuBackend::release(void* data, size_t capacity) { allocator_->deallocate(data, capacity); }

void CpuBackend::trim_cache() { allocator_->trim(); }

BackendStats CpuBackend::stats() const { return allocator_->stats(); }

Status CpuBackend::run_fused_kernel(const FusedArgs& args) { return cpu::run_fused_chain(args); }

Status CpuBackend::run_matmul_t_kernel(const TransposedMatmul& args) {
  return cpu::run_transposed_matmul(args);
}

Status CpuBackend::run_kernel(const KernelArgs& args) {
  return kernels_[static_cast<size_t>(args.op)](args);
}

Status CpuBackend::read_bytes(const DeviceBytes& b, void* dst, uint64_t /*session*/) {
  std::memcpy(dst, static_cast<const unsigned char*>(b.block) + b.offset, b.n);
  return Status::ok();
}

Status CpuBackend::write_bytes(const DeviceBytes& b, const void* src, uint64_t /*session*/) {
  std::memcpy(static_cast<unsigned char*>(b.block) + b.offset, src, b.n);
  return Status::ok();
}

Status CpuBackend::zero_bytes(const DeviceBytes& b, uint64_t /*session*/) {
  std::memset(static_cast<unsigned char*>(b.block) + b.offset, 0, b.n);
  return Status::ok();
}

}  // namespace gt::worker
