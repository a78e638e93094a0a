// Shape/dtype rules: one function for the whole op table, run by the client (so user errors throw
// at the call site), the dispatcher (to track placement and reject bad streams) and the worker
// (never trust an instruction). Every check that guards the wire lives here.
#pragma once

#include <span>

#include "libgtcore/op_attrs.h"
#include "gt/core/ops.h"
#include "libgtcore/shape.h"

namespace gt {

inline constexpr int kMaxOpInputs = 1024;

// The result's shape and dtype, or an error naming the op and what is wrong.
// For in-place ops (host_chunk, copy_) the result is the updated input's meta.
Result<TensorMeta> infer_meta(OpId op, std::span<const TensorMeta> inputs, const OpAttrs& attrs);

// Output shape of matmul for (possibly 1-D, possibly batched) operands.
Result<Shape> matmul_shape(const Shape& a, const Shape& b);

}  // namespace gt
