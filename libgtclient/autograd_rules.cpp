// The gradient table: one rule per differentiable primitive of ops.def, keyed by OpId
// (DESIGN §3). Every op is classified in grad_rule_for() — a switch over the whole enum without a
// default, so a new op without a classification is a compiler warning and the op-table-driven
// gradcheck test fails on it (GradKind::kUnknown).
//
// Rules run inside the engine under NoGradGuard, so they are ordinary GT ops (they run on the
// workers). A rule may return a gradient in the result's broadcast shape/dtype: the engine sums
// it over broadcast dims and casts it to the input's shape and dtype.
//
// Ties: maximum/minimum split the gradient evenly between equal operands (as PyTorch does);
// max/min reductions (over all elements and over a dim) divide it evenly among the tied maxima
// (PyTorch does this for full reductions; for a dim reduction PyTorch sends it all to the one
// index it returns).
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <string>

#include "libgtclient/autograd_node.h"

namespace gt::autograd::detail {
namespace {

using gt::detail::run_op;

constexpr uint32_t kIn0 = 1, kIn1 = 2;

bool scalar_form(const Node& n) { return n.in_meta.size() == 1; }
ScalarSide side(const Node& n) { return n.attrs.scalar_side(); }
double scalar(const Node& n) { return n.attrs.scalar(); }

Tensor reshape_to(const Tensor& x, const Shape& s) {
  if (x.shape() == s) return x;
  return run_op(OpId::k_reshape, make_reshape(s), {&x});
}

// Swaps the last two dims (a reshape when one of them is 1: no data movement).
Tensor transpose_last2(const Tensor& x) {
  const Shape& s = x.shape();
  const int r = s.rank();
  if (s[r - 1] == 1 || s[r - 2] == 1) {
    Shape t = s;
    std::swap(t[r - 1], t[r - 2]);
    return reshape_to(x, t);
  }
  std::vector<int64_t> perm(static_cast<size_t>(r));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[r - 1], perm[r - 2]);
  return run_op(OpId::k_permute, make_permute(perm), {&x});
}

// One slice op: per dim (start, step, count); dims not listed keep everything.
struct DimSlice {
  int64_t start = 0, step = 1, count = 0;
};
Tensor slice_dims(const Tensor& x, const std::vector<DimSlice>& spec) {
  OpAttrs a;
  a.has_shape = true;
  for (size_t d = 0; d < spec.size(); ++d) {
    a.shape.push_back(spec[d].count);
    a.push_int(spec[d].start);
    a.push_int(spec[d].step);
  }
  return run_op(OpId::k_slice, a, {&x});
}
Tensor slice_dim(const Tensor& x, int d, int64_t start, int64_t step, int64_t count) {
  const Shape& s = x.shape();
  std::vector<DimSlice> spec(static_cast<size_t>(s.rank()));
  for (int i = 0; i < s.rank(); ++i) spec[i] = DimSlice{0, 1, s[i]};
  spec[d] = DimSlice{start, step, count};
  return slice_dims(x, spec);
}

// The reduced result's shape with the reduced dim(s) kept as 1.
Shape keepdim_shape(const Node& n) {
  const Shape& in = n.in_meta[0].shape;
  Shape s = in;
  if (n.attrs.reduce_all()) {
    for (int i = 0; i < s.rank(); ++i) s[i] = 1;
  } else if (s.rank() > 0) {
    s[static_cast<int>(n.attrs.reduce_dim())] = 1;
  }
  return s;
}

// ---- save specs ----------------------------------------------------------------------------------
SaveSpec save_none(const OpAttrs&, const Node&) { return {}; }
SaveSpec save_in0(const OpAttrs&, const Node&) { return {kIn0, false}; }
SaveSpec save_out(const OpAttrs&, const Node&) { return {0, true}; }
SaveSpec save_in0_out(const OpAttrs&, const Node&) { return {kIn0, true}; }

SaveSpec save_mul(const OpAttrs&, const Node& n) {
  if (scalar_form(n)) return {};
  return {(n.needs(0) ? kIn1 : 0u) | (n.needs(1) ? kIn0 : 0u), false};
}
SaveSpec save_div(const OpAttrs& a, const Node& n) {
  if (scalar_form(n)) return {a.scalar_side() == ScalarSide::kLeft ? kIn0 : 0u, false};
  return {kIn1 | (n.needs(1) ? kIn0 : 0u), false};
}
SaveSpec save_pow(const OpAttrs& a, const Node& n) {
  if (scalar_form(n)) {
    if (a.scalar_side() == ScalarSide::kRight) return {kIn0, false};
    return {0, true};
  }
  return {kIn0 | kIn1, n.needs(1)};
}
SaveSpec save_binary_both(const OpAttrs&, const Node& n) {
  return {scalar_form(n) ? kIn0 : (kIn0 | kIn1), false};
}
SaveSpec save_where(const OpAttrs&, const Node&) { return {kIn0, false}; }
SaveSpec save_in1(const OpAttrs&, const Node&) { return {kIn1, false}; }
// scatter_add / index_add: the index is only needed for src's gradient.
SaveSpec save_index_for_src(const OpAttrs&, const Node& n) { return {n.needs(2) ? kIn1 : 0u, false}; }
SaveSpec save_matmul(const OpAttrs&, const Node& n) {
  return {(n.needs(0) ? kIn1 : 0u) | (n.needs(1) ? kIn0 : 0u), false};
}

// ---- rules -----------------------------------------------------------------------------------------
#define RULE(name) void name(GradCtx& c)
#define G c.grad
#define N c.node
#define OUT(i) c.in_grads[i]

RULE(grad_add) {
  if (N.needs(0)) OUT(0) = G;
  if (!scalar_form(N) && N.needs(1)) OUT(1) = G;
}

RULE(grad_sub) {
  if (scalar_form(N)) {
    if (N.needs(0)) OUT(0) = side(N) == ScalarSide::kLeft ? G.neg() : G;
    return;
  }
  if (N.needs(0)) OUT(0) = G;
  if (N.needs(1)) OUT(1) = G.neg();
}

RULE(grad_mul) {
  if (scalar_form(N)) {
    if (N.needs(0)) OUT(0) = G * scalar(N);
    return;
  }
  if (N.needs(0)) OUT(0) = G * N.saved_input(1);
  if (N.needs(1)) OUT(1) = G * N.saved_input(0);
}

RULE(grad_div) {
  if (scalar_form(N)) {
    if (!N.needs(0)) return;
    if (side(N) == ScalarSide::kRight) {
      OUT(0) = G * (1.0 / scalar(N));  // d(t/s)/dt = 1/s
    } else {                           // d(s/t)/dt = -s/t^2
      Tensor t = N.saved_input(0);
      OUT(0) = (G * -scalar(N)) / (t * t);
    }
    return;
  }
  Tensor b = N.saved_input(1);
  Tensor gb = G / b;
  if (N.needs(0)) OUT(0) = gb;
  if (N.needs(1)) OUT(1) = ((gb * N.saved_input(0)) / b).neg();  // -g a / b^2
}

RULE(grad_pow) {
  if (scalar_form(N)) {
    if (!N.needs(0)) return;
    const double s = scalar(N);
    if (side(N) == ScalarSide::kRight) {  // d(t^s)/dt = s t^(s-1); 0 when s == 0
      if (s == 0) {
        OUT(0) = G * 0.0;
      } else {
        OUT(0) = G * (pow(N.saved_input(0), s - 1) * s);
      }
    } else {  // d(s^t)/dt = s^t ln s; 0 when s == 0 (PyTorch's mask for base 0)
      if (s == 0) {
        OUT(0) = G * 0.0;
      } else {
        OUT(0) = (G * N.output()) * std::log(s);
      }
    }
    return;
  }
  Tensor a = N.saved_input(0), b = N.saved_input(1);
  if (N.needs(0)) {  // g b a^(b-1), 0 where b == 0
    Tensor v = G * (b * pow(a, b - 1.0));
    OUT(0) = where(b == 0.0, 0.0, v);
  }
  if (N.needs(1)) {  // g a^b ln a, 0 where a == 0 and b >= 0
    Tensor v = (G * N.output()) * a.log();
    OUT(1) = where(a == 0.0, where(b >= 0.0, 0.0, v), v);
  }
}

// maximum (is_max) / minimum: the winner gets g, ties split it evenly.
void grad_extremum(GradCtx& c, bool is_max) {
  Tensor a = N.saved_input(0);
  if (scalar_form(N)) {
    if (!N.needs(0)) return;
    const double s = scalar(N);
    Tensor win = is_max ? a > s : a < s;
    OUT(0) = where(a == s, G * 0.5, where(win, G, 0.0));
    return;
  }
  Tensor b = N.saved_input(1);
  Tensor win = is_max ? a > b : a < b;
  Tensor ga = where(a == b, G * 0.5, where(win, G, 0.0));
  if (N.needs(1)) OUT(1) = G - ga;
  if (N.needs(0)) OUT(0) = std::move(ga);
}
RULE(grad_maximum) { grad_extremum(c, true); }
RULE(grad_minimum) { grad_extremum(c, false); }

RULE(grad_where) {
  Tensor cond = N.saved_input(0);
  if (N.needs(1)) OUT(1) = where(cond, G, 0.0);
  if (N.needs(2)) OUT(2) = where(cond, 0.0, G);
}

RULE(grad_neg) { OUT(0) = G.neg(); }
RULE(grad_exp) { OUT(0) = G * N.output(); }
RULE(grad_log) { OUT(0) = G / N.saved_input(0); }
RULE(grad_sqrt) { OUT(0) = (G / N.output()) * 0.5; }
RULE(grad_abs) {
  Tensor a = N.saved_input(0);
  OUT(0) = G * (a > 0.0) - G * (a < 0.0);  // sign(a), 0 at 0
}
RULE(grad_relu) { OUT(0) = G * (N.output() > 0.0); }
RULE(grad_sigmoid) {
  Tensor s = N.output();
  Tensor gs = G * s;
  OUT(0) = gs - gs * s;  // g s (1 - s)
}
RULE(grad_tanh) {
  Tensor t = N.output();
  OUT(0) = G * (1.0 - t * t);
}

// matmul with 1-D operands (a vector is a 1 x k row / k x 1 column) and broadcast batch dims:
// dA = G B^T, dB = A^T G, then summed over broadcast batch dims by the engine.
RULE(grad_matmul) {
  const Shape& as = N.in_meta[0].shape;
  const Shape& bs = N.in_meta[1].shape;
  const bool av = as.rank() == 1, bv = bs.rank() == 1;
  Shape gs = G.shape();
  if (av && bv) {
    gs = Shape{1, 1};
  } else if (av) {  // [..., n] -> [..., 1, n]
    Shape t;
    for (int i = 0; i < gs.rank() - 1; ++i) t.push_back(gs[i]);
    t.push_back(1);
    t.push_back(gs[gs.rank() - 1]);
    gs = t;
  } else if (bv) {  // [..., m] -> [..., m, 1]
    gs.push_back(1);
  }
  Tensor g = reshape_to(G, gs);
  if (N.needs(0)) {
    Tensor b = N.saved_input(1);
    if (bv) b = reshape_to(b, Shape{bs[0], 1});
    Tensor ga = matmul(g, transpose_last2(b));  // [..., m, k]
    if (av) {                                   // drop the m = 1 dim
      Shape s;
      for (int i = 0; i < ga.dim() - 2; ++i) s.push_back(ga.shape()[i]);
      s.push_back(as[0]);
      ga = reshape_to(ga, s);
    }
    OUT(0) = ga;
  }
  if (N.needs(1)) {
    Tensor a = N.saved_input(0);
    if (av) a = reshape_to(a, Shape{1, as[0]});
    Tensor gb = matmul(transpose_last2(a), g);  // [..., k, n]
    if (bv) {                                   // drop the n = 1 dim
      Shape s;
      for (int i = 0; i < gb.dim() - 1; ++i) s.push_back(gb.shape()[i]);
      gb = reshape_to(gb, s);
    }
    OUT(1) = gb;
  }
}

// The result's gradient with the reduced dims back as 1s (a 0-d gradient broadcasts as is).
Tensor unreduce(const Tensor& g, const Node& n) {
  return g.dim() == 0 ? g : reshape_to(g, keepdim_shape(n));
}

RULE(grad_sum) { OUT(0) = expand_to(unreduce(G, N), N.in_meta[0].shape); }

RULE(grad_mean) {
  const int64_t in_n = N.in_meta[0].shape.numel();
  const int64_t out_n = N.out_meta.shape.numel();
  const double scale = in_n == 0 ? 0.0 : static_cast<double>(out_n) / static_cast<double>(in_n);
  OUT(0) = expand_to(unreduce(G * scale, N), N.in_meta[0].shape);
}

// max/min: the gradient goes to the elements equal to the result, split evenly among ties.
void grad_reduce_extremum(GradCtx& c) {
  Tensor a = N.saved_input(0);
  Shape ks = keepdim_shape(N);
  Tensor out = reshape_to(N.output(), ks);
  Tensor mask = (a == out).cast(G.dtype());
  Tensor count = N.attrs.reduce_all() ? mask.sum()
                                      : (a.dim() == 0 ? mask : mask.sum(N.attrs.reduce_dim(), true));
  OUT(0) = mask * (reshape_to(G, ks) / count);
}
RULE(grad_max) { grad_reduce_extremum(c); }
RULE(grad_min) { grad_reduce_extremum(c); }

// var: g * 2 (x - mean) / max(0, n - correction) (inf / NaN where that is 0, like PyTorch).
RULE(grad_var) {
  Tensor x = N.saved_input(0);
  const Shape& in = N.in_meta[0].shape;
  const bool all = N.attrs.reduce_all() || in.rank() == 0;
  const int64_t n = all ? in.numel() : in[static_cast<int>(N.attrs.reduce_dim())];
  const double denom = std::max(0.0, static_cast<double>(n) - N.attrs.correction());
  Tensor mean = all ? x.mean() : x.mean(N.attrs.reduce_dim(), true);
  OUT(0) = (x - mean) * (unreduce(G, N) * (2.0 / denom));
}

// logsumexp: g * softmax(x) = g * exp(x - result).
RULE(grad_logsumexp) {
  Tensor out = reshape_to(N.output(), keepdim_shape(N));
  OUT(0) = unreduce(G, N) * (N.saved_input(0) - out).exp();
}

RULE(grad_reshape) { OUT(0) = reshape_to(G, N.in_meta[0].shape); }

RULE(grad_permute) {
  const int r = N.in_meta[0].shape.rank();
  std::vector<int64_t> inv(static_cast<size_t>(r));
  for (int i = 0; i < r; ++i) inv[static_cast<size_t>(N.attrs.ints[i])] = i;
  OUT(0) = run_op(OpId::k_permute, make_permute(inv), {&G});
}

// slice: scatters g back into zeros of the input's shape, one dim at a time: a negative step is
// a flip plus a positive one; a step s > 1 interleaves s-1 zero blocks after every element (via a
// [pre, count, 1, post] -> cat -> [pre, count*s, post] reshape); then zero blocks pad the front
// and back. (A scatter/pad primitive would do this in one op.)
RULE(grad_slice) {
  const Shape& in = N.in_meta[0].shape;
  const DType dt = G.dtype();
  Tensor r = G;
  for (int d = 0; d < in.rank(); ++d) {
    const int64_t n = in[d];
    const int64_t c0 = N.attrs.shape[d];
    int64_t start = N.attrs.slice_start(d), step = N.attrs.slice_step(d);
    if (c0 == 0) {
      OUT(0) = zeros(in, dt);
      return;
    }
    if (c0 == n && start == 0 && (step == 1 || n <= 1)) continue;  // whole dim, in order
    if (c0 == 1) step = 1;
    if (step < 0) {  // reverse, then place ascending from the lowest position
      r = slice_dim(r, d, c0 - 1, -1, c0);
      start = start + (c0 - 1) * step;
      step = -step;
    }
    Shape cur = r.shape();
    int64_t extent = c0;
    if (step > 1) {
      int64_t pre = 1, post = 1;
      for (int i = 0; i < d; ++i) pre *= cur[i];
      for (int i = d + 1; i < cur.rank(); ++i) post *= cur[i];
      Tensor r4 = reshape_to(r, Shape{pre, c0, 1, post});
      Tensor z = zeros({pre, c0, step - 1, post}, dt);
      Tensor spread = cat({r4, z}, 2);  // [pre, c0, step, post]
      extent = (c0 - 1) * step + 1;
      Tensor flat = reshape_to(spread, Shape{pre, c0 * step, post});
      if (extent != c0 * step) flat = slice_dim(flat, 1, 0, 1, extent);
      Shape s = cur;
      s[d] = extent;
      r = reshape_to(flat, s);
    }
    const int64_t before = start, after = n - start - extent;
    std::vector<Tensor> parts;
    Shape zs = r.shape();
    if (before > 0) {
      zs[d] = before;
      parts.push_back(zeros(zs, dt));
    }
    parts.push_back(r);
    if (after > 0) {
      zs[d] = after;
      parts.push_back(zeros(zs, dt));
    }
    if (parts.size() > 1) r = cat(parts, d);
  }
  OUT(0) = r;
}

RULE(grad_cat) {
  const int axis = static_cast<int>(N.attrs.axis() < 0
                                        ? N.attrs.axis() + N.in_meta[0].shape.rank()
                                        : N.attrs.axis());
  int64_t off = 0;
  for (size_t i = 0; i < N.in_meta.size(); ++i) {
    const int64_t len = N.in_meta[i].shape[axis];
    if (N.needs(i)) OUT(i) = len == G.shape()[axis] ? G : slice_dim(G, axis, off, 1, len);
    off += len;
  }
}

// expand: the engine sums the gradient over the expanded dims.
RULE(grad_expand) { OUT(0) = G; }

// masked_fill: nothing flows through the filled elements (the engine sums over broadcast dims).
RULE(grad_masked_fill) { OUT(0) = G.masked_fill(N.saved_input(1), 0); }

// clamp: g where min <= x <= max (inclusive, like PyTorch), else 0.
RULE(grad_clamp) {
  Tensor x = N.saved_input(0);
  Tensor inside;
  if (N.attrs.has_min()) inside = x >= N.attrs.clamp_min();
  if (N.attrs.has_max()) {
    Tensor below = x <= N.attrs.clamp_max();
    inside = inside.defined() ? inside * below : below;
  }
  OUT(0) = G * inside;
}

// index_select / gather: g's elements added back at the index positions (repeats accumulate).
RULE(grad_index_select) {
  Tensor index = N.saved_input(1);
  Tensor z = zeros(N.in_meta[0].shape, G.dtype());
  OUT(0) = z.index_add(N.attrs.axis(), index, G);
}
RULE(grad_gather) {
  Tensor index = N.saved_input(1);
  Tensor z = zeros(N.in_meta[0].shape, G.dtype());
  OUT(0) = z.scatter_add(N.attrs.axis(), index, G);
}

// Zeros of `shape` with `t` in its leading corner (t no larger than shape in any dim).
Tensor pad_to(const Tensor& t, const Shape& shape) {
  Tensor r = t;
  for (int d = 0; d < shape.rank(); ++d) {
    const int64_t have = r.shape()[d];
    if (have == shape[d]) continue;
    Shape zs = r.shape();
    zs[d] = shape[d] - have;
    r = cat({r, zeros(zs, r.dtype())}, d);
  }
  return r;
}

// scatter_add / index_add: x gets g; src gets g at the positions it was added to.
RULE(grad_scatter_add) {
  if (N.needs(0)) OUT(0) = G;
  if (N.needs(2)) {
    Tensor gs = G.gather(N.attrs.axis(), N.saved_input(1));  // the index's shape
    OUT(2) = gs.shape() == N.in_meta[2].shape ? gs : pad_to(gs, N.in_meta[2].shape);
  }
}
RULE(grad_index_add) {
  if (N.needs(0)) OUT(0) = G;
  if (N.needs(2)) OUT(2) = G.index_select(N.attrs.axis(), N.saved_input(1));
}

RULE(grad_cast) { OUT(0) = G; }  // the engine casts back to the input's dtype

RULE(grad_copy) {  // the old destination gets nothing; the source gets g (reduced, cast back)
  if (N.needs(1)) OUT(1) = G;
}

#undef RULE
#undef G
#undef N
#undef OUT

constexpr GradRule diff(SaveFn save, GradFn fn) {
  return GradRule{GradKind::kDifferentiable, save, fn};
}
constexpr GradRule nondiff() { return GradRule{GradKind::kNotDifferentiable, nullptr, nullptr}; }

// Every op, explicitly: no default, so a new op is a -Wswitch warning until it is classified.
GradRule grad_rule_for(OpId op) {
  switch (op) {
    // Creation and host transfer: results are leaves.
    case OpId::k_zeros:
    case OpId::k_ones:
    case OpId::k_full:
    case OpId::k_arange:
    case OpId::k_randn:
    case OpId::k_rand:
    case OpId::k_from_host:
    case OpId::k_host_chunk:
    // Comparisons (bool results) and index reductions (int64 results).
    case OpId::k_eq:
    case OpId::k_ne:
    case OpId::k_lt:
    case OpId::k_le:
    case OpId::k_gt:
    case OpId::k_ge:
    case OpId::k_argmax:
    case OpId::k_argmin:
    case OpId::k_one_hot: return nondiff();

    case OpId::k_add: return diff(save_none, grad_add);
    case OpId::k_sub: return diff(save_none, grad_sub);
    case OpId::k_mul: return diff(save_mul, grad_mul);
    case OpId::k_div: return diff(save_div, grad_div);
    case OpId::k_pow: return diff(save_pow, grad_pow);
    case OpId::k_maximum: return diff(save_binary_both, grad_maximum);
    case OpId::k_minimum: return diff(save_binary_both, grad_minimum);
    case OpId::k_where: return diff(save_where, grad_where);
    case OpId::k_neg: return diff(save_none, grad_neg);
    case OpId::k_exp: return diff(save_out, grad_exp);
    case OpId::k_log: return diff(save_in0, grad_log);
    case OpId::k_sqrt: return diff(save_out, grad_sqrt);
    case OpId::k_abs: return diff(save_in0, grad_abs);
    case OpId::k_relu: return diff(save_out, grad_relu);
    case OpId::k_sigmoid: return diff(save_out, grad_sigmoid);
    case OpId::k_tanh: return diff(save_out, grad_tanh);
    case OpId::k_matmul: return diff(save_matmul, grad_matmul);
    case OpId::k_sum: return diff(save_none, grad_sum);
    case OpId::k_mean: return diff(save_none, grad_mean);
    case OpId::k_max: return diff(save_in0_out, grad_max);
    case OpId::k_min: return diff(save_in0_out, grad_min);
    case OpId::k_reshape: return diff(save_none, grad_reshape);
    case OpId::k_permute: return diff(save_none, grad_permute);
    case OpId::k_slice: return diff(save_none, grad_slice);
    case OpId::k_cat: return diff(save_none, grad_cat);
    case OpId::k_cast: return diff(save_none, grad_cast);
    case OpId::k_copy_: return diff(save_none, grad_copy);
    case OpId::k_masked_fill: return diff(save_in1, grad_masked_fill);
    case OpId::k_clamp: return diff(save_in0, grad_clamp);
    case OpId::k_var: return diff(save_in0, grad_var);
    case OpId::k_logsumexp: return diff(save_in0_out, grad_logsumexp);
    case OpId::k_expand: return diff(save_none, grad_expand);
    case OpId::k_index_select: return diff(save_in1, grad_index_select);
    case OpId::k_gather: return diff(save_in1, grad_gather);
    case OpId::k_scatter_add: return diff(save_index_for_src, grad_scatter_add);
    case OpId::k_index_add: return diff(save_index_for_src, grad_index_add);
  }
  return GradRule{};  // unknown: an op added to ops.def without a classification
}

std::array<GradRule, kNumOps> build_table() {
  std::array<GradRule, kNumOps> t{};
  for (int i = 0; i < kNumOps; ++i) t[i] = grad_rule_for(static_cast<OpId>(i));
  return t;
}

}  // namespace

