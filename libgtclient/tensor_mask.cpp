// Boolean-mask and integer-tensor indexing with data-dependent parts (torch's t[mask],
// masked_select, t[mask] = v, index_copy_ behind t[idx] = v), composed from the op table: index_select, cumsum,
// index_add and where. Reads by a mask are sync points (the count of true elements decides the
// result's shape); writes queue without one, except a tensor value written through a mask,
// whose count is checked first so a wrong length is an error here, not a poisoned result.
#include <string>
#include <vector>

#include "gt/tensor.h"

namespace gt {
namespace {

// The mask must be bool and match t's leading dims (torch's IndexError wording).
void check_mask(const Tensor& t, const Tensor& mask, const char* what) {
  if (mask.dtype() != kBool)
    throw Error(std::string(what) + ": a mask must be a bool tensor, got " +
                dtype_name(mask.dtype()));
  if (mask.dim() > t.dim())
    throw Error(std::string(what) + ": too many indices for tensor of dimension " +
                std::to_string(t.dim()) + " (the mask has " + std::to_string(mask.dim()) + ")");
  for (int64_t d = 0; d < mask.dim(); ++d)
    if (mask.size(d) != t.size(d))
      throw Error(std::string(what) + ": the shape of the mask " + mask.shape().str() +
                  " at index " + std::to_string(d) + " does not match the shape of the indexed "
                  "tensor " + t.shape().str() + " at index " + std::to_string(d));
}

// t's shape with the mask's dims merged into one of `rows` rows.
std::vector<int64_t> rows_shape(const Tensor& t, int64_t mask_dims, int64_t rows) {
  std::vector<int64_t> s{rows};
  for (int64_t d = mask_dims; d < t.dim(); ++d) s.push_back(t.size(d));
  return s;
}

// The mask reshaped to broadcast over t's trailing dims.
Tensor mask_over(const Tensor& t, const Tensor& mask) {
  std::vector<int64_t> s = mask.sizes();
  s.resize(static_cast<size_t>(t.dim()), 1);
  return mask.reshape(s);
}

}  // namespace

Tensor Tensor::masked_index(const Tensor& mask) const {
  check_mask(*this, mask, "index");
  const std::string bits = mask.to_bytes();  // the sync point
  std::vector<int64_t> rows;
  for (size_t i = 0; i < bits.size(); ++i)
    if (bits[i] != 0) rows.push_back(static_cast<int64_t>(i));
  const int64_t n = static_cast<int64_t>(rows.size());
  return reshape(rows_shape(*this, mask.dim(), mask.numel()))
      .index_select(0, from_vector(rows, {n}, kInt64));
}

Tensor Tensor::masked_select(const Tensor& mask) const {
  if (mask.dtype() != kBool)
    throw Error(std::string("masked_select: expected a bool mask, got ") +
                dtype_name(mask.dtype()));
  const Tensor probe = where(mask, *this, *this);  // the broadcast shape, checked by where
  return expand(probe.shape()).masked_index(mask.expand(probe.shape()));
}

const Tensor& Tensor::masked_put_(const Tensor& mask, const Tensor& value) const {
  check_mask(*this, mask, "index_put_");
  if (value.numel() == 1)  // a number: a fill where the mask is true, no sync
    return copy_(where(mask_over(*this, mask), value.reshape({}).to(dtype()), *this));
  const int64_t count = mask.sum().item<int64_t>();  // sync: check value against the count
  const std::vector<int64_t> want = rows_shape(*this, mask.dim(), count);
  Tensor rows;
  try {
    rows = value.expand(want);
  } catch (const Error&) {
    throw Error("index_put_: shape mismatch: value tensor of shape " + value.shape().str() +
                " cannot be broadcast to indexing result of shape " +
                detail::to_shape(want, "index_put_").str());
  }
  if (count == 0) return *this;
  // Element k of the mask (row-major) takes value row (number of trues up to k) - 1.
  const Tensor order = mask.flatten().cumsum(0).sub(1).clamp_min(0);
  const Tensor spread = rows.index_select(0, order).reshape(shape());
  return copy_(where(mask_over(*this, mask), spread, *this));
}

const Tensor& Tensor::masked_put_(const Tensor& mask, Scalar value) const {
  check_mask(*this, mask, "index_put_");
  return copy_(where(mask_over(*this, mask), full({}, value, dtype()), *this));
}

const Tensor& Tensor::index_copy_(int64_t dim, const Tensor& index, const Tensor& source) const {
  if (index.dtype() != kInt64 && index.dtype() != kInt32)
    throw Error(std::string("index_copy_: index must be int64 or int32, got ") +
                dtype_name(index.dtype()));
  if (index.dim() > 1) throw Error("index_copy_: index must be 0-d or 1-d, got " + index.shape().str());
  if (this->dim() == 0) throw Error("index_copy_: a 0-d tensor cannot be indexed by a tensor");
  const int64_t d = dim < 0 ? dim + this->dim() : dim;
  if (d < 0 || d >= this->dim())
    throw Error("index_copy_: dim " + std::to_string(dim) + " is out of range for a " +
                std::to_string(this->dim()) + "-d tensor");
  const int64_t k = index.numel();
  std::vector<int64_t> want = sizes();
  want[static_cast<size_t>(d)] = k;
  if (source.sizes() != want && !(index.dim() == 0 && source.dim() == this->dim() - 1))
    throw Error("index_copy_: source of shape " + source.shape().str() + " does not match " +
                detail::to_shape(want, "index_copy_").str() +
                " (the tensor's shape with len(index) along dim " +
                std::to_string(d) + ")");
  if (k == 0) return *this;
  if (d != 0) {  // through a view with dim first: the write reaches this tensor
    transpose(0, d).index_copy_(0, index, source.reshape(want).transpose(0, d));
    return *this;
  }
  const int64_t n = size(0);
  // Checked once (picked out of an arange: a bad index fails here, as the one root of the
  // poison both index_adds below inherit, so it is raised once).
  const Tensor idx = arange(n, kInt64).index_select(0, index.flatten());
  // Row r takes source row j where idx[j] == r. A repeated index leaves which one unspecified
  // (as torch documents); the sum of their positions is clamped into range.
  const Tensor hit = zeros({n}, kInt64).index_add(0, idx, ones({k}, kInt64)).gt(0);
  const Tensor pos = zeros({n}, kInt64).index_add(0, idx, arange(k)).clamp_max(k - 1);
  const Tensor picked = source.to(dtype()).reshape(want).index_select(0, pos);
  std::vector<int64_t> hit_shape(static_cast<size_t>(this->dim()), 1);
  hit_shape[0] = n;
  return copy_(where(hit.reshape(hit_shape), picked, *this));
}

}  // namespace gt
