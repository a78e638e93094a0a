// Creation ops: zeros/ones/full/scalar_tensor/arange/randn/rand (from_vector is a template in
// tensor.h over detail::from_host_bytes).
#include <algorithm>
#include <cmath>
#include <string>

#include "gt/tensor.h"
#include "libgtcore/shape_rules.h"
#include "libgtclient/run_op.h"
#include "libgtclient/session.h"

namespace gt {
namespace {

using detail::run_op;

Tensor create(OpId op, const OpAttrs& attrs) { return run_op(op, attrs, {}); }

Tensor random(OpId op, Dims shape, DType dtype) {
  OpAttrs attrs = make_random(detail::to_shape(shape, op_name(op)), dtype, 0, 0);
  // Validate before consuming an RNG counter, so a rejected call leaves the stream unchanged.
  Result<TensorMeta> meta = infer_meta(op, {}, attrs);
  if (!meta) {
    const std::string& m = meta.status().message();
    throw Error(m.rfind(std::string(op_name(op)) + ":", 0) == 0 ? m
                                                               : op_name(op) + (": " + m));
  }
  detail::Session& session = detail::Session::get();
  attrs = make_random(attrs.shape, dtype, session.seed(), session.next_rng_counter());
  return create(op, attrs);
}

}  // namespace

Tensor zeros(Dims shape, DType dtype) {
  return create(OpId::k_zeros, make_shape_dtype(detail::to_shape(shape, "zeros"), dtype));
}

Tensor ones(Dims shape, DType dtype) {
  return create(OpId::k_ones, make_shape_dtype(detail::to_shape(shape, "ones"), dtype));
}

Tensor full(Dims shape, Scalar value, std::optional<DType> dtype) {
  DType dt = dtype.value_or(value.is_bool()       ? DType::kBool
                            : value.is_integral() ? DType::kInt64
                                                  : DType::kFloat32);
  return create(OpId::k_full, make_full(detail::to_shape(shape, "full"), dt, value.to_double(), value.exact_int()));
}

Tensor scalar_tensor(Scalar value, DType dtype) { return full({}, value, dtype); }

Tensor arange(Scalar end, std::optional<DType> dtype) { return arange(0, end, 1, dtype); }

Tensor arange(Scalar start, Scalar end, DType dtype) { return arange(start, end, 1, dtype); }

Tensor arange(Scalar start, Scalar end, Scalar step, std::optional<DType> dtype) {
  bool integral = start.is_integral() && end.is_integral() && step.is_integral();
  DType dt = dtype.value_or(integral ? DType::kInt64 : DType::kFloat32);
  double b = start.to_double(), e = end.to_double(), s = step.to_double();
  if (is_integral(dt) && std::isfinite(b) && std::isfinite(e) && std::isfinite(s) && s != 0) {
    // PyTorch computes the elements in the integer type: start and step are truncated first
    // (arange(-1.25, 5, dtype=int64) starts at -1; a step of 0.5 becomes 0 and is refused). It
    // counts them from the truncated bounds for int64, from the given ones otherwise.
    const double bt = std::trunc(b), et = std::trunc(e), st = std::trunc(s);
    if (st == 0)
      throw Error("arange: step must be nonzero (it truncates to 0 in " +
                  std::string(dtype_name(dt)) + ")");
    if ((st > 0 && et < bt) || (st < 0 && et > bt))
      throw Error("arange: upper bound and larger bound inconsistent with step sign");
    const double count = std::max(0.0, dt == DType::kInt64 ? std::ceil((et - bt) / st)
                                                            : std::ceil((e - b) / s));
    b = bt;
    s = st;
    e = bt + count * st;  // exactly `count` elements
  }
  return create(OpId::k_arange, make_arange(b, e, s, dt));
}

Tensor randn(Dims shape, DType dtype) { return random(OpId::k_randn, std::move(shape), dtype); }

Tensor rand(Dims shape, DType dtype) { return random(OpId::k_rand, std::move(shape), dtype); }

}  // namespace gt
