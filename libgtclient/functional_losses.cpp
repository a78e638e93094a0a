// Losses: mse, binary cross entropy (+ with logits), nll and cross entropy (class indices picked
// with gather; optional label smoothing and class weights).
#include <algorithm>
#include <string>
#include <vector>

#include "gt/autograd.h"
#include "gt/functional.h"
#include "libgtclient/autograd_node.h"
#include "libgtclient/run_op.h"

namespace gt::nn::functional {
namespace {

Tensor reduce(const Tensor& loss, Reduction r) {
  switch (r) {
    case Reduction::kNone: return loss;
    case Reduction::kSum: return loss.sum();
    case Reduction::kMean: return loss.mean();
  }
  return loss;
}

void check_same_shape(const Tensor& input, const Tensor& target, const char* what) {
  if (input.shape() != target.shape())
    throw Error(std::string(what) + ": target size " + target.shape().str() +
                " is different from the input size " + input.shape().str());
}

// Class-index targets, flattened: input [M, C], target [M], plus the shape of a kNone result.
struct Flat {
  Tensor input, target;
  std::vector<int64_t> out_shape;
  int64_t classes = 0;
};

Flat flatten_classes(const Tensor& input, const Tensor& target, const char* what) {
  if (is_floating(target.dtype()) || target.dtype() == kBool)
    throw Error(std::string(what) + ": target must hold class indices (an integer tensor), got " +
                dtype_name(target.dtype()));
  Flat f;
  const int64_t r = input.dim();
  if (r == 0) throw Error(std::string(what) + ": input must have at least 1 dim");
  if (r == 1) {
    if (target.dim() != 0)
      throw Error(std::string(what) + ": for a 1-D input of class scores the target must be 0-D, "
                  "got " + target.shape().str());
    f.classes = input.size(0);
    f.input = input.reshape({1, f.classes});
    f.target = target.reshape({1});
    return f;
  }
  f.classes = input.size(1);
  std::vector<int64_t> want{input.size(0)};
  for (int64_t d = 2; d < r; ++d) want.push_back(input.size(d));
  if (target.sizes() != want)
    throw Error(std::string(what) + ": expected a target of shape " +
                detail::to_shape(want, what).str() + " for input " + input.shape().str() +
                ", got " + target.shape().str());
  f.out_shape = want;
  if (r == 2) {
    f.input = input;
    f.target = target;
  } else {  // [N, C, d...] -> [N, d..., C] -> [M, C]
    std::vector<int64_t> perm{0};
    for (int64_t d = 2; d < r; ++d) perm.push_back(d);
    perm.push_back(1);
    f.input = input.permute(perm).reshape({-1, f.classes});
    f.target = target.reshape({-1});
  }
  return f;
}

// The targets of a Flat, resolved: which rows are ignored, and the targets with ignored rows
// pointing at class 0 (so that gather / index_select never see ignore_index, which may be out
// of range, e.g. the default -100).
struct Targets {
  Tensor ignored;  // bool [M]
  Tensor safe;     // int  [M]
  int64_t rows = 0;
};

Targets resolve_targets(const Flat& f, const NLLOptions& o) {
  Targets t;
  t.rows = f.target.numel();
  t.ignored = f.target == o.ignore_index;
  const bool in_range = o.ignore_index >= 0 && o.ignore_index < f.classes;
  t.safe = in_range ? f.target : f.target.masked_fill(t.ignored, 0);
  return t;
}

// input[m, target[m]] for every row (0 for ignored rows): [M].
Tensor picked_rows(const Flat& f, const Targets& t) {
  return f.input.gather(1, t.safe.unsqueeze(1)).squeeze(1).masked_fill(t.ignored, 0);
}

// Each row's target class weight (0 for ignored rows): [M].
Tensor target_weights(const Tensor& weight, const Targets& t) {
  return weight.index_select(0, t.safe).masked_fill(t.ignored, 0);
}

// The number of rows that are not ignored (an int64 0-d tensor: dividing by it keeps the
// loss's floating dtype).
Tensor valid_count(const Targets& t) { return t.rows - t.ignored.sum(); }

// A per-element weight (bce's weight, bce_with_logits' pos_weight) must broadcast to the
// input's shape without enlarging it, as PyTorch's in-place multiply into the loss requires.
void check_elementwise_weight(const Tensor& w, const Tensor& input, const char* what,
                              const char* name) {
  if (!w.defined()) return;
  Result<Shape> b = broadcast_shapes(w.shape(), input.shape());
  if (!b.is_ok() || *b != input.shape())
    throw Error(std::string(what) + ": " + name + " of shape " + w.shape().str() +
                " does not broadcast to the input's shape " + input.shape().str());
}

void check_weight(const Tensor& w, int64_t classes, const char* what) {
  if (w.defined() && (w.dim() != 1 || w.size(0) != classes))
    throw Error(std::string(what) + ": weight must be a 1-D tensor of " +
                std::to_string(classes) + " class weights, got " + w.shape().str());
}

Tensor finish(const Tensor& rows, const Tensor& denom, const Flat& f, Reduction r) {
  switch (r) {
    case Reduction::kNone: return rows.reshape(f.out_shape);
    case Reduction::kSum: return rows.sum();
    case Reduction::kMean: return rows.sum() / denom;
  }
  return rows;
}

}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  // torch.mse_loss computes in the promoted dtype, which must be floating (an int input with
  // a float target is fine, int with int is not).
  if (!is_floating(input.dtype()) && !is_floating(target.dtype()))
    throw Error(std::string("mse_loss: input or target must have a floating point dtype, got ") +
                dtype_name(input.dtype()) + " and " + dtype_name(target.dtype()));
  if (input.dtype() == kBool || target.dtype() == kBool) {  // `-` refuses bool; torch does not
    const DType dt = promote(input.dtype(), target.dtype());
    return mse_loss(input.to(dt), target.to(dt), reduction);
  }
  // The value from d * d; the gradient is torch's mse_loss_backward, (norm d) g with norm 2 / n
  // (mean) or 2, d = input - target in float32 for 16-bit inputs (its opmath): one product
  // with g, in torch's order, so an overflowed 2 d times a zero g is NaN and (2 / n) d stays
  // finite where 2 d would not, as in torch (d * d's own gradient is g d + g d).
  Tensor loss;
  int64_t n = 0;
  {
    NoGradGuard no_grad;
    const Tensor d = input - target;
    n = d.numel();
    loss = reduce(d * d, reduction);
  }
  const double norm =
      reduction == Reduction::kMean ? 2.0 / static_cast<double>(std::max<int64_t>(n, 1)) : 2.0;
  const Tensor* ins[] = {&input, &target};
  return autograd::detail::record_function(
      "MseLossBackward", loss, ins, 0b11, [norm](autograd::detail::GradCtx& c) {
        auto opmath = [](const Tensor& t) {
          return t.dtype() == kFloat16 || t.dtype() == kBFloat16 ? t.cast(kFloat32) : t;
        };
        const Tensor d = opmath(c.node.saved_input(0)) - opmath(c.node.saved_input(1));
        const Tensor g = (d * norm) * opmath(c.grad);
        if (c.node.needs(0)) c.in_grads[0] = g;
        if (c.node.needs(1)) c.in_grads[1] = g.neg();
      });
}

