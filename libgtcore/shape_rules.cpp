#include "libgtcore/shape_rules.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

namespace gt {
namespace {

// A value going into a tensor of dtype `dt` (full's and masked_fill's fill value, a clamp
// bound, a pow exponent) must be representable there, as in PyTorch's checked scalar
// conversion (torch.full((2,), nan, dtype=torch.int64), masked_fill(m, 1e5) on float16 raise):
// it would otherwise silently become 0, saturate or turn into inf. `exact`: the value as an
// exact integer, when sent.
Status check_fits(const char* op, const char* what, double value, std::optional<int64_t> exact,
                  DType dt) {
  if (scalar_fits(dt, value, exact)) return Status::ok();
  if (exact)
    return invalid_argument("{}: {} {} cannot be converted to {} without overflow", op, what,
                            *exact, dtype_name(dt));
  return invalid_argument("{}: {} {} cannot be converted to {} without overflow", op, what,
                          value, dtype_name(dt));
}

Status need_shape(OpId op, const OpAttrs& a) {
  if (!a.has_shape) return invalid_argument("{}: missing shape attribute", op_name(op));
  Status st = check_shape_size(a.shape, a.dtype);
  if (!st.is_ok()) return invalid_argument("{}: {}", op_name(op), st.message());
  return st;
}

Result<TensorMeta> rule_create(OpId op, const OpAttrs& a, bool floating_only) {
  GT_RETURN_IF_ERROR(need_shape(op, a));
  if (floating_only && !is_floating(a.dtype))
    return invalid_argument("{}: dtype must be floating point, got {}", op_name(op),
                            dtype_name(a.dtype));
  TensorMeta m{a.shape, a.dtype};
  if (op == OpId::k_full && a.n_reals < 1)
    return invalid_argument("full: missing fill value");
  if (op == OpId::k_full)
    GT_RETURN_IF_ERROR(check_fits("full", "value", a.fill_value(), a.fill_exact(), a.dtype));
  if (op == OpId::k_from_host && static_cast<int64_t>(a.data.size()) > m.nbytes())
    return invalid_argument("from_host: {} bytes of data for a {} {} tensor of {} bytes",
                            a.data.size(), dtype_name(a.dtype), a.shape.str(), m.nbytes());
  if (op == OpId::k_rand || op == OpId::k_randn) {
    // {seed, counter} or, for one shard of a random tensor, {seed, counter, axis, offset,
    // global extent}: the shard's elements take their values from the whole tensor.
    if (a.n_ints != 2 && a.n_ints != 5) return invalid_argument("{}: missing seed/counter", op_name(op));
    if (a.n_ints == 5) {
      int64_t axis = a.ints[2], off = a.ints[3], global = a.ints[4];
      if (axis < 0 || axis >= a.shape.rank())
        return invalid_argument("{}: shard axis {} out of range", op_name(op), axis);
      if (off < 0 || global < 0 || global > kMaxNumel || off > global - a.shape[static_cast<int>(axis)])
        return invalid_argument("{}: shard [{}, +{}) outside extent {}", op_name(op), off,
                                a.shape[static_cast<int>(axis)], global);
      if (m.nbytes() > 0 && m.shape.numel() / std::max<int64_t>(a.shape[static_cast<int>(axis)], 1) >
                                kMaxNumel / std::max<int64_t>(global, 1))
        return invalid_argument("{}: whole tensor too large", op_name(op));
    }
  }
  return m;
}

Result<TensorMeta> rule_arange(const OpAttrs& a) {
  if (a.n_reals < 3) return invalid_argument("arange: needs start, stop and step");
  double start = a.reals[0], stop = a.reals[1], step = a.reals[2];
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    return invalid_argument("arange: start, stop and step must be finite");
  if (step == 0) return invalid_argument("arange: step must be non-zero");
  if (a.dtype == DType::kBool) return invalid_argument("arange: dtype bool is not supported");
  if ((step > 0 && stop < start) || (step < 0 && stop > start))  // PyTorch's refusal
    return invalid_argument("arange: upper bound and larger bound inconsistent with step sign");
  const double n = std::ceil((stop - start) / step);
  if (n > static_cast<double>(kMaxNumel))
    return invalid_argument("arange: {} elements is too many", n);
  return TensorMeta{Shape{static_cast<int64_t>(n)}, a.dtype};
}

// PyTorch's message: a bool operand (tensor or scalar) is refused by sub whatever the result.
Status no_bool_sub(OpId op) {
  return invalid_argument(
      "{}: subtraction, the `-` operator, with a bool tensor is not supported. If you are "
      "trying to invert a mask, use the `~` or `logical_not()` operator instead.",
      op_name(op));
}

Result<TensorMeta> rule_binary(OpId op, std::span<const TensorMeta> in, const OpAttrs& a) {
  ShapeRule r = op_info(op).rule;
  TensorMeta out;
  if (in.size() == 2) {
    if (a.n_ints > 0 && a.scalar_side() != ScalarSide::kNone)
      return invalid_argument("{}: two tensor operands and a scalar operand", op_name(op));
    auto b = broadcast_shapes(in[0].shape, in[1].shape);
    if (!b.is_ok()) return invalid_argument("{}: {}", op_name(op), b.status().message());
    out.shape = *b;
    // A zero-dim operand counts less than one with dims (torch.result_type).
    out.dtype = promote_ranked(in[0].dtype, in[0].shape.rank() == 0, in[1].dtype,
                               in[1].shape.rank() == 0);
    if (op == OpId::k_sub && (in[0].dtype == DType::kBool || in[1].dtype == DType::kBool))
      return no_bool_sub(op);
  } else if (in.size() == 1) {
    ScalarSide side = a.scalar_side();
    if (a.n_ints < 2 || a.n_reals < 1 || (side != ScalarSide::kLeft && side != ScalarSide::kRight))
      return invalid_argument("{}: one tensor operand needs a scalar operand", op_name(op));
    if (!a.scalar_kind_valid())
      return invalid_argument("{}: bad scalar kind {}", op_name(op), a.int_at(1));
    out.shape = in[0].shape;
    out.dtype = promote_with_scalar(in[0].dtype, a.scalar_kind());
    if (op == OpId::k_sub && (in[0].dtype == DType::kBool || a.scalar_kind() == ScalarKind::kBool))
      return no_bool_sub(op);
  } else {
    return invalid_argument("{}: expects 2 operands, got {}", op_name(op), in.size());
  }
  const bool scalar_exponent =
      op == OpId::k_pow && in.size() == 1 && a.scalar_side() == ScalarSide::kRight;
  if (r == ShapeRule::kCompare) {
    out.dtype = DType::kBool;
  } else if (r == ShapeRule::kTrueDiv && !is_floating(out.dtype)) {
    out.dtype = DType::kFloat32;
  } else if (out.dtype == DType::kBool &&
             (op == OpId::k_pow || op == OpId::k_floor_divide || op == OpId::k_remainder)) {
    return invalid_argument("{}: not supported for bool tensors", op_name(op));
  } else if (scalar_exponent && is_integral(out.dtype) && a.scalar_is_integral() &&
             (a.scalar_exact() ? *a.scalar_exact() < 0 : a.scalar() < 0)) {
    // PyTorch's check, word for word (an integer tensor's exponent as a tensor is computed,
    // as there: a negative one gives 0, or +-1 for a base of +-1).
    return invalid_argument("Integers to negative integer powers are not allowed.");
  }
  // A scalar exponent is converted to an int32 / int8 / uint8 / 16-bit float result's type with
  // a check in PyTorch (torch.pow(int32, 2**40) and float16 ** 70000. raise), unlike other
  // scalars, which wrap or round.
  const bool narrow_int = out.dtype == DType::kInt32 || out.dtype == DType::kInt8 ||
                          out.dtype == DType::kUInt8;
  if (scalar_exponent && (narrow_int || out.dtype == DType::kFloat16 || out.dtype == DType::kBFloat16))
    GT_RETURN_IF_ERROR(check_fits("pow", "exponent", a.scalar(),
                                  a.scalar_is_integral() ? a.scalar_exact() : std::nullopt,
                                  out.dtype));
  // So is an integer scalar base of an int32 power ((-2**63) ** int32 raises).
  const bool scalar_base =
      op == OpId::k_pow && in.size() == 1 && a.scalar_side() == ScalarSide::kLeft;
  if (scalar_base && narrow_int)
    GT_RETURN_IF_ERROR(check_fits("pow", "base", a.scalar(),
                                  a.scalar_is_integral() ? a.scalar_exact() : std::nullopt,
                                  out.dtype));
  return out;
}

Result<TensorMeta> rule_where(std::span<const TensorMeta> in) {
  if (in[0].dtype != DType::kBool)
    return invalid_argument("where: condition must be bool, got {}", dtype_name(in[0].dtype));
  auto s = broadcast_shapes(in[0].shape, in[1].shape);
  if (s.is_ok()) s = broadcast_shapes(*s, in[2].shape);
  if (!s.is_ok()) return invalid_argument("where: {}", s.status().message());
  return TensorMeta{*s, promote_ranked(in[1].dtype, in[1].shape.rank() == 0, in[2].dtype,
                                       in[2].shape.rank() == 0)};
}

Result<TensorMeta> rule_reduce(OpId op, const TensorMeta& x, const OpAttrs& a) {
  if (a.n_ints < 2) return invalid_argument("{}: missing dim/keepdim", op_name(op));
  ShapeRule r = op_info(op).rule;
  // torch.mean and torch.var refuse integer and bool inputs (no output dtype to infer), and
  // argmax/argmin bool ones; sum and logsumexp take them.
  if ((r == ShapeRule::kReduceMean || r == ShapeRule::kReduceVar) && !is_floating(x.dtype))
    return invalid_argument("{}: input dtype must be floating point, got {}", op_name(op),
                            dtype_name(x.dtype));
  if (r == ShapeRule::kReduceIndex && x.dtype == DType::kBool)
    return invalid_argument("{}: not supported for bool tensors", op_name(op));
  DType dt = x.dtype;
  if (r == ShapeRule::kReduceSum) dt = is_floating(x.dtype) ? x.dtype : DType::kInt64;
  if (r == ShapeRule::kReduceMean || r == ShapeRule::kReduceVar || r == ShapeRule::kReduceFloat)
    dt = is_floating(x.dtype) ? x.dtype : DType::kFloat32;
  if (r == ShapeRule::kReduceVar && (a.n_reals < 1 || !std::isfinite(a.correction())))
    return invalid_argument("{}: needs a finite correction", op_name(op));
  if (r == ShapeRule::kReduceIndex) dt = DType::kInt64;
  bool needs_elements = r == ShapeRule::kReduceSame || r == ShapeRule::kReduceIndex;
  Shape out;
  if (a.reduce_all()) {
    if (needs_elements && x.shape.numel() == 0)
      return invalid_argument("{}: cannot reduce an empty tensor", op_name(op));
    if (a.keepdim()) {
      out = x.shape;
      for (int i = 0; i < out.rank(); ++i) out[i] = 1;
    }
    return TensorMeta{out, dt};
  }
  GT_ASSIGN_OR_RETURN(int d, normalize_dim(a.reduce_dim(), x.shape.rank(), op_name(op)));
  if (x.shape.rank() == 0) return TensorMeta{x.shape, dt};
  if (needs_elements && x.shape[d] == 0)
    return invalid_argument("{}: cannot reduce over dim {} of size 0", op_name(op), d);
  for (int i = 0; i < x.shape.rank(); ++i) {
    if (i == d) {
      if (a.keepdim()) out.push_back(1);
    } else {
      out.push_back(x.shape[i]);
    }
  }
  return TensorMeta{out, dt};
}

// cumsum: the input's shape, scanned along a valid dim (a 0-d input takes 0 or -1, like
// torch.cumsum); floating inputs keep their dtype, integer and bool ones give int64 (as sum).
Result<TensorMeta> rule_cumsum(const TensorMeta& x, const OpAttrs& a) {
  if (a.n_ints < 1) return invalid_argument("cumsum: missing dim");
  GT_RETURN_IF_ERROR(normalize_dim(a.axis(), x.shape.rank(), "cumsum").status());
  return TensorMeta{x.shape, is_floating(x.dtype) ? x.dtype : DType::kInt64};
}

// argsort: int64 positions of the input's shape along a valid dim; descending is 0 or 1 (an
// instruction from the wire may carry anything).
Result<TensorMeta> rule_argsort(const TensorMeta& x, const OpAttrs& a) {
  if (a.n_ints != 2) return invalid_argument("argsort: takes {{dim, descending}}, got {} ints", a.n_ints);
  if (a.int_at(1) != 0 && a.int_at(1) != 1)
    return invalid_argument("argsort: descending must be 0 or 1, got {}", a.int_at(1));
  GT_RETURN_IF_ERROR(normalize_dim(a.axis(), x.shape.rank(), "argsort").status());
  return TensorMeta{x.shape, DType::kInt64};
}

Result<TensorMeta> rule_reshape(const TensorMeta& x, const OpAttrs& a) {
  GT_RETURN_IF_ERROR(need_shape(OpId::k_reshape, a));
  if (a.shape.numel() != x.shape.numel())
    return invalid_argument("reshape: cannot reshape {} ({} elements) into {}", x.shape.str(),
                            x.shape.numel(), a.shape.str());
  return TensorMeta{a.shape, x.dtype};
}

Result<TensorMeta> rule_permute(const TensorMeta& x, const OpAttrs& a) {
  int r = x.shape.rank();
  if (a.n_ints != r)
    return invalid_argument("permute: {} dims given for a tensor of rank {}", a.n_ints, r);
  std::array<bool, kMaxRank> seen{};
  Shape out;
  for (int i = 0; i < r; ++i) {
    int64_t p = a.ints[i];
    if (p < 0 || p >= r || seen[p])
      return invalid_argument("permute: dims must be a permutation of 0..{}", r - 1);
    seen[p] = true;
    out.push_back(x.shape[p]);
  }
  return TensorMeta{out, x.dtype};
}

Result<TensorMeta> rule_slice(const TensorMeta& x, const OpAttrs& a) {
  int r = x.shape.rank();
  if (!a.has_shape || a.shape.rank() != r || a.n_ints != 2 * r)
    return invalid_argument("slice: needs an extent, start and step for each of {} dims", r);
  for (int d = 0; d < r; ++d) {
    int64_t n = x.shape[d], count = a.shape[d], start = a.slice_start(d), step = a.slice_step(d);
    if (count < 0 || step == 0)
      return invalid_argument("slice: dim {}: bad extent {} or step {}", d, count, step);
    if (count == 0) continue;
    // last = start + (count-1)*step must stay inside [0, n): checked without overflow.
    if (start < 0 || start >= n)
      return invalid_argument("slice: dim {}: start {} is out of range for size {}", d, start, n);
    __int128 room = step > 0 ? (static_cast<__int128>(n) - 1 - start) / step
                             : static_cast<__int128>(start) / -static_cast<__int128>(step);
    if (count - 1 > room)
      return invalid_argument("slice: dim {}: {} elements with step {} from {} leave size {}", d,
                              count, step, start, n);
  }
  return TensorMeta{a.shape, x.dtype};
}

// as_strided / strided_copy_: `n` elements of the sizes and strides in the attrs, every position
// inside a tensor of `numel` elements (checked in 128 bits: strides and offsets come off the wire).
Status check_strided(const char* op, const OpAttrs& a, int64_t numel) {
  const int r = a.shape.rank();
  if (!a.has_shape || a.n_ints != r + 1)
    return invalid_argument("{}: needs an offset and one stride for each of {} dims", op, r);
  for (int d = 0; d < r; ++d)  // every dim, before an empty one ends the check
    if (a.shape[d] < 0)
      return invalid_argument("{}: dim {} has negative size {}", op, d, a.shape[d]);
  for (int d = 0; d < r; ++d)
    if (a.shape[d] == 0) return Status::ok();  // no element: nothing is read or written
  // At most kMaxNumel (2^48) elements keep every span below 2^111, so the sum of 8 of them
  // cannot overflow 128 bits.
  if (a.shape.numel() > kMaxNumel)
    return invalid_argument("{}: a view of sizes {} has too many elements", op, a.shape.str());
  __int128 lo = a.strided_offset(), hi = a.strided_offset();
  for (int d = 0; d < r; ++d) {
    const __int128 span = static_cast<__int128>(a.shape[d] - 1) * a.strided_stride(d);
    (span < 0 ? lo : hi) += span;
  }
  if (lo < 0 || hi >= numel)
    return invalid_argument("{}: a view of sizes {} with offset {} reaches outside a tensor of {} "
                            "elements",
                            op, a.shape.str(), a.strided_offset(), numel);
  return Status::ok();
}

Result<TensorMeta> rule_as_strided(const TensorMeta& x, const OpAttrs& a) {
  GT_RETURN_IF_ERROR(check_strided("as_strided", a, x.shape.numel()));
  Status st = check_shape_size(a.shape, x.dtype);
  if (!st.is_ok()) return invalid_argument("as_strided: {}", st.message());
  return TensorMeta{a.shape, x.dtype};
}

Result<TensorMeta> rule_strided_into(std::span<const TensorMeta> in, const OpAttrs& a) {
  GT_RETURN_IF_ERROR(check_strided("strided_copy_", a, in[0].shape.numel()));
  if (in[1].shape != a.shape)
    return invalid_argument("strided_copy_: source of shape {} for a view of sizes {}",
                            in[1].shape.str(), a.shape.str());
  if (in[1].dtype != in[0].dtype)
    return invalid_argument("strided_copy_: source dtype {} differs from the destination's {}",
                            dtype_name(in[1].dtype), dtype_name(in[0].dtype));
  return in[0];
}

Result<TensorMeta> rule_cat(std::span<const TensorMeta> in, const OpAttrs& a) {
  if (a.n_ints < 1) return invalid_argument("cat: missing axis");
  int r = in[0].shape.rank();
  if (r == 0) return invalid_argument("cat: zero-dimensional tensors cannot be concatenated");
  GT_ASSIGN_OR_RETURN(int axis, normalize_dim(a.axis(), r, "cat"));
  Shape out = in[0].shape;
  DType dt = in[0].dtype;
  int64_t total = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const Shape& s = in[i].shape;
    if (s.rank() != r)
      return invalid_argument("cat: tensor {} has rank {}, expected {}", i, s.rank(), r);
    for (int d = 0; d < r; ++d)
      if (d != axis && s[d] != out[d])
        return invalid_argument("cat: tensor {} has shape {}, incompatible with {} along dim {}",
                                i, s.str(), in[0].shape.str(), d);
    total += s[axis];
    if (total > kMaxNumel) return invalid_argument("cat: result is too large");
    dt = promote(dt, in[i].dtype);
  }
  out[axis] = total;
  GT_RETURN_IF_ERROR(check_shape_size(out, dt));
  return TensorMeta{out, dt};
}

// ---- masked_fill, clamp, expand, indexing ----

Result<TensorMeta> rule_masked_fill(std::span<const TensorMeta> in, const OpAttrs& a) {
  if (a.n_reals < 1) return invalid_argument("masked_fill: missing fill value");
  if (in[1].dtype != DType::kBool)
    return invalid_argument("masked_fill: mask must be bool, got {}", dtype_name(in[1].dtype));
  GT_RETURN_IF_ERROR(check_fits("masked_fill", "value", a.fill_value(), a.fill_exact(), in[0].dtype));
  auto s = broadcast_shapes(in[0].shape, in[1].shape);
  if (!s.is_ok()) return invalid_argument("masked_fill: {}", s.status().message());
  return TensorMeta{*s, in[0].dtype};
}

// clamp(x, min, max): the dtype of x with the bounds as scalar operands (torch.result_type:
// float bounds lift an integer or bool x to float32, integer bounds a bool x to int64), and
// each bound must fit that dtype (PyTorch converts it with a check).
Result<TensorMeta> rule_clamp(const TensorMeta& x, const OpAttrs& a) {
  if (a.n_ints < 3 || a.n_reals < 2) return invalid_argument("clamp: missing bounds");
  if (!a.has_min() && !a.has_max())
    return invalid_argument("clamp: at least one of min and max must be given");
  if (!a.bounds_kind_valid()) return invalid_argument("clamp: bad bounds kind {}", a.int_at(2));
  const DType dt = promote_with_scalar(x.dtype, a.bounds_kind());
  if (dt == DType::kBool) return invalid_argument("clamp: not supported for bool tensors");
  const bool exact = a.bounds_kind() != ScalarKind::kFloat;
  if (a.has_min())
    GT_RETURN_IF_ERROR(check_fits("clamp", "min", a.clamp_min(),
                                  exact ? a.clamp_min_exact() : std::nullopt, dt));
  if (a.has_max())
    GT_RETURN_IF_ERROR(check_fits("clamp", "max", a.clamp_max(),
                                  exact ? a.clamp_max_exact() : std::nullopt, dt));
  return TensorMeta{x.shape, dt};
}

Result<TensorMeta> rule_expand(const TensorMeta& x, const OpAttrs& a) {
  GT_RETURN_IF_ERROR(need_shape(OpId::k_expand, a));
  const Shape& to = a.shape;
  const int shift = to.rank() - x.shape.rank();
  if (shift < 0)
    return invalid_argument("expand: the target {} has fewer dims than the input {}", to.str(),
                            x.shape.str());
  for (int i = 0; i < x.shape.rank(); ++i)
    if (x.shape[i] != 1 && x.shape[i] != to[i + shift])
      return invalid_argument("expand: input {} cannot be expanded to {} (dim {}: {} vs {})",
                              x.shape.str(), to.str(), i + shift, x.shape[i], to[i + shift]);
  return TensorMeta{to, x.dtype};
}

Status need_index(OpId op, const TensorMeta& index, const char* what) {
  if (index.dtype != DType::kInt64 && index.dtype != DType::kInt32)
    return invalid_argument("{}: {} must be an int64 or int32 tensor, got {}", op_name(op), what,
                            dtype_name(index.dtype));
  return Status::ok();
}

// index_select (x, index[k]) / index_add (x, index[k], src): x's shape with extent k along dim.
Result<TensorMeta> rule_index_select(OpId op, std::span<const TensorMeta> in, const OpAttrs& a) {
  const char* name = op_name(op);
  if (a.n_ints < 1) return invalid_argument("{}: missing dim", name);
  const TensorMeta& x = in[0];
  if (x.shape.rank() == 0) return invalid_argument("{}: input must have at least 1 dim", name);
  GT_ASSIGN_OR_RETURN(int d, normalize_dim(a.axis(), x.shape.rank(), name));
  GT_RETURN_IF_ERROR(need_index(op, in[1], "index"));
  if (in[1].shape.rank() > 1)
    return invalid_argument("{}: index must be 0-d or 1-d, got {}", name, in[1].shape.str());
  Shape picked = x.shape;
  picked[d] = in[1].shape.numel();
  if (op == OpId::k_index_select) return TensorMeta{picked, x.dtype};
  const TensorMeta& src = in[2];
  if (src.dtype != x.dtype)
    return invalid_argument("{}: src dtype {} differs from the input's {}", name,
                            dtype_name(src.dtype), dtype_name(x.dtype));
  // An empty index adds nothing: PyTorch then takes any empty src.
  const bool nothing = picked[d] == 0 && src.shape.numel() == 0;
  if (src.shape != picked && !nothing)
    return invalid_argument("{}: src must have shape {} (the input {} with {} index entries "
                            "along dim {}), got {}", name, picked.str(), x.shape.str(),
                            picked[d], d, src.shape.str());
  return x;
}

// gather (x, index) / scatter_add (x, index, src): index of x's rank, no larger than x outside
// dim (and, for scatter_add, no larger than src anywhere).
Result<TensorMeta> rule_gather(OpId op, std::span<const TensorMeta> in, const OpAttrs& a) {
  const char* name = op_name(op);
  if (a.n_ints < 1) return invalid_argument("{}: missing dim", name);
  const TensorMeta& x = in[0];
  const TensorMeta& index = in[1];
  const int r = x.shape.rank();
  GT_ASSIGN_OR_RETURN(int d, normalize_dim(a.axis(), r, name));
  GT_RETURN_IF_ERROR(need_index(op, index, "index"));
  if (index.shape.rank() != r)
    return invalid_argument("{}: index {} must have the input's rank ({})", name,
                            index.shape.str(), x.shape.str());
  // An empty index selects nothing, so its extents are not checked (as PyTorch).
  const bool empty_index = index.shape.numel() == 0;
  for (int i = 0; i < r && !empty_index; ++i)
    if (i != d && index.shape[i] > x.shape[i])
      return invalid_argument("{}: index {} is larger than the input {} in dim {}", name,
                              index.shape.str(), x.shape.str(), i);
  if (op == OpId::k_gather) return TensorMeta{index.shape, x.dtype};
  const TensorMeta& src = in[2];
  if (src.dtype != x.dtype)
    return invalid_argument("{}: src dtype {} differs from the input's {}", name,
                            dtype_name(src.dtype), dtype_name(x.dtype));
  if (src.shape.rank() != r)
    return invalid_argument("{}: src {} must have the input's rank ({})", name, src.shape.str(),
                            x.shape.str());
  for (int i = 0; i < r && !empty_index; ++i)
    if (index.shape[i] > src.shape[i])
      return invalid_argument("{}: index {} is larger than src {} in dim {}", name,
                              index.shape.str(), src.shape.str(), i);
  return x;
}

Result<TensorMeta> rule_one_hot(const TensorMeta& labels, const OpAttrs& a) {
  if (a.n_ints < 1) return invalid_argument("one_hot: missing num_classes");
  GT_RETURN_IF_ERROR(need_index(OpId::k_one_hot, labels, "labels"));
  const int64_t c = a.num_classes();
  if (c < 0 || c > kMaxNumel) return invalid_argument("one_hot: bad num_classes {}", c);
  if (labels.shape.rank() >= kMaxRank)
    return invalid_argument("one_hot: labels of rank {} leave no room for the class dim",
                            labels.shape.rank());
  Shape out = labels.shape;
  out.push_back(c);
  return TensorMeta{out, DType::kInt64};
}

}  // namespace

