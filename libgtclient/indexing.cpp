// slice / select / index: Python-style indexing lowered to at most one slice instruction (all
// dims at once) plus one reshape when dims are dropped or inserted. Each result is a view of the
// indexed tensor (libgtclient/view.h).
#include <array>
#include <string>

#include "gt/autograd.h"
#include "gt/tensor.h"
#include "libgtclient/advanced_index.h"
#include "libgtclient/run_op.h"
#include "libgtclient/view.h"

namespace gt {
namespace {

using detail::run_op;
using Specs = std::array<SliceSpec, kMaxRank>;

Specs identity_specs(const Shape& s) {
  Specs specs{};
  for (int d = 0; d < s.rank(); ++d) specs[d] = SliceSpec{0, s[d], 1};
  return specs;
}

bool is_identity(const Shape& s, const Specs& specs) {
  // count == n forces start 0 and step 1 when n >= 2; for n <= 1 any step reads the same data.
  for (int d = 0; d < s.rank(); ++d)
    if (specs[d].count != s[d] || specs[d].start != 0) return false;
  return true;
}

Tensor emit_slice(const Tensor& x, const Specs& specs) {
  OpAttrs a;
  a.has_shape = true;
  for (int d = 0; d < x.shape().rank(); ++d) {
    a.shape.push_back(specs[d].count);
    a.push_int(specs[d].start);
    a.push_int(specs[d].step);
  }
  const std::span<const SliceSpec> dims(specs.data(), static_cast<size_t>(x.shape().rank()));
  return detail::make_view(x, run_op(OpId::k_slice, a, {&x}), [&](const detail::ViewGeometry& g) {
    return std::optional(detail::sliced(g, dims));
  });
}

SliceSpec resolve_or_throw(int64_t n, const Slice& sl, const char* what) {
  auto r = resolve_slice(n, sl.start(), sl.stop(), sl.step());
  if (!r) throw Error(std::string(what) + ": " + r.status().message());
  return *r;
}

int64_t resolve_index(int64_t index, int64_t dim, int64_t n, const char* what) {
  if (index < -n || index >= n)
    throw Error(std::string(what) + ": index " + std::to_string(index) +
                " is out of range for dim " + std::to_string(dim) + " with size " +
                std::to_string(n));
  return index < 0 ? index + n : index;
}

}  // namespace

Tensor Tensor::slice(int64_t dim, SliceBound start, SliceBound end, int64_t step) const {
  const Shape& s = shape();
  if (s.rank() == 0) throw Error("slice: cannot be applied to a 0-dim tensor");
  int64_t d = detail::normalize_dim_or_throw(dim, s.rank(), "slice");
  Specs specs = identity_specs(s);
  specs[d] = resolve_or_throw(s[d], Slice(start, end, step), "slice");
  return emit_slice(*this, specs);
}

Tensor Tensor::select(int64_t dim, int64_t index) const {
  const Shape& s = shape();
  if (s.rank() == 0) throw Error("select: cannot be applied to a 0-dim tensor");
  int64_t d = detail::normalize_dim_or_throw(dim, s.rank(), "select");
  Specs specs = identity_specs(s);
  specs[d] = SliceSpec{resolve_index(index, d, s[d], "select"), 1, 1};
  Tensor y = emit_slice(*this, specs);
  Shape out;
  for (int i = 0; i < s.rank(); ++i)
    if (i != d) out.push_back(s[i]);
  return y.reshape(out);  // drops a size-1 dim: always a view
}

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const {
  return index(std::vector<TensorIndex>(indices));
}

namespace {

// What t.index(indices) selects: one slice of every dim, then the result's shape (integer
// indices drop their dim, None adds one).
struct IndexPlan {
  Specs specs;
  Shape out;
};

IndexPlan plan_index(const Shape& s, const std::vector<TensorIndex>& indices) {
  const int rank = s.rank();
  int consuming = 0, ellipses = 0, integers = 0, new_axes = 0;
  for (const TensorIndex& ix : indices) {
    if (ix.is_integer() || ix.is_slice()) ++consuming;
    if (ix.is_integer()) ++integers;
    if (ix.is_none()) ++new_axes;
    if (ix.is_ellipsis()) ++ellipses;
  }
  if (ellipses > 1) throw Error("index: an index can only have a single ellipsis ('...')");
  if (consuming > rank)
    throw Error("index: too many indices for a tensor of dimension " + std::to_string(rank) +
                " (got " + std::to_string(consuming) + ")");
  if (rank - integers + new_axes > kMaxRank)
    throw Error("index: the result's rank would exceed the maximum of " +
                std::to_string(kMaxRank));

  IndexPlan p{identity_specs(s), {}};
  int d = 0;  // next input dim
  for (const TensorIndex& ix : indices) {
    switch (ix.kind()) {
      case TensorIndex::Kind::kInteger:
        p.specs[d] = SliceSpec{resolve_index(ix.integer(), d, s[d], "index"), 1, 1};
        ++d;
        break;
      case TensorIndex::Kind::kSlice:
        p.specs[d] = resolve_or_throw(s[d], ix.slice(), "index");
        p.out.push_back(p.specs[d].count);
        ++d;
        break;
      case TensorIndex::Kind::kNone:
        p.out.push_back(1);
        break;
      case TensorIndex::Kind::kEllipsis:
        for (int k = 0; k < rank - consuming; ++k, ++d) p.out.push_back(s[d]);
        break;
      case TensorIndex::Kind::kTensor:  // Tensor::index sends these to advanced_index
        throw Error("index: internal: a tensor index reached the basic plan");
    }
  }
  for (; d < rank; ++d) p.out.push_back(s[d]);
  return p;
}

}  // namespace

Tensor Tensor::index(const std::vector<TensorIndex>& indices) const {
  if (detail::has_tensor_index(indices)) return detail::advanced_index(*this, indices);
  const IndexPlan p = plan_index(shape(), indices);
  Tensor y = is_identity(shape(), p.specs) ? *this : emit_slice(*this, p.specs);
  if (p.out != y.shape()) y = y.reshape(p.out);  // drops or adds size-1 dims: always a view
  return y;
}

const Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices,
                                 const Tensor& value) const {
  if (detail::has_tensor_index(indices)) return detail::advanced_index_put_(*this, indices, value);
  if (is_view()) {  // through the view's own machinery (its base, kinds and refusals)
    index(indices).copy_(value);
    return *this;
  }
  // A tensor that is no view: the selected elements are written in place with one
  // strided_copy_, without materializing the view first. The value is broadcast and converted
  // as copy_ does; autograd records the write as a write through the view (CopySlices).
  const IndexPlan p = plan_index(shape(), indices);
  const detail::ViewGeometry g = *detail::reshaped(
      detail::sliced(detail::ViewGeometry::contiguous(shape()),
                     std::span(p.specs.data(), static_cast<size_t>(shape().rank()))),
      p.out);
  if (is_grad_enabled() && impl()->requires_grad && !impl()->grad_fn)
    throw Error("index_put_: a view of a leaf tensor that requires grad is being used in an "
                "in-place operation; modify it under gt::NoGradGuard (as optimizers do)");
  Tensor src = value.to(dtype());
  if (src.shape() != p.out) src = src.expand(p.out);  // copy_'s broadcasting, its checks
  run_op(OpId::k_strided_copy_, g.attrs(), {this, &src});
  return *this;
}

const Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, Scalar value) const {
  return index_put_(indices, full({}, value, dtype()));  // as fill_ converts it
}

}  // namespace gt
