#include "workerd/device/stream_backend.h"

#include <spdlog/spdlog.h>

#include <cstring>
#include <new>
#include <vector>

namespace gt::worker::device {

StreamBackend::StreamBackend(std::unique_ptr<DeviceApi> device, uint64_t max_memory_bytes)
    : device_(std::move(device)),
      memory_(max_memory_bytes != 0 ? max_memory_bytes : device_->total_memory()),
      allocator_(*device_, max_memory_bytes) {}

StreamBackend::~StreamBackend() { shutdown(); }

void StreamBackend::shutdown() {
  std::unordered_map<uint64_t, Session> sessions;
  {
    std::lock_guard<std::mutex> lk(mu_);
    sessions.swap(sessions_);
  }
  for (auto& [id, s] : sessions) {
    (void)device_->synchronize_stream(s.stream);
    destroy_stream(id, s.stream);
  }
  completions_.drain();  // deferred stream destructions and callbacks already pushed
}

Result<Stream> StreamBackend::stream_for(uint64_t session) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = sessions_.find(session);
  if (it != sessions_.end()) return it->second.stream;
  GT_ASSIGN_OR_RETURN(Stream s, device_->create_stream());
  if (Status st = on_session_created(session, s); !st.is_ok()) {
    device_->destroy_stream(s);
    return st;
  }
  sessions_.emplace(session, Session{s});
  return s;
}

void StreamBackend::destroy_stream(uint64_t session, Stream s) {
  on_session_destroyed(session);
  allocator_.forget_stream(s);
  device_->destroy_stream(s);
}

void StreamBackend::end_session(uint64_t session) {
  Stream s;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return;
    s = it->second.stream;
    sessions_.erase(it);
  }
  // The stream goes once its queued work is done, on the completion thread: the caller (the I/O
  // thread, for a batch that only ends a session) never waits for the device.
  Status st = device_->launch_host_func(s, [this, session, s] {
    completions_.push([this, session, s] { destroy_stream(session, s); });
  });
  if (!st.is_ok()) {  // a lost device: nothing will run on the stream any more
    (void)device_->synchronize_stream(s);
    destroy_stream(session, s);
  }
}

Result<std::shared_ptr<Storage>> StreamBackend::alloc(size_t bytes) {
  if (bytes == 0) return std::make_shared<Storage>(nullptr, 0, 0, this);
  GT_ASSIGN_OR_RETURN(CachingAllocator::Block b, allocator_.allocate(bytes, nullptr));
  try {
    return std::make_shared<Storage>(b.data, bytes, b.size, this,
                                     std::make_shared<DeviceErrorSlot>());
  } catch (const std::bad_alloc&) {
    allocator_.deallocate(b.data);
    return resource_exhausted("out of memory: no room for the storage record of {} bytes", bytes);
  }
}

void StreamBackend::release(void* data, size_t /*capacity*/) { allocator_.deallocate(data); }

void StreamBackend::report_kernel_failure(uint64_t session, uint64_t handle, OpId op,
                                          Storage* out, Status st) {
  if (out && out->error_slot()) out->error_slot()->set(DeviceErrorSlot::Error{op_name(op), st});
  completions_.push([this, session, handle, op, st = std::move(st)] {
    std::lock_guard<std::mutex> lk(sink_mu_);
    if (sink_) sink_(session, handle, op_name(op), st);
  });
}

void StreamBackend::set_async_error_sink(AsyncErrorSink sink) {
  std::lock_guard<std::mutex> lk(sink_mu_);
  sink_ = std::move(sink);
}

Status StreamBackend::synchronize(uint64_t session) {
  Stream s;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return device_->sticky_error();  // nothing queued
    s = it->second.stream;
  }
  return device_->synchronize_stream(s);
}

void StreamBackend::when_done(uint64_t session, std::function<void(Status)> done) {
  Stream s;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) {
      // Nothing was ever queued for it: done now (on the completion thread, like every other
      // completion, so replies keep their order).
      completions_.push([this, done = std::move(done)] { done(device_->sticky_error()); });
      return;
    }
    s = it->second.stream;
  }
  auto shared = std::make_shared<std::function<void(Status)>>(std::move(done));
  Status st = device_->launch_host_func(s, [this, shared] {
    completions_.push([this, shared] { (*shared)(device_->sticky_error()); });
  });
  if (!st.is_ok()) completions_.push([shared, st] { (*shared)(st); });
}

Status StreamBackend::read_bytes(const DeviceBytes& b, void* dst, uint64_t session) {
  GT_RETURN_IF_ERROR(start_read_bytes(b, dst, session));
  GT_ASSIGN_OR_RETURN(Stream s, stream_for(session));
  return device_->synchronize_stream(s);
}

Status StreamBackend::start_read_bytes(const DeviceBytes& b, void* dst, uint64_t session) {
  GT_ASSIGN_OR_RETURN(Stream s, stream_for(session));
  GT_RETURN_IF_ERROR(use_on(b.block, s));
  return device_->copy_to_host(dst, static_cast<const unsigned char*>(b.block) + b.offset, b.n, s);
}

Status StreamBackend::write_bytes(const DeviceBytes& b, const void* src, uint64_t session) {
  GT_ASSIGN_OR_RETURN(Stream s, stream_for(session));
  GT_RETURN_IF_ERROR(use_on(b.block, s));
  // The caller may reuse `src` once this returns, but the copy runs when the stream reaches
  // it: stage the bytes in a buffer that lives until then (freed by a host function after it).
  std::shared_ptr<unsigned char[]> staged;
  try {
    staged.reset(new unsigned char[b.n]);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("upload: no host memory to stage {} bytes", b.n);
  }
  std::memcpy(staged.get(), src, b.n);
  GT_RETURN_IF_ERROR(device_->copy_to_device(static_cast<unsigned char*>(b.block) + b.offset,
                                             staged.get(), b.n, s));
  return device_->launch_host_func(s, [staged] {});
}

Status StreamBackend::zero_bytes(const DeviceBytes& b, uint64_t session) {
  GT_ASSIGN_OR_RETURN(Stream s, stream_for(session));
  GT_RETURN_IF_ERROR(use_on(b.block, s));
  return device_->fill_zero(static_cast<unsigned char*>(b.block) + b.offset, b.n, s);
}

BackendStats StreamBackend::stats() const {
  AllocatorStats a = allocator_.stats();
  return BackendStats{a.allocated_bytes, a.reserved_bytes + a.workspace_bytes, a.peak_bytes};
}

}  // namespace gt::worker::device
