#include "workerd/device/stream_backend.h"

#include <spdlog/spdlog.h>

#include <cstring>
#include <new>
#include <vector>

namespace gt::worker::device {

StreamBackend::StreamBackend(std::unique_ptr<DeviceApi> device, uint64_t max_memory_bytes)
    : device_(std::move(device)),
      memory_(max_memory_bytes != 0 ? max_memory_bytes : device_->total_memory()),
      allocator_(*device_, max_memory_bytes),
      staging_(*device_, size_t{64} << 20) {
  completions_.set_idle([this] { poll_health(); }, std::chrono::milliseconds(100));
}

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
  // The streams of ended sessions may still be running, their host functions (the stream's
  // destruction, a staging buffer's release) not yet pushed: every one runs now, and what it
  // pushed runs below -- none may run after this object is gone.
  (void)device_->synchronize_device();
  completions_.drain();  // deferred stream destructions and callbacks pushed
  std::unique_ptr<FusedKernelCache> fused;
  {
    std::lock_guard<std::mutex> lock(fused_mu_);
    fused.swap(fused_);
  }
  fused.reset();  // (its compile thread may be loading a kernel onto the device)
}

Result<void*> StreamBackend::fused_kernel(const FusedKernelSignature& sig) {
  if (!fused_made_) {
    fused_made_ = true;
    auto made = make_fused_();
    if (made.is_ok()) {
      std::lock_guard<std::mutex> lock(fused_mu_);
      fused_ = std::move(*made);
    } else spdlog::warn("{}: no fused kernels ({}); hot paths' chains run op by op", device_kind(),
                      made.status().message());
  }
  if (!fused_) return unavailable("no fused kernels on {}", device_kind());
  void* k = fused_->find(sig);
  if (!k) return unavailable("the chain's fused kernel is not ready");
  return k;
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
                                          const std::shared_ptr<DeviceErrorSlot>& out, Status st) {
  if (out) out->set(DeviceErrorSlot::Error{op_name(op), st});
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
  Stream s = nullptr;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = sessions_.find(session);
    if (it != sessions_.end()) s = it->second.stream;
  }
  if (s == nullptr) {
    // Nothing was ever queued for it: done now (on the completion thread, like every other
    // completion, so replies keep their order).
    completions_.push([this, done = std::move(done)] { done(device_->sticky_error()); });
    return;
  }
  // Nothing queued is still running: what it pushed to the completion thread (failure reports)
  // is there already, so the callback only has to follow it -- no host function, no device hop.
  if (auto idle = device_->stream_idle(s); idle.is_ok() && *idle) {
    completions_.push([this, done = std::move(done)] { done(device_->sticky_error()); });
    return;
  }
  uint64_t id;
  {
    std::lock_guard<std::mutex> lk(pending_mu_);
    id = next_pending_++;
    pending_.emplace(id, std::move(done));
  }
  Status st = device_->launch_host_func(s, [this, id] {
    completions_.push([this, id] { finish_pending(id, device_->sticky_error()); });
  });
  if (!st.is_ok()) completions_.push([this, id, st] { finish_pending(id, st); });
}