Result<Shape> matmul_shape(const Shape& a0, const Shape& b0) {
  if (a0.rank() == 0 || b0.rank() == 0)
    return invalid_argument("matmul: both operands need at least 1 dimension, got {} and {}",
                            a0.str(), b0.str());
  Shape a = a0, b = b0;
  bool a_vec = a.rank() == 1, b_vec = b.rank() == 1;
  if (a_vec) a = Shape{1, a0[0]};
  if (b_vec) b = Shape{b0[0], 1};
  int64_t m = a[a.rank() - 2], k = a[a.rank() - 1], k2 = b[b.rank() - 2], n = b[b.rank() - 1];
  if (k != k2)
    return invalid_argument("matmul: shapes {} and {} cannot be multiplied ({} != {})", a0.str(),
                            b0.str(), k, k2);
  Shape ba, bb;
  for (int i = 0; i < a.rank() - 2; ++i) ba.push_back(a[i]);
  for (int i = 0; i < b.rank() - 2; ++i) bb.push_back(b[i]);
  auto batch = broadcast_shapes(ba, bb);
  if (!batch.is_ok())
    return invalid_argument("matmul: batch dims of {} and {} do not broadcast", a0.str(),
                            b0.str());
  Shape out = *batch;
  if (out.rank() + 2 > kMaxRank) return invalid_argument("matmul: result rank too large");
  if (!a_vec) out.push_back(m);
  if (!b_vec) out.push_back(n);
  return out;
}