const GradRule& grad_rule(OpId op) {
  static const std::array<GradRule, kNumOps> table = build_table();
  return table[static_cast<size_t>(op)];
}

Tensor sum_to(const Tensor& g, const Shape& target) {
  const Shape& s = g.shape();
  if (s == target) return g;
  const int lead = s.rank() - target.rank();
  if (lead < 0)
    throw Error("autograd: internal error: gradient of shape " + s.str() +
                " cannot be reduced to " + target.str());
  Tensor r = g;
  if (lead > 0) {  // leading broadcast dims: fold them into one and sum once
    Shape folded;
    int64_t lead_n = 1;
    for (int i = 0; i < lead; ++i) lead_n *= s[i];
    folded.push_back(lead_n);
    for (int i = lead; i < s.rank(); ++i) folded.push_back(s[i]);
    r = reshape_to(r, folded).sum(0);
  }
  for (int d = 0; d < target.rank(); ++d)
    if (target[d] == 1 && r.shape()[d] != 1) r = r.sum(d, true);
  if (r.shape() != target) {
    if (r.numel() != target.numel())
      throw Error("autograd: internal error: gradient of shape " + s.str() +
                  " cannot be reduced to " + target.str());
    r = reshape_to(r, target);
  }
  return r;
}

Tensor expand_to(const Tensor& g, const Shape& target) {
  if (g.shape() == target) return g;
  return run_op(OpId::k_expand, make_reshape(target), {&g});
}

}  // namespace gt::autograd::detail

namespace gt::autograd {
GradKind grad_kind(OpId op) { return detail::grad_rule(op).kind; }
}  // namespace gt::autograd
