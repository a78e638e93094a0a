// Layout and dtype ops: reshape/view (with -1 resolved here), permute/transpose, (un)squeeze,
// cat, casts and copy_. The layout ops return views of their input (libgtclient/view.h): one
// instruction computes the view's value, and its geometry is kept here.
#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

#include "gt/tensor.h"
#include "libgtcore/shape_rules.h"
#include "libgtclient/run_op.h"
#include "libgtclient/view.h"

namespace gt {
namespace {

using detail::run_op;

// A view of x when the strides allow it (always for a contiguous x), else a copy (PyTorch's
// reshape), or an error for `view`, which never copies.
Tensor reshape_to(const Tensor& x, const Shape& s, bool must_view = false) {
  const bool viewable = detail::reshaped(detail::geometry_of(x), s).has_value();
  if (!viewable && must_view)
    throw Error("view: view size is not compatible with input tensor's size and stride (at least "
                "one dimension spans across two contiguous subspaces); use .reshape(...) instead");
  Tensor r = run_op(OpId::k_reshape, make_reshape(s), {&x});
  if (!viewable) return r;
  return detail::make_view(x, std::move(r),
                           [&](const detail::ViewGeometry& g) { return detail::reshaped(g, s); });
}

// Resolves one -1 in `dims` against x's element count (PyTorch's infer_size).
Shape resolve_reshape(const Tensor& x, const Dims& dims) {
  Shape s = detail::to_shape(dims, "reshape");
  const int64_t numel = x.numel();
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < s.rank(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) throw Error("reshape: only one dimension can be inferred");
      infer = i;
    } else if (s[i] < 0) {
      throw Error("reshape: invalid shape dimension " + std::to_string(s[i]));
    } else {
      if (s[i] != 0 && known > kMaxNumel / s[i])
        throw Error("reshape: shape " + s.str() + " has too many elements");
      known *= s[i];
    }
  }
  if (infer >= 0) {
    if (known == 0) {
      if (numel == 0)
        throw Error("reshape: cannot reshape a tensor of 0 elements into shape " + s.str() +
                    " because the unspecified dimension size -1 can be any value and is "
                    "ambiguous");
      throw Error("reshape: shape " + s.str() + " is invalid for input of size " +
                  std::to_string(numel));
    }
    if (numel % known != 0)
      throw Error("reshape: shape " + s.str() + " is invalid for input of size " +
                  std::to_string(numel));
    s[infer] = numel / known;
  }
  return s;
}

Tensor permute_to(const Tensor& x, std::span<const int64_t> perm) {
  return detail::make_view(x, run_op(OpId::k_permute, make_permute(perm), {&x}),
                           [&](const detail::ViewGeometry& g) {
                             return std::optional(detail::permuted(g, perm));
                           });
}

}  // namespace

Tensor Tensor::reshape(Dims shape) const {
  return reshape_to(*this, resolve_reshape(*this, shape));
}

Tensor Tensor::view(Dims shape) const {
  return reshape_to(*this, resolve_reshape(*this, shape), /*must_view=*/true);
}