namespace {
Result<TensorMeta> infer_meta_unchecked(OpId op, std::span<const TensorMeta> in,
                                        const OpAttrs& a) {
  const OpInfo& info = op_info(op);
  if (info.arity >= 0) {
    bool scalar_form = info.attrs == AttrKind::kBinary && in.size() == 1;
    if (static_cast<int>(in.size()) != info.arity && !scalar_form)
      return invalid_argument("{}: expects {} inputs, got {}", info.name, info.arity, in.size());
  } else if (in.empty() || in.size() > static_cast<size_t>(kMaxOpInputs)) {
    return invalid_argument("{}: expects 1 to {} inputs, got {}", info.name, kMaxOpInputs,
                            in.size());
  }
  if (!is_valid_dtype(static_cast<int>(a.dtype)))
    return invalid_argument("{}: invalid dtype", info.name);

  switch (info.rule) {
    case ShapeRule::kCreate: return rule_create(op, a, false);
    case ShapeRule::kCreateFloat: return rule_create(op, a, true);
    case ShapeRule::kArange: return rule_arange(a);
    case ShapeRule::kInPlace: {
      if (a.n_ints < 1) return invalid_argument("{}: missing offset", info.name);
      int64_t off = a.chunk_offset(), nb = in[0].nbytes();
      if (off < 0 || off > nb || static_cast<int64_t>(a.data.size()) > nb - off)
        return invalid_argument("{}: {} bytes at offset {} overrun a tensor of {} bytes",
                                info.name, a.data.size(), off, nb);
      return in[0];
    }
    case ShapeRule::kArith:
    case ShapeRule::kTrueDiv:
    case ShapeRule::kCompare: return rule_binary(op, in, a);
    case ShapeRule::kWhere: return rule_where(in);
    case ShapeRule::kUnarySame:
      if (in[0].dtype == DType::kBool)  // torch: neg, abs and relu all refuse bool
        return invalid_argument("{}: not supported for bool tensors", info.name);
      return in[0];
    case ShapeRule::kUnaryFloat:
      return TensorMeta{in[0].shape, is_floating(in[0].dtype) ? in[0].dtype : DType::kFloat32};
    case ShapeRule::kMatmul: {
      if (a.n_ints > 1 || a.n_reals > 0 || a.has_shape ||
          (a.n_ints == 1 && (a.ints[0] < 0 || a.ints[0] > 2)))
        return invalid_argument("matmul: attributes are at most a float32 precision 0..2");
      if (in[0].dtype == DType::kBool || in[1].dtype == DType::kBool)
        return invalid_argument("matmul: bool operands are not supported");
      // torch.matmul does not promote: both operands must have one dtype.
      if (in[0].dtype != in[1].dtype)
        return invalid_argument("matmul: both operands must have the same dtype, got {} and {}",
                                dtype_name(in[0].dtype), dtype_name(in[1].dtype));
      GT_ASSIGN_OR_RETURN(Shape s, matmul_shape(in[0].shape, in[1].shape));
      return TensorMeta{s, in[0].dtype};
    }
    case ShapeRule::kReduceSum:
    case ShapeRule::kReduceMean:
    case ShapeRule::kReduceSame:
    case ShapeRule::kReduceIndex:
    case ShapeRule::kReduceVar:
    case ShapeRule::kReduceFloat: return rule_reduce(op, in[0], a);
    case ShapeRule::kReshape: return rule_reshape(in[0], a);
    case ShapeRule::kPermute: return rule_permute(in[0], a);
    case ShapeRule::kSlice: return rule_slice(in[0], a);
    case ShapeRule::kCat: return rule_cat(in, a);
    case ShapeRule::kCast: return TensorMeta{in[0].shape, a.dtype};
    case ShapeRule::kCopyInto: {
      auto s = broadcast_shapes(in[0].shape, in[1].shape);
      if (!s.is_ok() || *s != in[0].shape)
        return invalid_argument("copy_: source {} does not broadcast to destination {}",
                                in[1].shape.str(), in[0].shape.str());
      return in[0];
    }
    case ShapeRule::kMaskedFill: return rule_masked_fill(in, a);
    case ShapeRule::kClamp: return rule_clamp(in[0], a);
    case ShapeRule::kExpand: return rule_expand(in[0], a);
    case ShapeRule::kIndexSelect:
    case ShapeRule::kIndexAdd: return rule_index_select(op, in, a);
    case ShapeRule::kGather:
    case ShapeRule::kScatterAdd: return rule_gather(op, in, a);
    case ShapeRule::kOneHot: return rule_one_hot(in[0], a);
    case ShapeRule::kCumsum: return rule_cumsum(in[0], a);
    case ShapeRule::kArgsort: return rule_argsort(in[0], a);
    case ShapeRule::kAsStrided: return rule_as_strided(in[0], a);
    case ShapeRule::kStridedInto: return rule_strided_into(in, a);
  }
  return internal_error("{}: no shape rule", info.name);
}

}  // namespace

Result<TensorMeta> infer_meta(OpId op, std::span<const TensorMeta> in, const OpAttrs& a) {
  auto m = infer_meta_unchecked(op, in, a);
  if (!m.is_ok()) return m;
  // Small (even empty) inputs can broadcast or keep dims into a result too large to address.
  Status st = check_shape_size(m->shape, m->dtype);
  if (!st.is_ok()) return invalid_argument("{}: result {}", op_name(op), st.message());
  return m;
}

}  // namespace gt
