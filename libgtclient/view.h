// Views that alias, as in PyTorch: reshape/view/flatten/(un)squeeze, permute/transpose/t,
// slicing and basic indexing, expand, split/chunk parts and detach() return tensors that share
// their base's elements. An in-place write through a view changes the base, and one into the
// base changes every view of it.
//
// Workers have value semantics (every tensor id owns its elements), so aliasing lives here, in
// the client: a view remembers where its elements sit in its base (sizes, strides and offset in
// elements, PyTorch's geometry) and the base's version when its own value was last computed.
//   - A write through a view updates the view's value as any in-place op does, then writes it
//     into the base with one strided_copy_ (recorded for autograd like PyTorch's CopySlices).
//   - A base written since (through itself or another view) leaves the view stale: the next op
//     that reads the view first recomputes it with one as_strided of the base (recorded like
//     PyTorch's regenerated AsStridedBackward), so reads stay lazy and cost nothing until then.
// A view and its base share one version counter (version_of), so a saved tensor changed
// through an alias fails the backward pass as in PyTorch.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "gt/tensor.h"
#include "libgtcore/op_attrs.h"

namespace gt::detail {

// Where a tensor's elements sit in its base's row-major elements.
struct ViewGeometry {
  Shape sizes;
  std::array<int64_t, kMaxRank> strides{};
  int64_t offset = 0;

  static ViewGeometry contiguous(const Shape& sizes);
  bool is_contiguous() const;  // row-major strides (size-1 dims' strides do not matter)
  // Some element is reached through two indices: a dim of stride 0 and size > 1 (expand). The
  // views made here only overlap that way.
  bool overlaps() const;
  OpAttrs attrs() const { return make_strided(sizes, std::span(strides.data(), sizes.rank()), offset); }
};

// How a view was made, for the checks PyTorch makes before writing through it.
enum class ViewKind : uint8_t {
  kTracked,      // an ordinary view: reads and writes through it are recorded for autograd
  kDetached,     // made by detach(): writes reach the base unrecorded, whatever the base
  kNoGradMode,   // made under no_grad: unrecorded; written with grad on only if the base needs none
  kMultiOutput,  // a split/chunk part: PyTorch refuses in-place ops on it while it requires grad
};

struct ViewInfo {
  std::shared_ptr<TensorImpl> base;  // never a view itself
  ViewGeometry geometry;
  ViewKind kind = ViewKind::kTracked;
  uint32_t synced = 0;  // base->version when this view's value was last computed
  // For autograd, a view of a detach() result has that result as its base (PyTorch's
  // backward-view base: detach is a view autograd does not see through): a stale view is
  // recomputed from it and a write through the view is recorded on it. Null: `base`.
  std::shared_ptr<TensorImpl> grad_base;
  ViewGeometry grad_geometry;  // this view's geometry over grad_base
};

// The geometry of any tensor: its view's, or contiguous over itself.
ViewGeometry geometry_of(const Tensor& t);

// Geometry of the layout ops (PyTorch's rules); nullopt where reshape must copy (the new
// shape splits or merges dims whose elements are not evenly spaced).
std::optional<ViewGeometry> reshaped(const ViewGeometry& g, const Shape& shape);
ViewGeometry permuted(const ViewGeometry& g, std::span<const int64_t> perm);
// Per dim: start, step (any sign), count.
ViewGeometry sliced(const ViewGeometry& g, std::span<const SliceSpec> specs);
ViewGeometry expanded(const ViewGeometry& g, const Shape& shape);

// How a layout op maps its input's geometry to its result's (one of the functions above).
using GeometryFn = std::function<std::optional<ViewGeometry>(const ViewGeometry&)>;

// Makes `out` (the op's fresh result, computed from `src`) a view of src's base, with the
// geometry `fn` gives (the caller has checked that it gives one). Returns out.
Tensor make_view(const Tensor& src, Tensor out, const GeometryFn& fn,
                 ViewKind kind = ViewKind::kTracked);

// Marks a split/chunk part (made by slice, so a view) as one of several outputs.
void mark_split_part(const Tensor& t);

// The shared version counter: the base's for a view.
uint32_t& version_of(TensorImpl& impl);

// Recomputes a view whose base was written since its value was computed (run_op calls it for
// every input, fetch for what it fetches). Nothing for an up-to-date view or a non-view.
inline void refresh_if_stale(const Tensor& t);
void refresh_view(const Tensor& t);

// Before an in-place op on `t` whose result requires grad when `writes_grad`: the refusals
// PyTorch makes for views (a view of a leaf that requires grad; an overlapping view, except by
// fill_/zero_, which write one value everywhere; a split/chunk part, or a view made under
// no_grad, that would require grad or whose base does). Throws gt::Error naming `what`.
void check_view_write(const Tensor& t, const char* what, bool writes_grad = false);
// While one lives (on this thread), writes through overlapping views are allowed: fill_ and
// zero_ write the same value to every element, so overlap cannot make them ambiguous.
class UniformWriteScope {
 public:
  UniformWriteScope();
  ~UniformWriteScope();
  UniformWriteScope(const UniformWriteScope&) = delete;
  UniformWriteScope& operator=(const UniformWriteScope&) = delete;

 private:
  bool prev_;
};
// After an in-place op wrote view `t`'s value: writes it into the base (one strided_copy_).
void write_back_view(const Tensor& t);

inline void refresh_if_stale(const Tensor& t) {
  const ViewInfo* v = t.impl()->view.get();
  if (v != nullptr && v->synced != v->base->version) refresh_view(t);
}

}  // namespace gt::detail
