// StreamBackend: the device-generic half of an asynchronous-device Backend (ARCHITECTURE §6),
// shared by the CUDA backend and the sim device's, so that everything but the kernels is the same
// code on a GPU and in CI:
//
//   sessions   each session runs on its own stream, created on first use; end_session() hands
//              the stream's destruction to the completion thread once its work is done (the
//              caller -- possibly the I/O thread -- never waits)
//   memory     the device-generic CachingAllocator; every block an op touches is ordered onto
//              the op's stream first (use_on), so a block another stream freed is reused safely
//   transfers  through pooled host staging buffers (host_staging.h; pinned on CUDA): an upload's
//              bytes are copied into one (the caller may reuse its bytes as soon as the call
//              returns), a read lands in one and is copied out by a host function; neither
//              blocks the thread that enqueues it; reads complete through when_done()
//   completion when_done() enqueues a host function on the session's stream that pushes the
//              callback to the completion thread (completion_queue.h): no device wait ever
//              runs on the caller's thread. While callbacks are due, the completion thread polls
//              the device's health every 100 ms: a lost context never runs host functions, so
//              the due callbacks then complete with the sticky error instead of never
//   registered host memory (a client's shared-memory arena, register_host_memory): reads into
//              it and writes from it are copied by the device directly, without a staging
//              buffer (the caller keeps a written source as it is until when_done)
//   graphs     begin_graph/end_graph capture a session's stream (DeviceApi graph capture) and
//              launch what was recorded as one graph; ops whose kernels report through host
//              functions (index checks) are not capturable
//   fused      hot paths' elementwise chains as kernels generated for their structure
//   kernels    (fused_kernel_source.h), compiled off the executor's thread and cached
//              (fused_kernel_cache.h); a subclass that can launch them enables them with a
//              factory of its cache, made on the first chain (the sim's compiler need not load
//              in a worker that never fuses). No reduction tails: those run as ops of their own
//   errors     a kernel that fails on the device (an index out of range: the values are data)
//              poisons its result's storage and is reported, with its result handle, to the
//              executor's async error sink from the completion thread -- before the session's
//              later syncs complete, so the next sync point raises it, as every worker-side
//              error is; kernels reading a poisoned storage skip and pass the poison on; a lost
//              device (sticky error) is device_lost(), and fails every later completion
//
// A subclass provides the kernels (run_kernel, using stream_for/use_on) and may keep per-session
// device state through the session hooks; its destructor must call shutdown() first.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "workerd/backend.h"
#include "workerd/device/caching_allocator.h"
#include "workerd/device/completion_queue.h"
#include "workerd/device/device_api.h"
#include "workerd/device/fused_kernel_cache.h"
#include "workerd/device/host_staging.h"

namespace gt::worker::device {

class StreamBackend : public Backend {
 public:
  ~StreamBackend() override;

  uint64_t memory_bytes() const override { return memory_; }
  Result<std::shared_ptr<Storage>> alloc(size_t bytes) override;
  void release(void* data, size_t capacity) override;

  Status synchronize(uint64_t session) override;
  void end_session(uint64_t session) override;
  bool asynchronous() const override { return true; }
  void when_done(uint64_t session, std::function<void(Status)> done) override;
  Status device_lost() const override { return device_->sticky_error(); }
  BackendStats stats() const override;

  Status register_host_memory(void* p, size_t bytes) override;
  void unregister_host_memory(void* p, std::function<void()> then) override;
  // Reads of tensors that went to registered host memory directly / through a staging buffer,
  // and writes from registered memory (tests).
  uint64_t direct_reads() const { return direct_reads_.load(); }
  uint64_t staged_reads() const { return staged_reads_.load(); }
  uint64_t direct_writes() const { return direct_writes_.load(); }

  bool fuses_chains() const override { return static_cast<bool>(make_fused_); }
  bool fuses_chain_tails() const override { return false; }
  // Generated kernels read a float16 / bfloat16 head and write such a result themselves
  // (device/fused_kernel_source.h); other dtypes' casts run as ops of their own.
  bool fuses_chain_casts() const override { return fuses_chains(); }
  bool fuses_cast_dtype(DType d) const override {
    return fuses_chains() && device::generated_cast_dtype(d);
  }
  // The fused-kernel cache (null before the first fused chain, or when it could not be made).
  FusedKernelCache* fused_kernels() {
    std::lock_guard<std::mutex> lock(fused_mu_);
    return fused_.get();
  }

  bool captures_graphs() const override { return true; }
  bool capturable(OpId op) const override;
  Status begin_graph(uint64_t session) override;
  Result<GraphRun> end_graph(uint64_t session, void*& slot) override;
  void drop_graph(void* slot) override;

