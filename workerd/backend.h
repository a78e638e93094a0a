// Backend: the narrow interface between the device-independent executor and one device
// (ARCHITECTURE §6). One implementation per device folder (cpu/, cuda/); the executor, the protocol
// and the peer links know nothing device-specific. Like ggml-backend's buffer interface, a
// device provides kernels and byte transfers (read, write, zero); everything built on them --
// argument checks, bounds checks, the host uploads -- is written once, in backend.cpp.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "libgtcore/op_attrs.h"
#include "gt/core/ops.h"
#include "libgtcore/shape.h"
#include "libgtcore/status.h"
#include "workerd/fusion.h"

namespace gt::worker {

class Backend;

// Asynchronous devices: a kernel that wrote a block failed on the device (an index out of
// range), or read a result that had; the contents are unspecified. Set once, by the device
// thread running the work; read by whoever completes a fetch (stream order makes it visible).
// Shared by the Storage that owns the block and the records a queued kernel holds, and by no
// later owner of the same block.
class DeviceErrorSlot {
 public:
  struct Error {
    std::string op;
    Status status;
  };
  void set(Error e) {
    int expected = 0;
    if (!state_.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return;
    error_ = std::move(e);
    state_.store(2, std::memory_order_release);
  }
  const Error* get() const { return state_.load(std::memory_order_acquire) == 2 ? &error_ : nullptr; }

 private:
  std::atomic<int> state_{0};  // 0 none, 1 being written, 2 set
  Error error_;
};

// A block of device memory. Freed back to its backend's allocator when the last tensor
// referring to it (reshape results alias their input) goes away. A record without an owner only
// refers to the block (what a queued kernel holds on an asynchronous device: the block goes back
// to the stream-ordered allocator when its tensor is freed, not when the kernel has run).
class Storage {
 public:
  Storage(void* data, size_t bytes, size_t capacity, Backend* owner,
          std::shared_ptr<DeviceErrorSlot> error_slot = nullptr)
      : data_(data), bytes_(bytes), capacity_(capacity), owner_(owner),
        error_slot_(std::move(error_slot)) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  size_t capacity() const { return capacity_; }  // what the allocator actually reserved

  // Asynchronous devices only (null elsewhere): see DeviceErrorSlot.
  const std::shared_ptr<DeviceErrorSlot>& error_slot() const { return error_slot_; }
  const DeviceErrorSlot::Error* device_error() const {
    return error_slot_ ? error_slot_->get() : nullptr;
  }

 private:
  void* data_;
  size_t bytes_;
  size_t capacity_;
  Backend* owner_;
  std::shared_ptr<DeviceErrorSlot> error_slot_;
};

// The first failure a tensor descends from (ARCHITECTURE §2: errors are values).
struct ErrorRecord {
  std::string op;
  std::string message;
  std::string origin;
  Code code = Code::kInternal;  // the failing Status's code, reported with it (gt.v1.ErrorInfo)
  uint64_t handle = 0;  // this worker's handle of the failed result (0: unknown / from a peer)
};

struct Tensor {
  TensorMeta meta;
  std::shared_ptr<Storage> storage;            // null when poisoned
  std::shared_ptr<const ErrorRecord> poison;   // set when this tensor holds no valid value
  uint64_t session = 0;                        // whose it is (the executor's bookkeeping)
  uint64_t handle = 0;                         // its id in the session (0: a temporary)

