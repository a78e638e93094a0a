#include "workerd/cpu/cpu_backend.h"

#include <cblas.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "libgtcore/shape_rules.h"
#include "workerd/cpu/cpu_allocator.h"
#include "workerd/cpu/kernels.h"
#include "workerd/kernel_args_check.h"

namespace gt::worker {

CpuBackend::CpuBackend(CpuBackendOptions opts)
    : opts_(opts),
      allocator_(std::make_unique<cpu::CpuAllocator>(opts.max_memory_bytes,
                                                     opts.max_cached_bytes, opts.guard)) {
  if (opts_.blas_threads > 0) openblas_set_num_threads(opts_.blas_threads);
  cpu::register_creation(kernels_);
  cpu::register_binary(kernels_);
  cpu::register_unary(kernels_);
  cpu::register_elementwise(kernels_);
  cpu::register_reduce(kernels_);
  cpu::register_matmul(kernels_);
  cpu::register_layout(kernels_);
  cpu::register_indexing(kernels_);
  cpu::register_fill_clamp(kernels_);
  cpu::register_reduce_stats(kernels_);
}

CpuBackend::~CpuBackend() = default;

std::string CpuBackend::device_name() const {
  unsigned cores = std::thread::hardware_concurrency();
  return fmt::format("CPU ({} cores, OpenBLAS)", cores == 0 ? 1u : cores);
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

bool CpuBackend::supports(OpId op) const {
  auto i = static_cast<size_t>(op);
  return i < kernels_.size() && kernels_[i] != nullptr;
}

Status CpuBackend::check_args(const KernelArgs& args) const { return check_kernel_args(args); }

Status CpuBackend::run(const KernelArgs& args) {
  auto i = static_cast<size_t>(args.op);
  if (i >= kernels_.size()) return invalid_argument("unknown op id {}", i);
  if (kernels_[i] == nullptr) return unimplemented("{}: no CPU kernel", op_name(args.op));
  try {
    GT_RETURN_IF_ERROR(check_args(args));
    return kernels_[i](args);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("{}: out of memory for temporaries", op_name(args.op));
  } catch (const std::exception& e) {
    return internal_error("{}: {}", op_name(args.op), e.what());
  } catch (...) {
    return internal_error("{}: unknown exception", op_name(args.op));
  }
}

Status CpuBackend::copy_to_host(const Tensor& t, size_t offset, void* dst, size_t n,
                                uint64_t /*session*/) {
  if (t.poison) return failed_precondition("copy_to_host: tensor is poisoned");
  if (!t.storage) return invalid_argument("copy_to_host: tensor has no storage");
  uint64_t nbytes = static_cast<uint64_t>(std::max<int64_t>(t.meta.nbytes(), 0));
  nbytes = std::min<uint64_t>(nbytes, t.storage->bytes());
  if (offset > nbytes || n > nbytes - offset)
    return out_of_range("copy_to_host: {} bytes at offset {} overrun a tensor of {} bytes", n,
                        offset, nbytes);
  if (n == 0) return Status::ok();
  if (dst == nullptr) return invalid_argument("copy_to_host: null destination");
  std::memcpy(dst, static_cast<const unsigned char*>(t.storage->data()) + offset, n);
  return Status::ok();
}

}  // namespace gt::worker