  // Thread-safe: clearing it (nullptr) waits for a call in progress.
  void set_async_error_sink(AsyncErrorSink sink) override;
  // A kernel failed on the device (called by the device thread running it): marks its result's
  // storage and reports it to the sink, through the completion thread.
  void report_kernel_failure(uint64_t session, uint64_t handle, OpId op,
                             const std::shared_ptr<DeviceErrorSlot>& out, Status st);

  DeviceApi& device_api() { return *device_; }
  CachingAllocator& allocator() { return allocator_; }
  AllocatorStats allocator_stats() const { return allocator_.stats(); }
  void trim_cache() { allocator_.trim(); }
  // The session's stream, created if needed (tests, peer links).
  Result<Stream> stream_of(uint64_t session) { return stream_for(session); }

 protected:
  // max_memory_bytes: a limit on what the allocator reserves (0: the device's memory).
  StreamBackend(std::unique_ptr<DeviceApi> device, uint64_t max_memory_bytes);

  // The session's stream (created on first use, with on_session_created()).
  Result<Stream> stream_for(uint64_t session);
  // Whether the session's stream is capturing a graph now (begin_graph .. end_graph).
  bool capturing(uint64_t session) const { return capturing_ != 0 && capturing_ == session; }
  // Orders a block's use on `s` after its previous streams' work (CachingAllocator::use_on).
  Status use_on(const void* data, Stream s) { return allocator_.use_on(data, s); }

  Status read_bytes(const DeviceBytes& bytes, void* dst, uint64_t session) override;
  Status start_read_bytes(const DeviceBytes& bytes, void* dst, uint64_t session) override;
  Result<bool> read_bytes_if_idle(const DeviceBytes& bytes, void* dst, uint64_t session) override;
  Status write_bytes(const DeviceBytes& bytes, const void* src, uint64_t session) override;
  Status zero_bytes(const DeviceBytes& bytes, uint64_t session) override;

  // Per-session device state of a subclass (a cuBLAS handle). created: on the thread that first
  // used the session, with its new stream; destroyed: on the completion thread once the
  // stream's work is done, before the stream goes.
  virtual Status on_session_created(uint64_t session, Stream s) { return Status::ok(); }
  virtual void on_session_destroyed(uint64_t session) {}

  // Finishes every session's work and destroys the streams (calling the hooks), then the
  // fused-kernel cache (its compile thread). Idempotent.
  void shutdown();

  using FusedKernelCacheFactory = std::function<Result<std::unique_ptr<FusedKernelCache>>()>;
  // Fused chains from now on (fuses_chains()); `make` runs once, at the first chain.
  void enable_fused_kernels(FusedKernelCacheFactory make) { make_fused_ = std::move(make); }
  // The compiled kernel of a chain's signature, or unavailable(): being compiled (the chain
  // runs op by op meanwhile), failed, or no compiler. The executor's thread only.
  Result<void*> fused_kernel(const FusedKernelSignature& sig);

 private:
  struct Session {
    Stream stream = nullptr;
  };
  void destroy_stream(uint64_t session, Stream s);
  void finish_pending(uint64_t id, const Status& st);
  void poll_health();

  std::unique_ptr<DeviceApi> device_;  // declared first: destroyed last
  FusedKernelCacheFactory make_fused_;
  bool fused_made_ = false;  // make_fused_ ran
  mutable std::mutex fused_mu_;  // fused_ as a pointer (made by the executor, read by stats())
  std::unique_ptr<FusedKernelCache> fused_;
  uint64_t capturing_ = 0;  // the session whose stream captures (the executor's thread only)
  // Host memory registered with the device (register_host_memory): start -> bytes.
  bool registered(const void* p, size_t n) const;
  mutable std::mutex registered_mu_;
  std::map<uintptr_t, size_t> registered_;
  std::atomic<uint64_t> direct_reads_{0}, staged_reads_{0}, direct_writes_{0};
  uint64_t memory_ = 0;
  CachingAllocator allocator_;
  HostStaging staging_;
  std::mutex mu_;  // sessions_
  std::unordered_map<uint64_t, Session> sessions_;
  std::mutex pending_mu_;  // when_done() callbacks not run yet, by id
  std::unordered_map<uint64_t, std::function<void(Status)>> pending_;
  uint64_t next_pending_ = 1;
  std::mutex sink_mu_;  // held while the sink runs, so clearing it is safe
  AsyncErrorSink sink_;
  CompletionQueue completions_;  // declared last: its thread stops first
};

}  // namespace gt::worker::device
