// Creation ops: zeros/ones/full/scalar_tensor/arange/randn/rand (from_vector is a template in
// tensor.h over detail::from_host_bytes), and the composites randint/empty/eye/linspace/*_like.
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

Tensor randint(int64_t low, int64_t high, Dims shape, DType dtype) {
  if (high <= low)
    throw Error("randint: high must be greater than low, got low=" + std::to_string(low) +
                ", high=" + std::to_string(high));
  constexpr uint64_t k48 = uint64_t{1} << 48;
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  if (range > k48)
    throw Error("randint: high - low must be at most 2^48, got " + std::to_string(range));
  // Two float32 uniforms hold 24 random bits each (k / 2^24, exact): together 48 bits, reduced
  // modulo the range (a relative bias below range / 2^48).
  constexpr double k24 = 16777216.0;
  Tensor hi = (rand(shape) * k24).to(kInt64);
  Tensor lo = (rand(shape) * k24).to(kInt64);
  Tensor bits = hi * static_cast<int64_t>(k24) + lo;
  Tensor out = range == k48 ? bits : bits.remainder(static_cast<int64_t>(range));
  if (low != 0) out = out + low;
  return dtype == kInt64 ? out : out.to(dtype);
}

Tensor empty(Dims shape, DType dtype) { return zeros(std::move(shape), dtype); }

Tensor eye(int64_t n, std::optional<int64_t> m, DType dtype) {
  const int64_t cols = m.value_or(n);
  if (n < 0 || cols < 0)
    throw Error("eye: n and m must be non-negative, got n=" + std::to_string(n) +
                ", m=" + std::to_string(cols));
  return arange(n).unsqueeze(1).eq(arange(cols).unsqueeze(0)).to(dtype);
}

Tensor linspace(double start, double end, int64_t steps, DType dtype) {
  if (steps < 0) throw Error("linspace: number of steps must be non-negative, got " + std::to_string(steps));
  if (steps <= 1) return steps == 0 ? zeros({0}, dtype) : full({1}, start, dtype);
  // torch's CPU kernel, in float32: step = (end - start) / (steps - 1); element i is
  // start + i * step below steps / 2 and end - (steps - 1 - i) * step from there.
  const float fs = static_cast<float>(start), fe = static_cast<float>(end);
  const float step = (fe - fs) / static_cast<float>(steps - 1);
  const Tensor i = arange(steps);
  const Tensor up = i.to(kFloat32) * step + fs;
  const Tensor down = (i - (steps - 1)).to(kFloat32) * step + fe;  // end - (steps-1-i)*step
  const Tensor out = where(i.lt(steps / 2), up, down);
  return dtype == kFloat32 ? out : out.to(dtype);
}

// On t's device, as torch's *_like.
#define GT_LIKE_FACTORY(NAME)                                                   \
  Tensor NAME##_like(const Tensor& t, std::optional<DType> dtype) {             \
    detail::PinScope pin(static_cast<int32_t>(t.get_device()), false);                              \
    return NAME(t.shape(), dtype.value_or(t.dtype()));                          \
  }
GT_LIKE_FACTORY(zeros)
GT_LIKE_FACTORY(ones)
GT_LIKE_FACTORY(empty)
GT_LIKE_FACTORY(rand)
GT_LIKE_FACTORY(randn)
#undef GT_LIKE_FACTORY

Tensor full_like(const Tensor& t, Scalar value, std::optional<DType> dtype) {
  detail::PinScope pin(static_cast<int32_t>(t.get_device()), false);
  return full(t.shape(), value, dtype.value_or(t.dtype()));
}

}  // namespace gt