void StreamBackend::finish_pending(uint64_t id, const Status& st) {
  std::function<void(Status)> done;
  {
    std::lock_guard<std::mutex> lk(pending_mu_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return;  // completed already (by poll_health)
    done = std::move(it->second);
    pending_.erase(it);
  }
  done(st);
}

void StreamBackend::poll_health() {
  {
    std::lock_guard<std::mutex> lk(pending_mu_);
    if (pending_.empty()) return;
  }
  Status health = device_->poll_health();
  if (health.is_ok()) return;
  std::unordered_map<uint64_t, std::function<void(Status)>> due;
  {
    std::lock_guard<std::mutex> lk(pending_mu_);
    due.swap(pending_);
  }
  for (auto& [id, done] : due) done(health);
}

Status StreamBackend::read_bytes(const DeviceBytes& b, void* dst, uint64_t session) {
  GT_RETURN_IF_ERROR(start_read_bytes(b, dst, session));
  GT_ASSIGN_OR_RETURN(Stream s, stream_for(session));
  return device_->synchronize_stream(s);
}

Result<bool> StreamBackend::read_bytes_if_idle(const DeviceBytes& b, void* dst, uint64_t session) {
  GT_ASSIGN_OR_RETURN(Stream s, stream_for(session));
  GT_ASSIGN_OR_RETURN(bool idle, device_->stream_idle(s));
  if (!idle) return false;
  GT_RETURN_IF_ERROR(read_bytes(b, dst, session));  // waits for this copy only
  return true;
}

Status StreamBackend::start_read_bytes(const DeviceBytes& b, void* dst, uint64_t session) {
  GT_ASSIGN_OR_RETURN(Stream s, stream_for(session));
  GT_RETURN_IF_ERROR(use_on(b.block, s));
  const auto* src = static_cast<const unsigned char*>(b.block) + b.offset;
  if (registered(dst, b.n)) {  // the device writes it there itself
    ++direct_reads_;
    return device_->copy_to_host(dst, src, b.n, s);
  }
  ++staged_reads_;
  GT_ASSIGN_OR_RETURN(HostStaging::Buffer buf, staging_.acquire(b.n));
  Status st = device_->copy_to_host(buf.data, src, b.n, s);
  if (st.is_ok())  // the host function copies it out once the stream got there
    st = device_->launch_host_func(s, [this, buf, dst, n = b.n] {
      std::memcpy(dst, buf.data, n);
      staging_.release(buf);
    });
  if (!st.is_ok()) staging_.release(buf);  // (nothing was enqueued that uses it)
  return st;
}

// The caller may reuse `src` once this returns, but the copy runs when the stream reaches it:
// the bytes wait in a staging buffer, given back by a host function after the copy. Registered
// host memory (register_host_memory) is read by the device itself: the caller keeps it as it is
// until the session's work so far is done (when_done).
Status StreamBackend::write_bytes(const DeviceBytes& b, const void* src, uint64_t session) {
  GT_ASSIGN_OR_RETURN(Stream s, stream_for(session));
  GT_RETURN_IF_ERROR(use_on(b.block, s));
  auto* dst = static_cast<unsigned char*>(b.block) + b.offset;
  if (registered(src, b.n)) {  // the device reads it there when the stream gets to it
    ++direct_writes_;
    return device_->copy_to_device(dst, src, b.n, s);
  }
  GT_ASSIGN_OR_RETURN(HostStaging::Buffer buf, staging_.acquire(b.n));
  std::memcpy(buf.data, src, b.n);
  Status st = device_->copy_to_device(dst, buf.data, b.n, s);
  if (st.is_ok()) st = device_->launch_host_func(s, [this, buf] { staging_.release(buf); });
  if (!st.is_ok()) staging_.release(buf);
  return st;
}

Status StreamBackend::zero_bytes(const DeviceBytes& b, uint64_t session) {
  GT_ASSIGN_OR_RETURN(Stream s, stream_for(session));
  GT_RETURN_IF_ERROR(use_on(b.block, s));
  return device_->fill_zero(static_cast<unsigned char*>(b.block) + b.offset, b.n, s);
}

Status StreamBackend::register_host_memory(void* p, size_t bytes) {
  GT_RETURN_IF_ERROR(device_->register_host(p, bytes));
  std::lock_guard<std::mutex> lk(registered_mu_);
  registered_[reinterpret_cast<uintptr_t>(p)] = bytes;
  return Status::ok();
}

void StreamBackend::unregister_host_memory(void* p, std::function<void()> then) {
  bool known;
  {
    std::lock_guard<std::mutex> lk(registered_mu_);
    known = registered_.erase(reinterpret_cast<uintptr_t>(p)) != 0;
  }
  // On the completion thread: the caller may be the I/O thread, and unpinning may wait.
  completions_.push([this, p, known, then = std::move(then)] {
    if (known) device_->unregister_host(p);
    then();
  });
}

bool StreamBackend::registered(const void* p, size_t n) const {
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lk(registered_mu_);
  auto it = registered_.upper_bound(a);
  if (it == registered_.begin()) return false;
  --it;
  return a - it->first <= it->second && n <= it->second - (a - it->first);
}

// The ops whose kernels check index values on the device and report a bad one from a host
// function (CUDA's OpContext::check_indices, the sim's kernels alike): a recorded host function
// would report for the run it was recorded in. The rest are kernels, device copies and
// library calls (cuBLAS captures), which graphs hold.
bool StreamBackend::capturable(OpId op) const {
  switch (op) {
    case OpId::k_index_select:
    case OpId::k_gather:
    case OpId::k_scatter_add:
    case OpId::k_index_add:
    case OpId::k_one_hot:
      return false;
    default:
      return supports(op);
  }
}

Status StreamBackend::begin_graph(uint64_t session) {
  GT_ASSIGN_OR_RETURN(Stream s, stream_for(session));
  GT_RETURN_IF_ERROR(device_->begin_capture(s));
  allocator_.begin_capture(s);
  capturing_ = session;
  return Status::ok();
}

Result<Backend::GraphRun> StreamBackend::end_graph(uint64_t session, void*& slot) {
  capturing_ = 0;
  const bool spoiled = allocator_.end_capture();
  GT_ASSIGN_OR_RETURN(Stream s, stream_for(session));
  if (spoiled) {
    // The capture ends without touching `slot`, and what it recorded never runs.
    auto discarded = device_->end_capture(s, nullptr);
    if (discarded.is_ok()) device_->destroy_graph(*discarded);
    return failed_precondition(
        "the graph capture was refused memory (a block of another stream's, or none left)");
  }
  GT_ASSIGN_OR_RETURN(Graph g, device_->end_capture(s, slot));
  GraphRun run;
  run.instantiated = g != slot;
  slot = g;  // the old one, if any, was updated or destroyed by end_capture
  GT_RETURN_IF_ERROR(device_->launch_graph(g, s));
  return run;
}

void StreamBackend::drop_graph(void* slot) {
  if (slot != nullptr) device_->destroy_graph(slot);
}

BackendStats StreamBackend::stats() const {
  AllocatorStats a = allocator_.stats();
  BackendStats b{a.allocated_bytes, a.reserved_bytes + a.workspace_bytes, a.peak_bytes};
  std::lock_guard<std::mutex> lock(fused_mu_);
  if (fused_) {
    const FusedKernelCacheStats f = fused_->stats();
    b.fused_kernels_compiled = f.compiled;
    b.fused_kernels_from_disk = f.disk_hits;
    b.fused_kernels_failed = f.failed;
  }
  return b;
}

}  // namespace gt::worker::device
