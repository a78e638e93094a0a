// Advanced indexing (PyTorch's): index expressions holding tensors, t[idx0, :, idx1] and
// t[idx0, :, idx1] = v. Lowered to the op table:
//   1. bool masks become their coordinate tensors (a sync point: the count decides the shape);
//   2. the basic part (ints, slices, None, ...) is applied with full slices where the tensors
//      stand: a view of t;
//   3. that view is permuted so the indexed dims come first; the index tensors, broadcast
//      together, become one linear position into those dims (each checked against its dim's
//      size on the worker by picking it out of an arange, so a bad index poisons the result,
//      as every worker-side error does, and names the value the user gave);
//   4. one index_select reads the rows (one index_copy_ writes them), and the picked dims go
//      where torch puts them: in place of the indexed dims when those were next to each other,
//      else first.
// A sole bool mask keeps its direct forms (masked_index / masked_put_): no coordinates.
#include "libgtclient/advanced_index.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "gt/tensor.h"
#include "libgtcore/shape.h"

namespace gt {

TensorIndex::TensorIndex(const Tensor& t)
    : kind_(Kind::kTensor), tensor_(std::make_shared<const Tensor>(t)) {}

namespace detail {
namespace {

// The expression with its tensors split out: `basic` has a full slice where each stood (a bool
// mask of k dims: k of them), `dims` the dim of the basic result each index tensor picks along.
struct Split {
  std::vector<TensorIndex> basic;
  std::vector<int64_t> dims;
  std::vector<Tensor> index;  // int64, one per entry of dims
};

std::string shape_str(const std::vector<int64_t>& s) {
  return detail::to_shape(s, "index").str();
}

// reshape / permute / expand that emit nothing when there is nothing to do (each op counts on
// the hot path of every t[idx]).
Tensor reshaped(const Tensor& t, const std::vector<int64_t>& shape) {
  return t.sizes() == shape ? t : t.reshape(shape);
}
Tensor permuted(const Tensor& t, const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return t.permute(perm);
  return t;
}
Tensor expanded(const Tensor& t, const std::vector<int64_t>& shape) {
  return t.sizes() == shape ? t : t.expand(shape);
}

// The coordinates of a bool mask's true elements, one int64 tensor per mask dim (row-major
// order, as torch.nonzero): read back, so a sync point.
std::vector<Tensor> mask_coordinates(const Tensor& mask) {
  const std::string bits = mask.to_bytes();
  const std::vector<int64_t> sizes = mask.sizes();
  std::vector<std::vector<int64_t>> coords(sizes.size());
  for (size_t flat = 0; flat < bits.size(); ++flat) {
    if (bits[flat] == 0) continue;
    int64_t rest = static_cast<int64_t>(flat);
    for (size_t d = sizes.size(); d-- > 0;) {
      coords[d].push_back(rest % sizes[d]);
      rest /= sizes[d];
    }
  }
  std::vector<Tensor> out;
  for (auto& c : coords) {
    const int64_t n = static_cast<int64_t>(c.size());
    out.push_back(from_vector(c, {n}, kInt64));
  }
  return out;
}

Split split(const Tensor& t, const std::vector<TensorIndex>& indices) {
  const int64_t rank = t.dim();
  int64_t consuming = 0;
  for (const TensorIndex& ix : indices) {
    if (ix.is_integer() || ix.is_slice()) ++consuming;
    if (ix.is_tensor())
      consuming += ix.tensor().dtype() == kBool ? ix.tensor().dim() : 1;
  }
  if (consuming > rank)
    throw Error("index: too many indices for a tensor of dimension " + std::to_string(rank) +
                " (got " + std::to_string(consuming) + ")");
  Split s;
  int64_t in = 0, out = 0;  // the next dim of t, of the basic result
  for (const TensorIndex& ix : indices) {
    switch (ix.kind()) {
      case TensorIndex::Kind::kInteger:
        ++in;
        break;
      case TensorIndex::Kind::kSlice:
        ++in, ++out;
        break;
      case TensorIndex::Kind::kNone:
        ++out;
        break;
      case TensorIndex::Kind::kEllipsis:
        in += rank - consuming, out += rank - consuming;
        break;
      case TensorIndex::Kind::kTensor: {
        const Tensor& x = ix.tensor();
        if (x.dtype() == kBool) {
          if (x.dim() == 0)
            throw Error("index: a 0-d bool index inside an index expression is not supported");
          for (int64_t d = 0; d < x.dim(); ++d)
            if (x.size(d) != t.size(in + d))
              throw Error("index: the shape of the mask " + x.shape().str() + " at index " +
                          std::to_string(d) + " does not match the shape of the indexed tensor " +
                          t.shape().str() + " at index " + std::to_string(in + d));
          for (Tensor& c : mask_coordinates(x)) {
            s.basic.emplace_back(Slice());
            s.dims.push_back(out++);
            s.index.push_back(std::move(c));
            ++in;
          }
          continue;
        }
        if (x.dtype() != kInt64 && x.dtype() != kInt32)
          throw Error(std::string("index: tensors used as indices must be int64, int32 or bool "
                                  "tensors, got ") + dtype_name(x.dtype()));
        s.basic.emplace_back(Slice());
        s.dims.push_back(out++);
        s.index.push_back(x.to(kInt64));
        ++in;
        continue;
      }
    }
    s.basic.push_back(ix);
  }
  return s;
}

int64_t count_of(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

// What the index tensors pick from the basic result `v`: `moved` is v with the indexed dims
// first, `position` the flat position among them of each picked element (in `picked` order).
struct Plan {
  Tensor moved;                 // v permuted: indexed dims first, then the rest in order
  Tensor position;              // int64, 1-d, checked against the sizes on the worker
  std::vector<int64_t> picked;  // the index tensors' broadcast shape
  std::vector<int64_t> rest;    // the sizes of v's other dims, in order
  int64_t first = 0;            // where torch puts the picked dims in the result
};

Plan plan(const Tensor& v, const Split& s) {
  Plan p;
  const size_t k = s.dims.size();
  Shape b;
  for (const Tensor& x : s.index) {
    auto r = broadcast_shapes(b, x.shape());
    if (!r) {
      std::string shapes;
      for (const Tensor& y : s.index) shapes += (shapes.empty() ? "" : ", ") + y.shape().str();
      throw Error("index: shape mismatch: indexing tensors could not be broadcast together "
                  "with shapes " + shapes);
    }
    b = *r;
  }
  p.picked.assign(b.begin(), b.end());
  std::vector<int64_t> order(s.dims);
  for (int64_t d = 0; d < v.dim(); ++d)
    if (std::find(s.dims.begin(), s.dims.end(), d) == s.dims.end()) {
      order.push_back(d);
      p.rest.push_back(v.size(d));
    }
  p.moved = permuted(v, order);
  bool adjacent = true;
  for (size_t j = 1; j < k; ++j) adjacent &= s.dims[j] == s.dims[0] + static_cast<int64_t>(j);
  p.first = adjacent ? s.dims[0] : 0;

  // The linear position: sum of index_j * (product of the later indexed sizes).
  int64_t stride = 1;
  for (size_t j = k; j-- > 0;) {
    const int64_t size = v.size(s.dims[j]);
    const Tensor& x = s.index[j];
    Tensor at = reshaped(expanded(where(x < 0, x + size, x), p.picked), {count_of(p.picked)});
    // A lone index is checked by the index_select / index_copy_ that uses it; several are each
    // checked here against their own dim (the linear position could hide a bad one).
    if (k > 1) at = arange(size, kInt64).index_select(0, at);
    if (stride != 1) at = at * stride;
    p.position = p.position.defined() ? p.position + at : at;
    stride *= size;
  }
  return p;
}

// The permutation from [picked dims, rest] (the order rows come out in) to torch's order.
std::vector<int64_t> torch_order(const Plan& p) {
  const int64_t nb = static_cast<int64_t>(p.picked.size());
  const int64_t nr = static_cast<int64_t>(p.rest.size());
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < p.first; ++d) perm.push_back(nb + d);
  for (int64_t d = 0; d < nb; ++d) perm.push_back(d);
  for (int64_t d = p.first; d < nr; ++d) perm.push_back(nb + d);
  return perm;
}

std::vector<int64_t> rows_shape(const Plan& p, int64_t rows) {
  std::vector<int64_t> s{rows};
  s.insert(s.end(), p.rest.begin(), p.rest.end());
  return s;
}

bool sole_mask(const std::vector<TensorIndex>& indices) {
  return indices.size() == 1 && indices[0].is_tensor() && indices[0].tensor().dtype() == kBool &&
         indices[0].tensor().dim() > 0;
}

}  // namespace

bool has_tensor_index(const std::vector<TensorIndex>& indices) {
  for (const TensorIndex& ix : indices)
    if (ix.is_tensor()) return true;
  return false;
}

Tensor advanced_index(const Tensor& t, const std::vector<TensorIndex>& indices) {
  if (sole_mask(indices)) return t.masked_index(indices[0].tensor());
  const Split s = split(t, indices);
  const Plan p = plan(t.index(s.basic), s);
  const int64_t k = static_cast<int64_t>(s.dims.size());
  int64_t count = 1;
  for (int64_t j = 0; j < k; ++j) count *= p.moved.size(j);
  const Tensor rows = k == 1 ? p.moved : reshaped(p.moved, rows_shape(p, count));
  std::vector<int64_t> shape = p.picked;
  shape.insert(shape.end(), p.rest.begin(), p.rest.end());
  return permuted(reshaped(rows.index_select(0, p.position), shape), torch_order(p));
}

const Tensor& advanced_index_put_(const Tensor& t, const std::vector<TensorIndex>& indices,
                                  const Tensor& value) {
  if (sole_mask(indices)) return t.masked_put_(indices[0].tensor(), value);
  const Split s = split(t, indices);
  const Plan p = plan(t.index(s.basic), s);  // p.moved is a view of t: writes reach t
  const int64_t k = static_cast<int64_t>(s.dims.size());

  // The value, broadcast to the result's shape in torch's order, as rows in the plan's order.
  const std::vector<int64_t> perm = torch_order(p);
  std::vector<int64_t> result(perm.size());
  std::vector<int64_t> shape = p.picked;
  shape.insert(shape.end(), p.rest.begin(), p.rest.end());
  for (size_t i = 0; i < perm.size(); ++i) result[i] = shape[static_cast<size_t>(perm[i])];
  Tensor src;
  try {
    src = expanded(value.to(t.dtype()), result);
  } catch (const Error&) {
    throw Error("index_put_: shape mismatch: value tensor of shape " + value.shape().str() +
                " cannot be broadcast to indexing result of shape " + shape_str(result));
  }
  std::vector<int64_t> back(perm.size());  // torch's order -> the plan's order
  for (size_t i = 0; i < perm.size(); ++i) back[static_cast<size_t>(perm[i])] =
      static_cast<int64_t>(i);
  const Tensor rows_src = reshaped(permuted(src, back), rows_shape(p, p.position.numel()));

  if (k == 1) {
    p.moved.index_copy_(0, p.position, rows_src);
    return t;
  }
  int64_t count = 1;
  for (int64_t j = 0; j < k; ++j) count *= p.moved.size(j);
  if (p.moved.is_contiguous()) {  // the indexed dims merge into one: written through a view
    p.moved.view(rows_shape(p, count)).index_copy_(0, p.position, rows_src);
    return t;
  }
  const Tensor staged = p.moved.clone();  // else through a contiguous copy, written back
  staged.view(rows_shape(p, count)).index_copy_(0, p.position, rows_src);
  p.moved.copy_(staged);
  return t;
}

}  // namespace detail
}  // namespace gt
