// matmul's geometry, the same on every backend: PyTorch semantics for 1-D operands (a vector is
// a [1, k] row on the left, a [k, 1] column on the right) and broadcast batch dims, flattened to
// one [m, k] @ [k, n] product per batch entry.
#pragma once

#include <cstdint>
#include <vector>

#include "libgtcore/shape.h"

namespace gt::worker {

struct MatmulPlan {
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> a_off;  // element offset of each batch entry's matrix in a / b (the
  std::vector<int64_t> b_off;  // output's entries are back to back: entry i at i * m * n)
  // b is shared by every entry and a's entries are back to back: the whole batch is one
  // [batches * m, k] @ [k, n] product.
  bool folds_into_m = false;
};

// Operand shapes already accepted by the shape rule.
MatmulPlan plan_matmul(const Shape& a, const Shape& b);

}  // namespace gt::worker
