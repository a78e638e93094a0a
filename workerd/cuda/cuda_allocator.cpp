#include "workerd/cuda/cuda_allocator.h"

#include <utility>

#include "workerd/cuda/cuda_check.h"

namespace gt::worker::cuda {

CudaAllocator::CudaAllocator(uint64_t max_live_bytes) : max_live_(max_live_bytes) {}

CudaAllocator::~CudaAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  trim_locked();
  // Live blocks here mean a Storage outlived its backend (a bug elsewhere): free them anyway,
  // the device memory would otherwise be lost until the process exits.
  for (auto& [p, info] : live_) {
    if (info.event) cudaEventDestroy(info.event);
    cudaFree(p);
  }
}

size_t CudaAllocator::size_class(size_t bytes) {
  constexpr size_t kMin = 512, kSmall = size_t{1} << 20;
  if (bytes <= kMin) return kMin;
  if (bytes <= kSmall) {
    size_t c = kMin;
    while (c < bytes) c <<= 1;
    return c;
  }
  // Quarter steps between powers of two: p, 1.25p, 1.5p, 1.75p, 2p.
  size_t p = kSmall;
  while (p * 2 < bytes) p <<= 1;
  const size_t q = p / 4;
  return (bytes + q - 1) / q * q;
}

Result<CudaAllocator::Block> CudaAllocator::allocate(size_t bytes) {
  const size_t cap = size_class(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  if (max_live_ != 0 && allocated_ + cap > max_live_)
    return resource_exhausted("out of memory: {} bytes requested, {} of {} in use", bytes,
                              allocated_, max_live_);
  auto it = free_.find(cap);
  if (it != free_.end() && !it->second.empty()) {
    auto [p, info] = it->second.back();
    it->second.pop_back();
    cached_ -= cap;
    live_.emplace(p, info);
    allocated_ += cap;
    if (allocated_ > peak_) peak_ = allocated_;
    return Block{p, cap};
  }
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, cap);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // clear, then give the cache back to the driver and try once more
    trim_locked();
    e = cudaMalloc(&p, cap);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (e == cudaErrorMemoryAllocation)
      return resource_exhausted("CUDA out of memory: {} bytes requested ({} in live tensors)",
                                bytes, allocated_);
    return internal_error("cudaMalloc({}): {}", cap, cudaGetErrorString(e));
  }
  Info info;
  info.capacity = cap;
  live_.emplace(p, info);
  allocated_ += cap;
  if (allocated_ > peak_) peak_ = allocated_;
  return Block{p, cap};
}

void CudaAllocator::deallocate(void* data) {
  if (data == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(data);
  if (it == live_.end()) return;  // not ours: ignore rather than corrupt the cache
  Info info = it->second;
  live_.erase(it);
  allocated_ -= info.capacity;
  if (info.stream != nullptr) {
    // Failing to create/record leaves the block unusable across streams: free it instead.
    if ((info.event == nullptr &&
         cudaEventCreateWithFlags(&info.event, cudaEventDisableTiming) != cudaSuccess) ||
        cudaEventRecord(info.event, info.stream) != cudaSuccess) {
      cudaGetLastError();
      cudaStreamSynchronize(info.stream);
      if (info.event) cudaEventDestroy(info.event);
      cudaFree(data);
      return;
    }
    info.pending = true;
  }
  cached_ += info.capacity;
  free_[info.capacity].emplace_back(data, info);
}

Status CudaAllocator::use_on(const void* data, cudaStream_t s) {
  if (data == nullptr) return Status::ok();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(const_cast<void*>(data));
  if (it == live_.end()) return Status::ok();
  Info& info = it->second;
  if (info.pending && info.stream != s) GT_CUDA_CHECK(cudaStreamWaitEvent(s, info.event, 0));
  info.pending = false;
  info.stream = s;
  return Status::ok();
}

void CudaAllocator::forget_stream(cudaStream_t s) {
  std::lock_guard<std::mutex> lock(mu_);
  auto forget = [&](Info& info) {
    if (info.stream != s) return;
    info.stream = nullptr;
    info.pending = false;  // the stream was synchronized: its work is done
  };
  for (auto& [p, info] : live_) forget(info);
  for (auto& [cap, list] : free_)
    for (auto& [p, info] : list) forget(info);
}

void CudaAllocator::trim() {
  std::lock_guard<std::mutex> lock(mu_);
  trim_locked();
}

void CudaAllocator::trim_locked() {
  for (auto& [cap, list] : free_) {
    for (auto& [p, info] : list) {
      if (info.event) {
        if (info.pending) cudaEventSynchronize(info.event);
        cudaEventDestroy(info.event);
      }
      cudaFree(p);
    }
  }
  free_.clear();
  cached_ = 0;
  cudaGetLastError();
}

BackendStats CudaAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return BackendStats{allocated_, allocated_ + cached_, peak_};
}

}  // namespace gt::worker::cuda