  template <typename T>
  T* data() const { return static_cast<T*>(storage->data()); }
  int64_t numel() const { return meta.shape.numel(); }
};

// Everything a kernel needs. `out` is allocated by the executor from the shape rule's result
// (for in-place ops it is the tensor being written: inputs[0]).
struct KernelArgs {
  OpId op;
  const OpAttrs& attrs;
  std::span<const Tensor* const> inputs;
  Tensor& out;
  uint64_t session;  // which session's stream to run on (CUDA); CPU ignores it
};

struct BackendStats {
  uint64_t allocated_bytes = 0;  // in live tensors
  uint64_t reserved_bytes = 0;   // allocated + cached by the allocator
  uint64_t peak_bytes = 0;       // high-water mark of allocated_bytes
  // Fused-chain kernels generated at run time (device/fused_kernel_cache.h).
  uint64_t fused_kernels_compiled = 0, fused_kernels_from_disk = 0, fused_kernels_failed = 0;
};

// What a peer link that enqueues its own device work (the NCCL link) needs from a backend whose
// sessions run on native streams (CUDA); Backend::session_streams() gives it, or nullptr.
class SessionStreams {
 public:
  // The device's ordinal among the visible ones (cudaSetDevice's argument).
  virtual int device_ordinal() const = 0;
  // The session's stream (created if needed) as the device API's handle (a cudaStream_t), with
  // the calling thread's current device made this one.
  virtual Result<void*> native_stream(uint64_t session) = 0;
  // Orders the block's use on the session's stream after the work of the stream that used it
  // last (what run() does for its operands).
  virtual Status use_on_session(const void* data, uint64_t session) = 0;

 protected:
  ~SessionStreams() = default;
};

// The public half is the same for every device and lives in backend.cpp: argument checks, the
// host uploads, errors as statuses. A device implements the protected half.
class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string device_kind() const = 0;  // "cpu" / "cuda"
  virtual std::string device_name() const = 0;
  virtual uint64_t memory_bytes() const = 0;

  // Memory. Out-of-memory is a ResourceExhausted status, never a crash.
  virtual Result<std::shared_ptr<Storage>> alloc(size_t bytes) = 0;
  virtual void release(void* data, size_t capacity) = 0;  // called by ~Storage

  // Ops. A missing kernel is supports() == false, reported as a clear error by the executor.
  // from_host and host_chunk are supported everywhere: they are uploads through
  // copy_from_host, not kernels. run() never throws and never trusts its arguments: every
  // storage is checked against its meta and out.meta against infer_meta() before a kernel
  // touches any byte (kernel_args_check.h).
  bool supports(OpId op) const;
  Status run(const KernelArgs& args);
  // Fused elementwise chains (workerd/fusion.h), on devices that have the kernel. run_fused()
  // checks its arguments like run(): float32 head and out of one shape (any dtype where the
  // device fuses casts), each storage large enough, every tensor operand float32 and
  // broadcasting to out's shape; only fusable ops.
  virtual bool fuses_chains() const { return false; }
  // Whether a fused chain may end in its reduction tail (FusedArgs::tail); else the tail runs
  // as an op of its own after the fused part.
  virtual bool fuses_chain_tails() const { return fuses_chains(); }
  // Whether a fused chain may begin with a cast of its head to float32 and end with a cast of
  // its value to another dtype (FusedArgs: head and out of other dtypes); else the casts run as
  // ops of their own, outside the fused part. fuses_cast_dtype(): which dtypes (all, unless the
  // device says otherwise).
  virtual bool fuses_chain_casts() const { return false; }
  virtual bool fuses_cast_dtype(DType d) const { return fuses_chain_casts(); }
  Status run_fused(const FusedArgs& args);
  // Matmuls with their transposes folded in (fusion.h, TransposeFold), on devices with the GEMM.
  // run_matmul_t() checks its arguments like run(): 2-D float32 operands whose inner dims
  // agree, out of the product's shape, every storage large enough.
  virtual bool folds_transposes() const { return false; }
  Status run_matmul_t(const TransposedMatmul& args);