// -(y log p + (1 - y) log(1 - p)), each log clamped at -100 (PyTorch's). The gradient with
// respect to p is PyTorch's closed form (p - y) / max(p (1 - p), 1e-12), not the derivative of
// the clamped logs: that one is 0 where a log is clamped and NaN at p = 0 or 1 (log's 1/p is
// inf there, times the clamp's 0), where torch gives e.g. -1e12 for p = 0, y = 1. So when p
// needs a gradient, the logs are taken of p's value (detached) and the term dp * (p - p_value),
// 0 in value, carries the gradient dp (in float32 for 16-bit inputs, where 1e-12 would round
// to 0 and dp to inf: inf * 0 is NaN). The target's gradient is the derivative as written, the
// clamped logs' difference (torch's -logit(p) equals it for p in (0, 1); at p = 0 or 1 torch
// gives +-inf, gt +-100: a 0-valued carrier cannot hold an infinite gradient).
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BCEOptions& o) {
  check_same_shape(input, target, "binary_cross_entropy");
  // As torch: floating probabilities, the target in the input's dtype.
  detail::require_floating(input, "binary_cross_entropy");
  if (target.dtype() != input.dtype())
    throw Error(std::string("binary_cross_entropy: target dtype ") + dtype_name(target.dtype()) +
                " differs from the input's " + dtype_name(input.dtype()));
  const bool carry = is_grad_enabled() && input.requires_grad();
  Tensor p = carry ? input.detach() : input;
  Tensor lp = p.log().clamp_min(-100.0);
  Tensor lq = (1.0 - p).log().clamp_min(-100.0);
  Tensor loss = (target * lp + (1.0 - target) * lq).neg();
  if (carry) {
    const bool narrow = input.dtype() == kFloat16 || input.dtype() == kBFloat16;
    Tensor x = narrow ? input.cast(kFloat32) : input;
    Tensor dp, px;
    {
      NoGradGuard no_grad;
      px = narrow ? p.cast(kFloat32) : p;
      // torch's EPSILON is the float32 1e-12 (9.99999996e-13) for every dtype, float64 too.
      dp = (px - target) / (px * (1.0 - px)).clamp_min(static_cast<double>(1e-12f));
    }
    Tensor term = dp * (x - px);
    loss = loss + (term.dtype() == loss.dtype() ? term : term.cast(loss.dtype()));
  }
  check_elementwise_weight(o.weight, input, "binary_cross_entropy", "weight");
  if (o.weight.defined()) loss = loss * o.weight;
  return reduce(loss, o.reduction);
}

