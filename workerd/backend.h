// Backend: the narrow interface between the device-independent executor and one device
// (DESIGN §6). One implementation per device folder (cpu/, cuda/); the executor, the protocol
// and the peer links know nothing device-specific.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "libgtcore/op_attrs.h"
#include "libgtcore/ops.h"
#include "libgtcore/shape.h"
#include "libgtcore/status.h"

namespace gt::worker {

class Backend;

// A block of device memory. Freed back to its backend's allocator when the last tensor
// referring to it (reshape results alias their input) goes away.
class Storage {
 public:
  Storage(void* data, size_t bytes, size_t capacity, Backend* owner)
      : data_(data), bytes_(bytes), capacity_(capacity), owner_(owner) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  size_t capacity() const { return capacity_; }  // what the allocator actually reserved

 private:
  void* data_;
  size_t bytes_;
  size_t capacity_;
  Backend* owner_;
};

// The first failure a tensor descends from (DESIGN §2: errors are values).
struct ErrorRecord {
  std::string op;
  std::string message;
  std::string origin;
  Code code = Code::kInternal;  // the failing Status's code, reported with it (gt.v1.ErrorInfo)
};

struct Tensor {
  TensorMeta meta;
  std::shared_ptr<Storage> storage;            // null when poisoned
  std::shared_ptr<const ErrorRecord> poison;   // set when this tensor holds no valid value
  uint64_t session = 0;                        // whose it is (the executor's bookkeeping)

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
};

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
  virtual bool supports(OpId op) const = 0;
  virtual Status run(const KernelArgs& args) = 0;

  // Host transfers of `n` bytes at byte `offset` of a tensor's row-major contents.
  virtual Status copy_to_host(const Tensor& t, size_t offset, void* dst, size_t n,
                              uint64_t session) = 0;

  // Waits until everything queued for the session has finished (no-op on CPU).
  virtual Status synchronize(uint64_t session) { return Status::ok(); }
  // A session ended: drop its per-session state (e.g. its CUDA stream).
  virtual void end_session(uint64_t session) {}

  virtual BackendStats stats() const = 0;
};

inline Storage::~Storage() {
  if (owner_ && data_) owner_->release(data_, capacity_);
}

}  // namespace gt::worker