  // Device graphs (hot paths on asynchronous devices, ARCHITECTURE §7; CUDA graphs). Between
  // begin_graph(session) and end_graph(session, slot) the ops run() enqueues for the session
  // are recorded instead of run; end_graph() makes them an executable graph -- updating the
  // one `slot` holds when the topology is the same, as the next run of a hot path records --
  // and launches it: one launch instead of one per kernel. On error (an invalidated capture)
  // nothing recorded runs and `slot` is unchanged. drop_graph() destroys a slot's graph (a
  // launched one finishes first). Only ops with capturable(op) may run in between: their
  // kernels use no host function, host memory or wait (index checks report from the host).
  // Host memory another process shares with this worker (a client's shared-memory arena),
  // registered with the device so that reads of tensors into it are copied there directly
  // instead of through a staging buffer (CUDA: cudaHostRegister). Unimplemented where the
  // device reaches host memory anyway (the CPU) or cannot. unregister_host_memory is called once
  // the copies into it are done; it unregisters on a thread of the device's (never the
  // caller's: it may wait for the device), then runs `then` (the unmap).
  virtual Status register_host_memory(void* p, size_t bytes) {
    return unimplemented("{}: no host memory registration", device_kind());
  }
  virtual void unregister_host_memory(void* p, std::function<void()> then) { then(); }

  virtual bool captures_graphs() const { return false; }
  virtual bool capturable(OpId op) const { return false; }
  virtual Status begin_graph(uint64_t session) {
    return unimplemented("{}: no device graphs", device_kind());
  }
  struct GraphRun {
    bool instantiated = false;  // a new executable graph (not an update of slot's)
  };
  virtual Result<GraphRun> end_graph(uint64_t session, void*& slot) {
    return unimplemented("{}: no device graphs", device_kind());
  }
  virtual void drop_graph(void* slot) {}

  // Host transfers of `n` bytes at byte `offset` of a tensor's row-major contents, checked
  // against the tensor. copy_from_host stores bool bytes as 0/1 (bool_bytes.h: host bytes may
  // be anything) and is done with `src` when it returns.
  Status copy_to_host(const Tensor& t, size_t offset, void* dst, size_t n, uint64_t session);
  Status copy_from_host(Tensor& t, size_t offset, const void* src, size_t n, uint64_t session);

  // Waits until everything queued for the session has finished (no-op on CPU), with the
  // session's first asynchronous error not reported yet. Blocks: never on the I/O thread.
  virtual Status synchronize(uint64_t session) { return Status::ok(); }

  // Issue is not completion (ARCHITECTURE §6). An asynchronous device (CUDA, sim) returns from
  // run() and the transfers once the work is enqueued; these say when it is done, without
  // blocking anyone.
  virtual bool asynchronous() const { return false; }
  // Calls done(st) once everything queued for the session so far has finished, where st is the
  // session's first asynchronous error not reported yet (a device-side check that failed, a
  // lost device) or ok. Never blocks: a synchronous device calls it before returning, an
  // asynchronous one later, on its completion thread (so `done` must be thread-safe).
  virtual void when_done(uint64_t session, std::function<void(Status)> done) {
    done(Status::ok());
  }
  // Like copy_to_host, but only starts the copy: `dst` must stay valid, and the tensor's
  // storage alive, until the session's next when_done() callback has run.
  Status start_copy_to_host(const Tensor& t, size_t offset, void* dst, size_t n,
                            uint64_t session);
  // A small fetch's shortcut: when nothing the session queued is still running, copies now (a
  // wait for this copy alone, so never on the I/O thread) and returns true; otherwise does
  // nothing and returns false (start_copy_to_host then). A synchronous device always copies.
  Result<bool> copy_to_host_if_idle(const Tensor& t, size_t offset, void* dst, size_t n,
                                    uint64_t session);
  // Bytes [offset, offset + n) of t's contents where the host can read them in place (the CPU:
  // a fetch reply is then written to the socket straight from the tensor, issue 15), checked
  // like copy_to_host; nullptr when the device's memory is not host memory (copy_to_host then).
  // Valid while the storage lives and nothing writes it.
  Result<const char*> host_view(const Tensor& t, size_t offset, size_t n) const;
  // Ok, or why the device is unusable for good (a sticky CUDA error: the worker must go).
  virtual Status device_lost() const { return Status::ok(); }
  // Where an asynchronous device reports a kernel that failed on the device: (session, result
  // handle, op, why), called on its completion thread, in stream order before the session's
  // later completions. The result's storage carries the error too (Storage::device_error), and
  // the results computed from it inherit it without a new report. A synchronous device reports
  // through run()'s status instead and never calls it.
  using AsyncErrorSink = std::function<void(uint64_t, uint64_t, const char*, const Status&)>;
  virtual void set_async_error_sink(AsyncErrorSink sink) {}

