// Internal to the CPU backend: the per-family kernel registration functions and what only the
// CPU kernel files share (temporaries, converted views, the broadcasting copy). What the CPU
// and CUDA kernels share lives in workerd/kernels/: element math (elementwise_math.h), numeric
// rules (numeric.h), conversion (convert.h), the strided N-d iterator (nd_iter.h), dtype
// dispatch and KernelArgs helpers (kernel_util.h); parallel_for is in parallel.h.
//
// Kernels run after Backend::run() has checked that every storage is large enough for its meta
// and that out.meta is exactly infer_meta(op, inputs, attrs): they may rely on consistent metas.
// They may throw std::bad_alloc for temporaries; run() turns that into a ResourceExhausted status.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "gt/core/dtype.h"
#include "gt/core/half.h"
#include "libgtcore/op_attrs.h"
#include "libgtcore/shape.h"
#include "workerd/backend.h"
#include "workerd/cpu/cpu_backend.h"
#include "workerd/cpu/parallel.h"
#include "workerd/dim_split.h"
#include "workerd/kernels/convert.h"
#include "workerd/kernels/kernel_util.h"
#include "workerd/kernels/nd_iter.h"

namespace gt::worker::cpu {

using KernelTable = std::array<CpuKernel, kNumOps>;

// One registration function per kernel family (one .cpp each):
void register_creation(KernelTable& t);     // zeros ones full arange rand randn
void register_binary(KernelTable& t);       // every kArith, kTrueDiv and kCompare op of ops.def
void register_unary(KernelTable& t);        // every kUnarySame and kUnaryFloat op of ops.def
void register_elementwise(KernelTable& t);  // where cast copy_
void register_reduce(KernelTable& t);       // sum mean max min argmax argmin cumsum
void register_matmul(KernelTable& t);       // matmul
void register_layout(KernelTable& t);       // reshape permute slice cat expand as_strided
                                            // strided_copy_
void register_indexing(KernelTable& t);     // index_select gather scatter_add index_add one_hot
void register_fill_clamp(KernelTable& t);   // masked_fill clamp
void register_reduce_stats(KernelTable& t); // var logsumexp
void register_sort(KernelTable& t);         // argsort
// A fused elementwise chain in one blocked pass (fused_chain.cpp; args checked by run_fused).
Status run_fused_chain(const FusedArgs& args);
// A matmul with its transposes folded in: one sgemm with transpose flags (matmul.cpp; args
// checked by run_matmul_t).
Status run_transposed_matmul(const TransposedMatmul& args);
// All of the above: every op's kernel (the CPU backend's table, and the sim device's kernels).
void register_all(KernelTable& t);
// (from_host and host_chunk are no kernels: Backend::run() uploads through copy_from_host.)

// A reduction's input viewed as [outer, n, inner] (workerd/dim_split.h).
using ReduceView = DimSplit;
inline ReduceView reduce_view(const Shape& s, const OpAttrs& a) { return reduce_split(s, a); }

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

// Converts n contiguous elements between dtypes (same dtype: memcpy).
void convert_n(const void* src, DType src_dt, void* dst, DType dst_dt, int64_t n);

// The tensor's elements in dtype `dt`: its own storage when the dtype already matches, else a
// converted copy in `tmp`.
const void* as_dtype(const Tensor& t, DType dt, TempBuffer& tmp);

// Copies elements (of the unsigned type U of their size) from `src` broadcast to the
// contiguous `dst` of shape `out` (src's shape must broadcast to out).
void broadcast_copy(const void* src, const Shape& src_shape, void* dst, const Shape& out,
                    size_t elem_size);

}  // namespace gt::worker::cpu
