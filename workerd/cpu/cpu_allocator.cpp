#include "workerd/cpu/cpu_allocator.h"

#include <bit>
#include <cstdlib>
#include <utility>

namespace gt::worker::cpu {

CpuAllocator::CpuAllocator(uint64_t max_memory_bytes, uint64_t max_cached_bytes,
                           HostMemoryGuard guard)
    : max_memory_(max_memory_bytes), guard_(std::move(guard)), max_cached_(max_cached_bytes) {}

CpuAllocator::~CpuAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  free_all_cached_locked();
}

size_t CpuAllocator::size_class(size_t bytes) {
  if (bytes <= kMinBlock) return kMinBlock;
  if (bytes > kMaxRequest) return 0;
  if (bytes <= kLargeThreshold) return std::bit_ceil(bytes);
  size_t step = std::bit_floor(bytes) / 4;  // >= 256 KiB, a multiple of 64
  return (bytes + step - 1) / step * step;
}

Result<CpuAllocator::Block> CpuAllocator::allocate(size_t bytes) {
  size_t cap = size_class(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    decay_locked(std::chrono::steady_clock::now());
    if (cap == 0 || (max_memory_ != 0 && cap > max_memory_) ||
        (max_memory_ != 0 && live_ + cap > max_memory_)) {
      return resource_exhausted(
          "out of memory: cannot allocate {} bytes ({} with rounding); {} bytes in use, limit {}",
          bytes, cap, live_, max_memory_ == 0 ? std::string("none") : std::to_string(max_memory_));
    }
    auto it = free_.find(cap);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_ -= cap;
      live_ += cap;
      if (live_ > peak_) peak_ = live_;
      return Block{p, cap};
    }
    if (max_memory_ != 0 && live_ + cached_ + cap > max_memory_) trim_locked(cap);
    live_ += cap;  // reserved while the system allocates: the limit holds for concurrent calls
  }
  Result<void*> p = system_allocate(bytes, cap);
  std::lock_guard<std::mutex> lock(mu_);
  if (!p.is_ok()) {
    live_ -= cap;
    return p.status();
  }
  if (live_ > peak_) peak_ = live_;
  return Block{*p, cap};
}

Result<void*> CpuAllocator::system_allocate(size_t bytes, size_t cap) {
  const bool guarded = guard_.available && cap >= guard_.large;
  if (guarded) {
    // The touch test, part 1: the host must have room for the block and the headroom now
    // (cached blocks are given back first when that makes the difference).
    std::optional<uint64_t> avail = guard_.available();
    if (avail && *avail < cap + guard_.headroom) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        free_all_cached_locked();
      }
      avail = guard_.available();
    }
    if (avail && *avail < cap + guard_.headroom) {
      std::lock_guard<std::mutex> lock(mu_);
      return resource_exhausted(
          "out of memory: cannot allocate {} bytes ({} with rounding): the host has {} bytes "
          "available and this worker leaves {} of them to the rest of the system; {} bytes in "
          "use here",
          bytes, cap, *avail, guard_.headroom, live_ - cap);
    }
  }
  void* p = std::aligned_alloc(kAlignment, cap);
  if (p == nullptr) {  // the system is short: give back the cache, retry once
    bool retry = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      retry = cached_ > 0;
      free_all_cached_locked();
    }
    if (retry) p = std::aligned_alloc(kAlignment, cap);
  }
  if (p == nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    return resource_exhausted(
        "out of memory: the system refused {} bytes ({} with rounding); {} bytes in use", bytes,
        cap, live_ - cap);
  }
  // Part 2: commit the pages now, so the memory is really there (not merely promised).
  if (guarded && !commit_pages(p, cap)) {
    std::free(p);
    std::lock_guard<std::mutex> lock(mu_);
    return resource_exhausted(
        "out of memory: the system could not commit {} bytes ({} with rounding); {} bytes in use",
        bytes, cap, live_ - cap);
  }
  return p;
}

void CpuAllocator::deallocate(void* data, size_t capacity) {
  if (data == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  live_ = live_ >= capacity ? live_ - capacity : 0;
  const auto now = std::chrono::steady_clock::now();
  decay_locked(now);
  bool keep = cached_ + capacity <= 2 * max_cached_ &&
              (max_memory_ == 0 || live_ + cached_ + capacity <= max_memory_);
  if (keep) {
    try {
      free_[capacity].push_back(data);
      cached_ += capacity;
      if (cached_ > max_cached_ && over_since_ == std::chrono::steady_clock::time_point{})
        over_since_ = now;
      return;
    } catch (...) {
      // No room for the bookkeeping: fall through and free it.
    }
  }
  std::free(data);
}

void CpuAllocator::decay(std::chrono::steady_clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  decay_locked(now);
}

void CpuAllocator::decay_locked(std::chrono::steady_clock::time_point now) {
  if (cached_ <= max_cached_) {
    over_since_ = {};
    return;
  }
  if (over_since_ == std::chrono::steady_clock::time_point{} || now - over_since_ < kOvershoot)
    return;
  release_cached_locked(max_cached_);
  over_since_ = {};
}

void CpuAllocator::trim() {
  std::lock_guard<std::mutex> lock(mu_);
  free_all_cached_locked();
}

void CpuAllocator::trim_locked(uint64_t need) {
  release_cached_locked(max_memory_ > live_ + need ? max_memory_ - live_ - need : 0);
}

void CpuAllocator::release_cached_locked(uint64_t keep) {
  for (auto& [cap, blocks] : free_) {
    while (!blocks.empty() && cached_ > keep) {
      std::free(blocks.back());
      blocks.pop_back();
      cached_ -= cap;
    }
    if (cached_ <= keep) return;
  }
}

void CpuAllocator::free_all_cached_locked() {
  for (auto& [cap, blocks] : free_) {
    for (void* p : blocks) std::free(p);
    cached_ -= cap * blocks.size();
    blocks.clear();
  }
  free_.clear();
}

BackendStats CpuAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return BackendStats{live_, live_ + cached_, peak_};
}

size_t CpuAllocator::cached_blocks() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [cap, blocks] : free_) n += blocks.size();
  return n;
}

}  // namespace gt::worker::cpu