  // A session ended: drop its per-session state (e.g. its CUDA stream).
  virtual void end_session(uint64_t session) {}

  virtual BackendStats stats() const = 0;

  // The device's session streams for a peer link that enqueues its own work (NCCL), or nullptr
  // (no such streams: the CPU). A capability, asked for instead of a cast to a backend type.
  virtual SessionStreams* session_streams() { return nullptr; }

 protected:
  // The device's half. Its constructor names the ops it has kernels for (a kernel table:
  // non-null entries); the hooks are called with checked arguments only.
  template <class Kernel>
  void set_kernels(const std::array<Kernel, kNumOps>& table) {
    for (size_t i = 0; i < table.size(); ++i) has_kernel_[i] = table[i] != nullptr;
  }
  // Runs op's kernel (one set_kernels() named, args checked). May throw (std::bad_alloc for
  // temporaries); run() reports it.
  virtual Status run_kernel(const KernelArgs& args) = 0;
  // The folded matmul's GEMM (args checked), for a device whose folds_transposes() is true.
  virtual Status run_matmul_t_kernel(const TransposedMatmul& args) {
    return unimplemented("no transposed GEMM on {}", device_kind());
  }
  // The fused chain's kernel (args checked), for a device whose fuses_chains() is true.
  virtual Status run_fused_kernel(const FusedArgs& args) {
    return unimplemented("no fused {} kernel", device_kind());
  }
  // Byte transfers between the host and `bytes` (checked: inside the tensor's storage, n > 0,
  // host pointers set), ordered after the session's queued work; write_bytes is done with
  // `src` when it returns, unless `src` is registered host memory (register_host_memory: then
  // once the session's work so far is done).
  struct DeviceBytes {
    void* block;    // the storage's block (Storage::data())
    size_t offset;  // of the first byte in it
    size_t n;
  };
  virtual Status read_bytes(const DeviceBytes& bytes, void* dst, uint64_t session) = 0;
  // read_bytes when the session's stream is idle (else false, nothing done).
  virtual Result<bool> read_bytes_if_idle(const DeviceBytes& bytes, void* dst, uint64_t session) {
    GT_RETURN_IF_ERROR(read_bytes(bytes, dst, session));
    return true;
  }
  // Only enqueues the read (start_copy_to_host); a synchronous device just reads.
  virtual Status start_read_bytes(const DeviceBytes& bytes, void* dst, uint64_t session) {
    return read_bytes(bytes, dst, session);
  }
  virtual Status write_bytes(const DeviceBytes& bytes, const void* src, uint64_t session) = 0;
  // Where the host reads a block in place (host_view), or nullptr (the default: device memory).
  virtual const void* host_address(const void* block) const { return nullptr; }
  virtual Status zero_bytes(const DeviceBytes& bytes, uint64_t session) = 0;

 private:
  Status upload(const KernelArgs& args);  // from_host, host_chunk
  static Result<std::optional<DeviceBytes>> read_span(const Tensor& t, size_t offset, void* dst,
                                                      size_t n);

  std::array<bool, kNumOps> has_kernel_{};
};

inline Storage::~Storage() {
  if (owner_ && data_) owner_->release(data_, capacity_);
}

}  // namespace gt::worker
