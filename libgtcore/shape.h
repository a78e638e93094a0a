// Shape helpers that validate (gt::Status / gt::Result) on top of gt/core/shape.h's Shape and
// TensorMeta: broadcasting, dim normalization and size limits.
#pragma once

#include "gt/core/shape.h"
#include "libgtcore/status.h"

namespace gt {

// numpy/PyTorch broadcasting of two shapes.
Result<Shape> broadcast_shapes(const Shape& a, const Shape& b);

// Normalizes a possibly negative dim against `rank` (Python style); error names the op.
Result<int> normalize_dim(int64_t dim, int rank, const char* what);

// Checks that a shape is non-negative and its element count and byte size stay within limits.
Status check_shape_size(const Shape& s, DType dt);

}  // namespace gt