namespace {
// PyTorch's stable form: (1 - y) x + lw (log(1 + exp(-|x|)) + max(-x, 0)),
// lw = 1 + (pos_weight - 1) y. Its derivative in x is torch's lw sigmoid(x) - pos_weight y
// everywhere, x = 0 included, because max(-x, 0) is `maximum`, whose gradient splits a tie
// evenly: at x = 0 the two kinks give 0 (|x|: sign(0) = 0) and -1/2 (the tie), as the smooth
// function does (relu or clamp_min there would give 0 or -1).
// torch's association, which decides the 16-bit results: without pos_weight
// ((1 - y) x + m) + log(exp(-m) + exp(-x - m)), m = max(-x, 0) (that sum first: for x < 0 it is
// exactly 0, where adding the log to m first would round m + log and cancel against x). One of
// exp(-m), exp(-x - m) is exactly 1 and the other exp(-|x|), so the log is written with those:
// the same value, and a derivative that stays finite at x = -inf (no exp(inf - inf)).
Tensor bce_logits_terms(const Tensor& x, const Tensor& target, const Tensor& pos_weight) {
  const Tensor m = x.neg().maximum(0.0);
  const Tensor log_term = (x.abs().neg().exp() + 1.0).log();
  if (!pos_weight.defined()) return ((1.0 - target) * x + m) + log_term;
  Tensor softplus_neg = log_term + m;
  Tensor lw = (pos_weight - 1.0) * target + 1.0;
  return (1.0 - target) * x + lw * softplus_neg;
}
}  // namespace

