// HostStaging: a pool of the device's host staging buffers (DeviceApi::host_alloc: pinned memory on
// CUDA, where allocating it costs milliseconds and a pageable buffer would make an async copy wait
// for its stream). The stream backend stages every upload and fetch through one: the caller's
// bytes are copied in (or out) on the host, the device copies from (or to) the buffer when the
// stream reaches it, and a host function gives the buffer back -- so an upload's caller may reuse
// its bytes at once and a fetch never blocks the thread that enqueues it.
//
// Buffers come in power-of-two sizes (at least 4 KiB); at most `max_cached` bytes of free ones
// are kept. Thread-safe; release() makes no device call (it runs in host functions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "libgtcore/status.h"
#include "workerd/device/device_api.h"

namespace gt::worker::device {

class HostStaging {
 public:
  struct Buffer {
    void* data = nullptr;
    size_t size = 0;
  };
  HostStaging(DeviceApi& device, size_t max_cached);
  ~HostStaging();  // frees the cached buffers (every buffer must have been released)
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  Result<Buffer> acquire(size_t bytes);
  // Back to the pool; beyond max_cached it is parked and freed by the next acquire() or trim()
  // (freeing pinned memory is a device call, not allowed in a host function).
  void release(Buffer b);
  void trim();

 private:
  DeviceApi& device_;
  size_t max_cached_;
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;  // by size
  size_t cached_ = 0;
  std::vector<Buffer> to_free_;
};

}  // namespace gt::worker::device
