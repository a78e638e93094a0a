// Views that alias (view.h): their geometry, refresh after a write to the base, write-back after
// a write through the view, and the refusals PyTorch makes before such a write.
#include "libgtclient/view.h"

#include <optional>
#include <string>

#include "gt/autograd.h"
#include "libgtclient/autograd_node.h"
#include "libgtclient/run_op.h"

namespace gt::detail {

ViewGeometry ViewGeometry::contiguous(const Shape& sizes) {
  ViewGeometry g;
  g.sizes = sizes;
  int64_t stride = 1;
  for (int d = sizes.rank() - 1; d >= 0; --d) {
    g.strides[d] = stride;
    stride *= std::max<int64_t>(sizes[d], 1);
  }
  return g;
}

bool ViewGeometry::is_contiguous() const {
  if (sizes.numel() == 0) return true;
  int64_t expected = 1;
  for (int d = sizes.rank() - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

bool ViewGeometry::overlaps() const {
  if (sizes.numel() <= 1) return false;
  for (int d = 0; d < sizes.rank(); ++d)
    if (strides[d] == 0 && sizes[d] > 1) return true;
  return false;
}

ViewGeometry geometry_of(const Tensor& t) {
  const TensorImpl& impl = *t.impl();
  return impl.view ? impl.view->geometry : ViewGeometry::contiguous(impl.meta.shape);
}

// PyTorch's computeStride (aten/src/ATen/TensorUtils.cpp): walks the old dims from the last,
// grouping runs whose elements are evenly spaced ("chunks"); each chunk must be rebuilt exactly
// by a run of new dims, which then take strides inside the chunk.
std::optional<ViewGeometry> reshaped(const ViewGeometry& g, const Shape& shape) {
  ViewGeometry out;
  out.sizes = shape;
  out.offset = g.offset;
  const Shape& old = g.sizes;
  const int new_rank = shape.rank();
  if (old.rank() == 0) {
    for (int d = 0; d < new_rank; ++d) out.strides[d] = 1;
    return out;
  }
  const int64_t numel = old.numel();
  if (numel == 0) {
    if (old == shape) {
      out.strides = g.strides;
      return out;
    }
    ViewGeometry c = ViewGeometry::contiguous(shape);
    c.offset = g.offset;
    return c;
  }
  int view_d = new_rank - 1;
  int64_t chunk_base_stride = g.strides[old.rank() - 1];
  int64_t tensor_numel = 1, view_numel = 1;
  for (int tensor_d = old.rank() - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old[tensor_d];
    if (tensor_d == 0 || (old[tensor_d - 1] != 1 &&
                          g.strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        out.strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = g.strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

ViewGeometry permuted(const ViewGeometry& g, std::span<const int64_t> perm) {
  ViewGeometry out;
  out.offset = g.offset;
  for (size_t i = 0; i < perm.size(); ++i) {
    out.sizes.push_back(g.sizes[static_cast<int>(perm[i])]);
    out.strides[i] = g.strides[perm[i]];
  }
  return out;
}

ViewGeometry sliced(const ViewGeometry& g, std::span<const SliceSpec> specs) {
  ViewGeometry out = g;
  for (int d = 0; d < g.sizes.rank(); ++d) {
    const SliceSpec& s = specs[d];
    out.sizes[d] = s.count;
    if (s.count == 0) continue;  // no element: where it would start does not matter
    out.offset += s.start * g.strides[d];
    // One element: the step is never taken (and may be as large as the dim).
    if (s.count > 1) out.strides[d] = g.strides[d] * s.step;
  }
  return out;
}

ViewGeometry expanded(const ViewGeometry& g, const Shape& shape) {
  ViewGeometry out;
  out.sizes = shape;
  out.offset = g.offset;
  const int shift = shape.rank() - g.sizes.rank();
  for (int d = 0; d < shape.rank(); ++d) {
    const int od = d - shift;
    out.strides[d] = (od < 0 || (g.sizes[od] == 1 && shape[d] != 1)) ? 0 : g.strides[od];
  }
  return out;
}

Tensor make_view(const Tensor& src, Tensor out, const GeometryFn& fn, ViewKind kind) {
  const TensorImpl& s = *src.impl();
  auto info = std::make_shared<ViewInfo>();
  info->base = s.view ? s.view->base : src.impl();
  info->geometry = *fn(geometry_of(src));
  // detach() makes a view that autograd does not see through: views of it have it as their
  // autograd base (PyTorch's backward-view base), whatever it aliases.
  const bool from_detached = s.view && s.view->kind == ViewKind::kDetached;
  const TensorImpl* grad_src = from_detached ? &s : (s.view ? s.view->grad_base.get() : nullptr);
  if (grad_src != nullptr) {
    std::optional<ViewGeometry> gg =
        fn(from_detached ? ViewGeometry::contiguous(s.meta.shape) : s.view->grad_geometry);
    if (gg) {
      info->grad_base = from_detached ? src.impl() : s.view->grad_base;
      info->grad_geometry = *gg;
    }
  }
  // A view of a no-grad or split/chunk view is one too (PyTorch propagates its creation meta);
  // an ordinary one made under no_grad records nothing either.
  const ViewKind parent = s.view && !from_detached ? s.view->kind : ViewKind::kTracked;
  if (kind != ViewKind::kDetached && parent == ViewKind::kNoGradMode)
    kind = parent;
  else if (kind == ViewKind::kTracked && parent == ViewKind::kMultiOutput)
    kind = parent;
  if ((kind == ViewKind::kTracked || kind == ViewKind::kMultiOutput) && !is_grad_enabled())
    kind = ViewKind::kNoGradMode;
  info->kind = kind;
  info->synced = info->base->version;
  out.impl()->view = std::move(info);
  return out;
}

void mark_split_part(const Tensor& t) {
  ViewInfo* v = t.impl()->view.get();
  if (v != nullptr && v->kind == ViewKind::kTracked) v->kind = ViewKind::kMultiOutput;
}

uint32_t& version_of(TensorImpl& impl) {
  return impl.view ? impl.view->base->version : impl.version;
}

void refresh_view(const Tensor& t) {
  TensorImpl& impl = *t.impl();
  ViewInfo& v = *impl.view;
  const bool tracked = v.kind == ViewKind::kTracked || v.kind == ViewKind::kMultiOutput;
  Tensor fresh;
  {
    // Recorded (or not) by how the view was made, not by the grad mode of whoever reads it.
    std::optional<NoGradGuard> off;
    std::optional<EnableGradGuard> on;
    if (tracked) on.emplace();
    else off.emplace();
    if (tracked && v.grad_base) {  // from the leaf it is a view of (itself a fresh view then)
      Tensor leaf(v.grad_base);
      refresh_if_stale(leaf);
      fresh = run_op(OpId::k_as_strided, v.grad_geometry.attrs(), {&leaf});
    } else {
      Tensor base(v.base);
      fresh = run_op(OpId::k_as_strided, v.geometry.attrs(), {&base});
    }
  }
  std::swap(impl.id, fresh.impl()->id);  // `fresh` frees the stale value
  if (tracked && !impl.requires_grad) {
    impl.grad_fn = std::move(fresh.impl()->grad_fn);
    if (impl.grad_fn) static_cast<autograd::detail::Node*>(impl.grad_fn.get())->out_weak = t.impl();
  }
  v.synced = v.base->version;
}

namespace {
thread_local bool t_uniform_write = false;
}  // namespace

UniformWriteScope::UniformWriteScope() : prev_(t_uniform_write) { t_uniform_write = true; }
UniformWriteScope::~UniformWriteScope() { t_uniform_write = prev_; }

void check_view_write(const Tensor& t, const char* what, bool writes_grad) {
  const ViewInfo* v = t.impl()->view.get();
  if (v == nullptr) return;
  if (v->geometry.overlaps() && !t_uniform_write)
    throw Error(std::string(what) +
                ": unsupported operation: more than one element of the written-to tensor refers "
                "to a single memory location (an expanded view); clone() it before writing");
  if (!is_grad_enabled()) return;
  // PyTorch's checks (torch/csrc/autograd/VariableTypeUtils.h, check_inplace): against the
  // autograd base, and whether the view, or the value written into it, requires grad.
  const TensorImpl& base = v->grad_base ? *v->grad_base : *v->base;
  const bool base_needs_grad = base.grad_fn != nullptr || base.requires_grad;
  switch (v->kind) {
    case ViewKind::kDetached: return;  // writes go to the base, unrecorded (PyTorch's .detach())
    case ViewKind::kNoGradMode:
      if (base_needs_grad || writes_grad)
        throw Error(std::string(what) +
                    ": a view created in no_grad mode is being modified in place with grad mode "
                    "enabled, and it or its base requires grad; modify it under no_grad or "
                    "clone() it");
      return;
    case ViewKind::kMultiOutput:
      if (t.requires_grad() || writes_grad)
        throw Error(std::string(what) +
                    ": this view is an output of split/chunk, which returns several views; such "
                    "views cannot be modified in place when they require grad (use an "
                    "out-of-place op, or clone() it first)");
      [[fallthrough]];
    case ViewKind::kTracked:
      if (t.requires_grad() && base.grad_fn == nullptr)
        throw Error(std::string(what) +
                    ": a view of a leaf tensor that requires grad is being used in an in-place "
                    "operation; " + autograd::detail::kLeafInPlaceRemedy);
      return;
  }
}

void write_back_view(const Tensor& t) {
  ViewInfo& v = *t.impl()->view;
  const bool tracked = v.kind == ViewKind::kTracked || v.kind == ViewKind::kMultiOutput;
  Tensor base(v.base);
  {
    // Recorded on the base's history, unless the view's autograd base is another tensor (a
    // view of a detached one): then the elements go to the base unrecorded and that tensor
    // records the write (PyTorch's CopySlices on the backward-view base).
    std::optional<NoGradGuard> off;
    if (!tracked || v.grad_base) off.emplace();
    run_op(OpId::k_strided_copy_, v.geometry.attrs(), {&base, &t});
  }
  if (tracked && v.grad_base && is_grad_enabled()) {
    Tensor grad_base(v.grad_base);
    const Tensor* inputs[] = {&grad_base, &t};
    autograd::detail::record_in_place(OpId::k_strided_copy_, v.grad_geometry.attrs(), inputs);
  }
  v.synced = v.base->version;
}

}  // namespace gt::detail