// When the logits need a gradient, the loss at finite logits is computed from their value and
// the gradient reaches them through one term dx * (x - x_value), 0 in value, with dx torch's
// closed form ((pos_weight y + 1 - y) sigmoid(x) - pos_weight y, or sigmoid(x) - y), so the
// upstream gradient multiplies it once, as in torch: an infinite one gives +-inf, where the
// derivative of the terms (a sum of products with g) gives inf - inf = NaN. That term is NaN
// at infinite logits (inf - inf), so there the terms themselves carry the gradient (selected
// with where). In float32 for 16-bit logits, as torch's opmath. The target's gradient is the
// derivative of the terms: torch's log_sigmoid(-x) - pos_weight log_sigmoid(x), or -x.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BCEOptions& o) {
  check_same_shape(input, target, "binary_cross_entropy_with_logits");
  // torch refuses integer logits or targets (its floating result cannot be cast back).
  detail::require_floating(input, "binary_cross_entropy_with_logits");
  detail::require_floating(target, "binary_cross_entropy_with_logits", "target");
  check_elementwise_weight(o.weight, input, "binary_cross_entropy_with_logits", "weight");
  check_elementwise_weight(o.pos_weight, input, "binary_cross_entropy_with_logits", "pos_weight");
  Tensor loss;
  if (is_grad_enabled() && input.requires_grad()) {
    const Tensor x = input.detach();
    const bool narrow = input.dtype() == kFloat16 || input.dtype() == kBFloat16;
    Tensor xv, dx, finite;
    {
      NoGradGuard no_grad;
      xv = narrow ? x.cast(kFloat32) : x;
      finite = (xv - xv) == 0.0;  // false at +-inf and NaN
      const Tensor s = xv.sigmoid();
      if (o.pos_weight.defined()) {
        const Tensor t = o.pos_weight * target;
        dx = ((t + 1.0) - target) * s - t;
      } else {
        dx = s - target;
      }
    }
    Tensor term = dx * ((narrow ? input.cast(kFloat32) : input) - xv);
    Tensor carried = bce_logits_terms(x, target, o.pos_weight);
    carried = carried + (term.dtype() == carried.dtype() ? term : term.cast(carried.dtype()));
    loss = where(finite, carried, bce_logits_terms(input, target, o.pos_weight));
  } else {
    loss = bce_logits_terms(input, target, o.pos_weight);
  }
  if (o.weight.defined()) loss = loss * o.weight;
  return reduce(loss, o.reduction);
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLOptions& o) {
  detail::require_floating(input, "nll_loss");  // torch: not implemented for 'Long'
  Flat f = flatten_classes(input, target, "nll_loss");
  check_weight(o.weight, f.classes, "nll_loss");
  Targets t = resolve_targets(f, o);
  Tensor picked = picked_rows(f, t);
  const bool mean = o.reduction == Reduction::kMean;
  if (!o.weight.defined()) {
    if (mean) return picked.sum() / (t.ignored.sum() - t.rows);  // -sum / count
    return finish(picked.neg(), Tensor(), f, o.reduction);
  }
  Tensor w = target_weights(o.weight, t);
  Tensor rows = (picked * w).neg();
  return finish(rows, mean ? w.sum() : Tensor(), f, o.reduction);
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const NLLOptions& o) {
  const double eps = o.label_smoothing;
  if (eps < 0 || eps > 1)
    throw Error("cross_entropy: label_smoothing must be between 0.0 and 1.0, got " +
                std::to_string(eps));
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  if (input.dim() == 0) throw Error("cross_entropy: input must have at least 1 dim");
  Tensor logp = log_softmax(input, class_dim);

  if (is_floating(target.dtype())) {  // class probabilities
    // Floating targets are probabilities of the input's shape (torch's rule too); class
    // indices must be an integer tensor.
    if (input.shape() != target.shape())
      throw Error("cross_entropy: a floating target holds class probabilities and must have the "
                  "input's shape " + input.shape().str() + ", got " + target.shape().str() +
                  " (class indices must be an integer tensor, got " +
                  dtype_name(target.dtype()) + ")");
    const int64_t c = input.size(class_dim);
    check_weight(o.weight, c, "cross_entropy");
    Tensor t = eps > 0 ? target * (1.0 - eps) + eps / static_cast<double>(c) : target;
    Tensor terms = t * logp;
    if (o.weight.defined()) {
      std::vector<int64_t> ws(static_cast<size_t>(input.dim()), 1);
      ws[static_cast<size_t>(class_dim)] = c;
      terms = terms * o.weight.reshape(ws);
    }
    Tensor rows = terms.sum(class_dim).neg();
    if (o.reduction == Reduction::kMean)
      return rows.sum() / static_cast<double>(input.dim() == 1 ? 1 : rows.numel());
    return reduce(rows, o.reduction);
  }

  if (eps == 0) return nll_loss(logp, target, o);
  // (1 - eps) * nll + eps / C * (the sum over classes of the (weighted) -log-probabilities),
  // both 0 for ignored rows; the mean divides by the summed target weights.
  Flat f = flatten_classes(logp, target, "cross_entropy");
  check_weight(o.weight, f.classes, "cross_entropy");
  Targets t = resolve_targets(f, o);
  Tensor picked = picked_rows(f, t);
  Tensor lw = o.weight.defined() ? f.input * o.weight : f.input;
  Tensor smooth_rows = lw.sum(1).masked_fill(t.ignored, 0);
  Tensor w, nll_rows;
  if (o.weight.defined()) {
    w = target_weights(o.weight, t);
    nll_rows = picked * w;
  } else {
    nll_rows = picked;
  }
  Tensor rows = (nll_rows * (1.0 - eps) + smooth_rows * (eps / static_cast<double>(f.classes))).neg();
  Tensor denom;
  if (o.reduction == Reduction::kMean) denom = w.defined() ? w.sum() : valid_count(t);
  return finish(rows, denom, f, o.reduction);
}

}  // namespace gt::nn::functional
