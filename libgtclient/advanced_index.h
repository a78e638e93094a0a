// Advanced indexing: Tensor::index / index_put_ with tensors among the indices
// (advanced_index.cpp).
#pragma once

#include <vector>

#include "gt/tensor.h"

namespace gt::detail {

bool has_tensor_index(const std::vector<TensorIndex>& indices);
Tensor advanced_index(const Tensor& t, const std::vector<TensorIndex>& indices);
const Tensor& advanced_index_put_(const Tensor& t, const std::vector<TensorIndex>& indices,
                                  const Tensor& value);

}  // namespace gt::detail