bool Tensor::is_contiguous() const {
  checked();
  return detail::geometry_of(*this).is_contiguous();
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

std::vector<int64_t> Tensor::stride() const {
  checked();
  const detail::ViewGeometry g = detail::geometry_of(*this);
  return {g.strides.begin(), g.strides.begin() + g.sizes.rank()};
}

int64_t Tensor::storage_offset() const {
  checked();
  return detail::geometry_of(*this).offset;
}

Tensor Tensor::flatten() const { return reshape_to(*this, Shape{numel()}); }

Tensor Tensor::permute(Dims dims) const {
  const int64_t r = dim();
  if (static_cast<int64_t>(dims.size()) != r)
    throw Error("permute: " + std::to_string(dims.size()) + " dims given for a tensor of rank " +
                std::to_string(r));
  std::vector<int64_t> perm(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    perm[i] = detail::normalize_dim_or_throw(dims[i], r, "permute");
  return permute_to(*this, perm);
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  const int64_t r = dim();
  int64_t d0 = detail::normalize_dim_or_throw(dim0, r, "transpose");
  int64_t d1 = detail::normalize_dim_or_throw(dim1, r, "transpose");
  std::vector<int64_t> perm(static_cast<size_t>(r));
  std::iota(perm.begin(), perm.end(), 0);
  if (r > 0) std::swap(perm[d0], perm[d1]);
  return permute_to(*this, perm);
}

Tensor Tensor::t() const {
  const int64_t r = dim();
  if (r > 2)
    throw Error("t: expects a tensor with <= 2 dimensions, but got " + std::to_string(r) + "-D");
  return r == 2 ? transpose(0, 1) : permute_to(*this, std::vector<int64_t>(r, 0));
}

Tensor Tensor::unsqueeze(int64_t d) const {
  const Shape& s = shape();
  if (s.rank() >= kMaxRank)
    throw Error("unsqueeze: rank would exceed the maximum of " + std::to_string(kMaxRank));
  int64_t nd = detail::normalize_dim_or_throw(d, s.rank() + 1, "unsqueeze");
  Shape out;
  for (int i = 0; i < s.rank(); ++i) {
    if (i == nd) out.push_back(1);
    out.push_back(s[i]);
  }
  if (nd == s.rank()) out.push_back(1);
  return reshape_to(*this, out);
}

Tensor Tensor::squeeze() const {
  Shape out;
  for (int64_t v : shape())
    if (v != 1) out.push_back(v);
  return reshape_to(*this, out);
}

Tensor Tensor::squeeze(int64_t d) const {
  const Shape& s = shape();
  int64_t nd = detail::normalize_dim_or_throw(d, s.rank(), "squeeze");
  Shape out;
  for (int i = 0; i < s.rank(); ++i)
    if (i != nd || s[i] != 1) out.push_back(s[i]);
  return reshape_to(*this, out);
}

Tensor Tensor::to(DType dtype) const {
  if (this->dtype() == dtype) return *this;
  return cast(dtype);
}

Tensor Tensor::cast(DType dtype) const { return run_op(OpId::k_cast, make_cast(dtype), {this}); }

const Tensor& Tensor::copy_(const Tensor& src) const {
  run_op(OpId::k_copy_, OpAttrs{}, {this, &src});
  return *this;
}

Tensor reshape(const Tensor& x, Dims shape) { return x.reshape(std::move(shape)); }
Tensor permute(const Tensor& x, Dims dims) { return x.permute(std::move(dims)); }
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) { return x.transpose(dim0, dim1); }

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw Error("cat: expects a non-empty list of tensors");
  if (tensors.size() > static_cast<size_t>(kMaxOpInputs))
    throw Error("cat: at most " + std::to_string(kMaxOpInputs) + " tensors, got " +
                std::to_string(tensors.size()));
  // PyTorch's legacy rule: a 1-d tensor of size 0 is skipped whatever the others' shapes (so
  // `acc = torch.tensor([])` can start a concatenation of matrices); its dtype still promotes.
  auto legacy_empty = [](const Tensor& t) { return t.defined() && t.dim() == 1 && t.numel() == 0; };
  // When every input is one, they all concatenate (along their one dim) as usual.
  const bool all_empty = std::all_of(tensors.begin(), tensors.end(), legacy_empty);
  if (all_empty) dim = 0;
  std::vector<const Tensor*> inputs;
  inputs.reserve(tensors.size());
  DType promoted = tensors[0].defined() ? tensors[0].dtype() : DType::kFloat32;
  bool skipped = false;
  for (const Tensor& t : tensors) {
    if (t.defined()) promoted = promote(promoted, t.dtype());
    if (legacy_empty(t) && !all_empty) {
      skipped = true;
      continue;
    }
    inputs.push_back(&t);
  }
  std::vector<Tensor> cast_inputs;
  if (skipped) {  // the skipped ones' dtypes still count
    cast_inputs.reserve(inputs.size());
    for (const Tensor* t : inputs) cast_inputs.push_back(t->to(promoted));
    for (size_t i = 0; i < inputs.size(); ++i) inputs[i] = &cast_inputs[i];
  }
  // Normalize the axis against the first tensor (the rule checks the others).
  if (inputs[0]->defined() && inputs[0]->dim() > 0)
    dim = detail::normalize_dim_or_throw(dim, inputs[0]->dim(), "cat");
  Tensor r = run_op(OpId::k_cat, make_axis(dim), inputs);
  // A skipped input that requires grad still gets its (empty) gradient, as in PyTorch:
  // subtracting its sum (exactly 0) keeps every value, -0.0 included, and links it in.
  for (const Tensor& t : tensors)
    if (legacy_empty(t) && t.requires_grad()) r = r - t.sum();
  return r;
}

}  // namespace gt
