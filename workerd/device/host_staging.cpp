#include "workerd/device/host_staging.h"

#include <bit>

namespace gt::worker::device {

HostStaging::HostStaging(DeviceApi& device, size_t max_cached)
    : device_(device), max_cached_(max_cached) {}

HostStaging::~HostStaging() { trim(); }

Result<HostStaging::Buffer> HostStaging::acquire(size_t bytes) {
  const size_t size = std::bit_ceil(std::max<size_t>(bytes, 4096));
  std::vector<Buffer> doomed;
  void* cached = nullptr;
  {
    std::lock_guard<std::mutex> lk(mu_);
    doomed.swap(to_free_);
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      cached = it->second.back();
      it->second.pop_back();
      cached_ -= size;
    }
  }
  // Freed after the lock: cudaFreeHost may wait for the device, whose host callbacks take this
  // lock in release() -- each would wait for the other.
  for (Buffer& d : doomed) device_.host_free(d.data);
  if (cached) return Buffer{cached, size};
  GT_ASSIGN_OR_RETURN(void* p, device_.host_alloc(size));
  return Buffer{p, size};
}

void HostStaging::release(Buffer b) {
  if (b.data == nullptr) return;
  std::lock_guard<std::mutex> lk(mu_);
  if (cached_ + b.size > max_cached_) {
    to_free_.push_back(b);
    return;
  }
  free_[b.size].push_back(b.data);
  cached_ += b.size;
}

void HostStaging::trim() {
  std::map<size_t, std::vector<void*>> free;
  std::vector<Buffer> doomed;
  {
    std::lock_guard<std::mutex> lk(mu_);
    free.swap(free_);
    doomed.swap(to_free_);
    cached_ = 0;
  }
  for (auto& [size, list] : free)
    for (void* p : list) device_.host_free(p);
  for (Buffer& d : doomed) device_.host_free(d.data);
}

}  // namespace gt::worker::device
