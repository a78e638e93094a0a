// Internal to the CPU backend: the per-family kernel registration functions and the helpers the
// kernel files share: dtype dispatch and temporaries here; element conversion in convert.h, the
// strided N-d iterator in nd_iter.h, parallel_for in parallel.h.
//
// Kernels run after CpuBackend::run() has checked that every storage is big enough for its meta
// and that out.meta is exactly infer_meta(op, inputs, attrs): they may rely on consistent metas.
// They may throw std::bad_alloc for temporaries; run() turns that into a ResourceExhausted status.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "libgtcore/dtype.h"
#include "libgtcore/half.h"
#include "libgtcore/op_attrs.h"
#include "libgtcore/shape.h"
#include "workerd/backend.h"
#include "workerd/cpu/convert.h"
#include "workerd/cpu/cpu_backend.h"
#include "workerd/cpu/nd_iter.h"
#include "workerd/cpu/parallel.h"
#include "workerd/dim_split.h"

namespace gt::worker::cpu {

using KernelTable = std::array<CpuKernel, kNumOps>;

// One registration function per kernel family (one .cpp each):
void register_creation(KernelTable& t);     // zeros ones full arange rand randn from_host
                                            // host_chunk
void register_binary(KernelTable& t);       // add sub mul div pow maximum minimum eq ne lt le gt ge
void register_unary(KernelTable& t);        // neg exp log sqrt abs relu sigmoid tanh
void register_elementwise(KernelTable& t);  // where cast copy_
void register_reduce(KernelTable& t);       // sum mean max min argmax argmin
void register_matmul(KernelTable& t);       // matmul
void register_layout(KernelTable& t);       // reshape permute slice cat expand
void register_indexing(KernelTable& t);     // index_select gather scatter_add index_add one_hot
void register_fill_clamp(KernelTable& t);   // masked_fill clamp
void register_reduce_stats(KernelTable& t); // var logsumexp

// Element count of a shape that run() has already validated (Shape::numel() guards against
// overflow with a division per dim, which dominates the cost of tiny ops).
inline int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int d = 0; d < s.rank(); ++d) n *= s[d];
  return n;
}

// A reduction's input viewed as [outer, n, inner] (workerd/dim_split.h).
using ReduceView = DimSplit;
inline ReduceView reduce_view(const Shape& s, const OpAttrs& a) { return reduce_split(s, a); }

// ---- dtype dispatch -------------------------------------------------------------------------

template <class T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) with T the storage type of `dt`.
template <class F>
decltype(auto) dispatch_dtype(DType dt, F&& f) {
  switch (dt) {
    case DType::kFloat32: return f(Tag<float>{});
    case DType::kFloat16: return f(Tag<half>{});
    case DType::kBFloat16: return f(Tag<bfloat16>{});
    case DType::kInt32: return f(Tag<int32_t>{});
    case DType::kInt64: return f(Tag<int64_t>{});
    case DType::kBool: break;
  }
  return f(Tag<bool>{});
}

// Calls f(Tag<U>{}) with U an unsigned integer of the element size (for byte-moving kernels).
template <class F>
decltype(auto) dispatch_size(size_t elem_size, F&& f) {
  switch (elem_size) {
    case 1: return f(Tag<uint8_t>{});
    case 2: return f(Tag<uint16_t>{});
    case 4: return f(Tag<uint32_t>{});
    default: break;
  }
  return f(Tag<uint64_t>{});
}

// ---- temporaries ----------------------------------------------------------------------------

// An owned, uninitialized byte buffer (throws std::bad_alloc; run() reports it).
class TempBuffer {
 public:
  void* get(size_t bytes) {
    buf_ = std::make_unique_for_overwrite<unsigned char[]>(bytes == 0 ? 1 : bytes);
    return buf_.get();
  }

 private:
  std::unique_ptr<unsigned char[]> buf_;
};

// The tensor's elements in dtype `dt`: its own storage when the dtype already matches, else a
// converted copy in `tmp`.
const void* as_dtype(const Tensor& t, DType dt, TempBuffer& tmp);

// Small helpers.
inline const Tensor& in(const KernelArgs& a, size_t i) { return *a.inputs[i]; }
inline void* out_ptr(const KernelArgs& a) { return a.out.storage->data(); }
inline const void* in_ptr(const KernelArgs& a, size_t i) { return a.inputs[i]->storage->data(); }

}  // namespace gt::worker::cpu
