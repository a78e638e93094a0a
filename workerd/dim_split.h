// A shape viewed as [outer, n, inner] around one dim: the geometry every reduction, indexing op
// and cat works in, on every backend (cpu/ and cuda/ share this one definition).
#pragma once

#include <cstdint>

#include "libgtcore/op_attrs.h"
#include "libgtcore/shape.h"

namespace gt::worker {

struct DimSplit {
  int64_t outer = 1, n = 1, inner = 1;
};

// A possibly negative dim of a rank-`rank` shape as an index (a 0-d shape counts as rank 1).
// The shape rule has already checked the range.
inline int normalized_dim(int64_t dim, int rank) {
  const int r = rank == 0 ? 1 : rank;
  return static_cast<int>(dim < 0 ? dim + r : dim);
}

// [outer, n, inner] around dim `d` of `s` (a 0-d shape is [1, 1, 1]).
inline DimSplit split_at(const Shape& s, int d) {
  DimSplit a;
  for (int i = 0; i < s.rank(); ++i) {
    if (i < d) a.outer *= s[i];
    else if (i == d) a.n = s[i];
    else a.inner *= s[i];
  }
  return a;
}

// A reduction's input as [outer, n, inner], n the reduced extent (all elements, or a 0-d input:
// [1, numel, 1]); attrs are kReduce's (dim already validated by the shape rule).
inline DimSplit reduce_split(const Shape& s, const OpAttrs& a) {
  if (a.reduce_all() || s.rank() == 0) {
    DimSplit v;
    for (int i = 0; i < s.rank(); ++i) v.n *= s[i];
    return v;
  }
  return split_at(s, normalized_dim(a.reduce_dim(), s.rank()));
}

}  // namespace gt::worker
