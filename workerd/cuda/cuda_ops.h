// Internal to the CUDA backend: what the host-side op code (ops_*.cpp) shares. Each op is a
// CudaKernel that validates what the shape rule cannot see, converts operands where the CPU
// worker does, builds plain launch descriptors (launch.h) and enqueues kernels on the session's
// stream. Backend::run() has already checked storages against metas and out.meta against
// infer_meta() (workerd/kernel_args_check.h).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <functional>

#include "gt/core/dtype.h"
#include "libgtcore/op_attrs.h"
#include "libgtcore/shape.h"
#include "workerd/backend.h"
#include "workerd/device/caching_allocator.h"
#include "workerd/device/device_api.h"
#include "workerd/cuda/cuda_check.h"
#include "workerd/cuda/launch.h"
#include "workerd/dim_split.h"
#include "workerd/kernels/kernel_util.h"

namespace gt::worker::cuda {

static_assert(kMaxDims == kMaxRank, "launch.h's NdDesc must hold every rank");
static_assert(static_cast<int>(DType::kFloat32) == 0 && static_cast<int>(DType::kFloat16) == 1 &&
                  static_cast<int>(DType::kBFloat16) == 2 && static_cast<int>(DType::kInt32) == 3 &&
                  static_cast<int>(DType::kInt64) == 4 && static_cast<int>(DType::kBool) == 5 &&
                  static_cast<int>(DType::kFloat64) == 6 && static_cast<int>(DType::kInt8) == 7 &&
                  static_cast<int>(DType::kUInt8) == 8,
              "cuda_common.cuh's dtype codes mirror gt::DType");

// A scratch device buffer from the caching allocator, given back when it goes out of scope --
// after the kernels using it were enqueued, which is safe: the allocator is stream-ordered (the
// next user on the same stream runs after them, any other stream waits for an event).
class DeviceTemp {
 public:
  DeviceTemp() = default;
  DeviceTemp(device::CachingAllocator* alloc, void* p) : alloc_(alloc), p_(p) {}
  DeviceTemp(DeviceTemp&& o) noexcept : alloc_(o.alloc_), p_(o.p_) { o.p_ = nullptr; }
  DeviceTemp& operator=(DeviceTemp&& o) noexcept {
    if (this != &o) {
      reset();
      alloc_ = o.alloc_;
      p_ = o.p_;
      o.p_ = nullptr;
    }
    return *this;
  }
  ~DeviceTemp() { reset(); }
  void* get() const { return p_; }
  void reset() {
    if (p_ && alloc_) alloc_->deallocate(p_);
    p_ = nullptr;
  }

 private:
  device::CachingAllocator* alloc_ = nullptr;
  void* p_ = nullptr;
};

// Per-run state: the session's stream and cuBLAS handle, the allocator for temporaries, and
// what an asynchronous index check needs.
struct OpContext {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  device::CachingAllocator* alloc = nullptr;
  device::DeviceApi* api = nullptr;  // host functions
  bool allow_tf32 = false;
  bool capturing = false;  // the stream records a graph (StreamBackend::begin_graph)
  int64_t* check_slot = nullptr;  // two device int64 of the session: bad position, its value
  int64_t* check_host = nullptr;  // two pinned int64 the host function reads them from
  // A failure found on the device: poisons the op's result, raised at the next sync point
  // (StreamBackend::report_kernel_failure). Called from a host function (no CUDA calls).
  std::function<void(Status)> report;

  // A temporary of `bytes` bytes (nullptr data for 0), bound to this stream.
  Result<DeviceTemp> temp(size_t bytes) const;
  // t's elements in dtype `dt`: its own storage, or a converted copy held by `tmp`.
  Result<const void*> as_dtype(const Tensor& t, DType dt, DeviceTemp& tmp) const;
  // Checks the values of an int32/int64 tensor against [0, limit) on the device, without a
  // host round trip: when one is outside, `error(value)` (of the first such) is reported
  // through `report` once the stream gets there. The op's kernels must skip bad values.
  Status check_indices(const Tensor& index, int64_t limit,
                       std::function<Status(int64_t)> error) const;
};

using CudaKernel = Status (*)(const KernelArgs&, OpContext&);
using KernelTable = std::array<CudaKernel, kNumOps>;

void register_creation(KernelTable& t);     // zeros ones full arange rand randn
void register_elementwise(KernelTable& t);  // every unary and binary elementwise op of ops.def,
                                            // where, cast, copy_, masked_fill, clamp
void register_reduce(KernelTable& t);       // sum mean max min argmax argmin var logsumexp cumsum
                                            // argsort
void register_layout(KernelTable& t);       // reshape permute slice cat expand as_strided
                                            // strided_copy_
void register_indexing(KernelTable& t);     // index_select gather scatter_add index_add one_hot
void register_matmul(KernelTable& t);       // matmul

// ---- small helpers ----
// (count, in, in_ptr, out_ptr: workerd/kernels/kernel_util.h)
inline int code(DType d) { return static_cast<int>(d); }

// NdDesc of inputs broadcast to the contiguous `out` (inputs 0..k-1), coalesced.
NdDesc broadcast_desc(const Shape& out, std::initializer_list<const Shape*> ins);
// Host bits of `value` converted to `dt` like a cast (for fills), in the low dtype_size bytes.
uint64_t value_bits(double value, DType dt);
// The [outer, n, inner] view of a reduction (workerd/dim_split.h).
using ReduceView = DimSplit;
inline ReduceView reduce_view(const Shape& s, const OpAttrs& a) { return reduce_split(s, a); }

#define GT_LAUNCH(expr) GT_CUDA_CHECK(expr)

}  // namespace gt::worker::cuda
