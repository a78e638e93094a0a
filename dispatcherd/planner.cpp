#include "dispatcherd/planner.h"

#include <algorithm>

namespace gt::dispatcher {

namespace {

bool subset(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  for (uint32_t w : a)
    if (std::find(b.begin(), b.end(), w) == b.end()) return false;
  return true;
}

// The placement a scope gives a tensor of `meta`: sharded along the configured axis when the
// rank allows (uneven extents are fine), a replica per worker when `replicated`, a single
// worker when the group has one member.
Placement scope_placement(const ShardSpec& spec, const std::vector<uint32_t>& all,
                          const TensorMeta& meta) {
  std::vector<uint32_t> ws = scope_workers(spec, all);
  if (ws.size() == 1) return Placement::single(ws[0]);
  if (spec.replicated) return Placement::replicate(ws);
  int r = meta.shape.rank();
  int axis = spec.axis < 0 ? spec.axis + r : spec.axis;
  if (axis < 0 || axis >= r) return Placement::replicate(ws);  // a scalar cannot be sliced
  return Placement::shard(axis, ws, meta.shape[axis]);
}

// For an elementwise result placed at `t`, the placement input `in` must take: the matching
// slice where it spans the sharded axis, a full replica where it broadcasts along it.
Placement aligned_input(const Placement& t, const TensorMeta& in, const TensorMeta& out) {
  if (t.kind != PlacementKind::kShard) return t.kind == PlacementKind::kPartial ? Placement::replicate(t.workers) : t;
  int ai = t.axis - (out.shape.rank() - in.shape.rank());
  if (ai < 0 || in.shape[ai] == 1) return Placement::replicate(t.workers);
  Placement p = t;
  p.axis = ai;
  return p;
}

OpPlan base(OpId op) {
  OpPlan p;
  p.local_op = op;
  return p;
}

OpPlan fallback_plan(OpId op, size_t n_in, uint32_t w) {
  OpPlan p = base(op);
  p.fallback = true;
  p.out = Placement::single(w);
  p.want.assign(n_in, p.out);
  return p;
}

uint32_t first_worker(const std::vector<PlanInput>& in, const PlanContext& ctx) {
  if (ctx.scope) return scope_workers(*ctx.scope, ctx.all_workers).front();
  for (const auto& i : in)
    if (!i.placement.workers.empty()) return i.placement.workers.front();
  return ctx.home;
}

bool is_elementwise(ShapeRule r) {
  switch (r) {
    case ShapeRule::kArith: case ShapeRule::kTrueDiv: case ShapeRule::kCompare:
    case ShapeRule::kWhere: case ShapeRule::kUnarySame: case ShapeRule::kUnaryFloat:
    case ShapeRule::kCast: case ShapeRule::kMaskedFill: case ShapeRule::kClamp: return true;
    default: return false;
  }
}

// Partial inputs stay partial through linear ops: p1 + p2, p1 - p2, -p, p * c, p / c.
bool keeps_partial(OpId op, const OpAttrs& a, const std::vector<PlanInput>& in) {
  auto partial = [](const PlanInput& i) { return i.placement.kind == PlacementKind::kPartial; };
  if (op == OpId::k_neg) return partial(in[0]);
  if (in.size() == 2 && (op == OpId::k_add || op == OpId::k_sub))
    return partial(in[0]) && partial(in[1]) && in[0].placement.workers == in[1].placement.workers &&
           in[0].meta.shape == in[1].meta.shape;
  if (in.size() == 1 && partial(in[0])) {
    if (op == OpId::k_mul) return true;
    if (op == OpId::k_div) return a.scalar_side() == ScalarSide::kRight;
  }
  return false;
}

OpPlan plan_elementwise(OpId op, const OpAttrs& a, const std::vector<PlanInput>& in,
                        const TensorMeta& out, const PlanContext& ctx) {
  OpPlan p = base(op);
  if (!in.empty() && keeps_partial(op, a, in) && !ctx.scope) {
    p.out = in[0].placement;
    for (const auto& i : in) p.want.push_back(i.placement);
    return p;
  }
  Placement t;
  bool chosen = false;
  if (ctx.scope) {
    t = scope_placement(*ctx.scope, ctx.all_workers, out);
    chosen = true;
  }
  for (size_t i = 0; i < in.size() && !chosen; ++i) {
    const Placement& pl = in[i].placement;
    if (pl.kind != PlacementKind::kShard) continue;
    int ao = pl.axis + (out.shape.rank() - in[i].meta.shape.rank());
    if (out.shape[ao] != in[i].meta.shape[pl.axis]) continue;  // broadcast along the shard axis
    t = pl;
    t.axis = ao;
    chosen = true;
  }
  if (!chosen) {
    const Placement* rep = nullptr;
    const Placement* single = nullptr;
    for (const auto& i : in) {
      if (i.placement.kind == PlacementKind::kReplicate && !rep) rep = &i.placement;
      if (i.placement.kind == PlacementKind::kSingle && !single) single = &i.placement;
    }
    if (single) {
      t = *single;  // compute where a single input already is (a replica is there or moves)
    } else if (rep) {
      t = *rep;
    } else if (!in.empty()) {
      t = Placement::replicate(in[0].placement.workers);  // partials resolved everywhere
    } else {
      t = Placement::single(ctx.home);
    }
  }
  p.out = t;
  for (const auto& i : in) p.want.push_back(aligned_input(t, i.meta, out));
  return p;
}

OpPlan plan_matmul(const std::vector<PlanInput>& in, const TensorMeta& out, const PlanContext& ctx) {
  OpPlan p = base(OpId::k_matmul);
  const PlanInput &A = in[0], &B = in[1];
  int ra = A.meta.shape.rank(), rb = B.meta.shape.rank(), ro = out.shape.rank();
  if (ra < 2 || rb < 2) {  // vector operands: gather unless both already sit together
    if (A.placement.is_single() && B.placement.is_single() &&
        A.placement.workers == B.placement.workers) {
      p.out = A.placement;
      p.want = {A.placement, B.placement};
      return p;
    }
    return fallback_plan(OpId::k_matmul, 2, first_worker(in, ctx));
  }
  auto shard_on = [](const PlanInput& x, int axis) {
    return x.placement.kind == PlacementKind::kShard && x.placement.axis == axis;
  };
  auto with_axis = [](Placement pl, int axis) {
    pl.axis = axis;
    return pl;
  };
  if (ctx.scope) {
    Placement t = scope_placement(*ctx.scope, ctx.all_workers, out);
    p.out = t;
    if (t.kind == PlacementKind::kShard && t.axis == ro - 2) {
      p.want = {with_axis(t, ra - 2), Placement::replicate(t.workers)};
    } else if (t.kind == PlacementKind::kShard && t.axis == ro - 1) {
      p.want = {Placement::replicate(t.workers), with_axis(t, rb - 1)};
    } else if (t.kind == PlacementKind::kShard) {  // a batch dim
      Placement wa = aligned_input(t, A.meta, out), wb = aligned_input(t, B.meta, out);
      // An operand without that batch dim (broadcast) is needed whole on every member.
      if (wa.kind == PlacementKind::kShard && wa.axis >= ra - 2) wa = Placement::replicate(t.workers);
      if (wb.kind == PlacementKind::kShard && wb.axis >= rb - 2) wb = Placement::replicate(t.workers);
      p.want = {wa, wb};
    } else {
      p.want = {t, t};
    }
    return p;
  }
  if (shard_on(A, ra - 2)) {  // row-sharded A x anything -> row-sharded result
    p.out = with_axis(A.placement, ro - 2);
    p.want = {A.placement, Placement::replicate(A.placement.workers)};
    return p;
  }
  if (shard_on(B, rb - 1)) {  // anything x column-sharded B -> column-sharded result
    p.out = with_axis(B.placement, ro - 1);
    p.want = {Placement::replicate(B.placement.workers), B.placement};
    return p;
  }
  if (shard_on(A, ra - 1) || shard_on(B, rb - 2)) {  // contraction-sharded -> Partial sum
    Placement s = shard_on(A, ra - 1) ? with_axis(A.placement, ra - 1) : with_axis(B.placement, ra - 1);
    p.out = Placement::partial(s.workers);
    p.want = {s, with_axis(s, rb - 2)};
    return p;
  }
  if (A.placement.kind == PlacementKind::kShard && A.placement.axis < ra - 2) {  // batch dim
    Placement t = with_axis(A.placement, A.placement.axis + (ro - ra));
    if (out.shape[t.axis] == A.meta.shape[A.placement.axis]) {
      p.out = t;
      p.want = {A.placement, aligned_input(t, B.meta, out)};
      if (p.want[1].kind == PlacementKind::kShard && p.want[1].axis >= rb - 2)
        p.want[1] = Placement::replicate(t.workers);
      return p;
    }
  }
  // Replicated / single operands: compute where they are.
  const Placement& pa = A.placement;
  const Placement& pb = B.placement;
  if (pa.kind == PlacementKind::kReplicate && pb.kind == PlacementKind::kReplicate && pa.workers == pb.workers) {
    p.out = pa;
    p.want = {pa, pb};
    return p;
  }
  uint32_t w = pa.is_single() ? pa.workers[0] : pb.is_single() ? pb.workers[0] : first_worker(in, ctx);
  p.out = Placement::single(w);
  p.want = {p.out, p.out};
  return p;
}

OpPlan plan_reduce(OpId op, const OpAttrs& a, const PlanInput& x, const TensorMeta& out,
                   const PlanContext& ctx) {
  OpPlan p = base(op);
  const Placement& pl = x.placement;
  const bool linear = op == OpId::k_sum || op == OpId::k_mean;
  // Reductions that do not compose from per-slice results (argmax, var, logsumexp) gather
  // when they reduce over the sharded axis.
  const bool arg = op == OpId::k_argmax || op == OpId::k_argmin || op == OpId::k_var ||
                   op == OpId::k_logsumexp;
  if (pl.kind == PlacementKind::kPartial) {
    if (linear) {  // sums of addends are addends of the sum
      p.out = pl;
      p.want = {pl};
      return p;
    }
    p.out = Placement::replicate(pl.workers);
    p.want = {p.out};
    return p;
  }
  if (pl.kind != PlacementKind::kShard) {
    p.out = pl;
    p.want = {pl};
    return p;
  }
  int r = x.meta.shape.rank();
  int d = a.reduce_all() ? -1 : static_cast<int>(a.reduce_dim() < 0 ? a.reduce_dim() + r : a.reduce_dim());
  if (d >= 0 && d != pl.axis) {  // reducing another axis: local, still sharded
    p.out = pl;
    if (!a.keepdim() && d < pl.axis) p.out.axis -= 1;
    p.want = {pl};
    return p;
  }
  if (arg) return fallback_plan(op, 1, first_worker({x}, ctx));
  p.want = {pl};
  if (linear) {
    p.out = Placement::partial(pl.workers);
    if (op == OpId::k_mean) {
      int64_t n = d >= 0 ? x.meta.shape[d] : x.meta.shape.numel();
      p.local_op = OpId::k_sum;  // each member sums its slice; the scale makes it the mean
      p.post_scale = n > 0 ? 1.0 / static_cast<double>(n) : 0.0;
      if (n == 0) return fallback_plan(op, 1, first_worker({x}, ctx));
    }
    return p;
  }
  // max / min over the sharded axis: local extremes, then an all-reduce of them.
  for (int64_t e : pl.extents)
    if (e == 0) return fallback_plan(op, 1, first_worker({x}, ctx));
  p.out = Placement::replicate(pl.workers);
  p.post_reduce = op == OpId::k_max ? ReduceKind::kMax : ReduceKind::kMin;
  (void)out;
  return p;
}

// Ops along one dim whose result has the input's shape (cumsum, argsort): a shard of another
// axis holds whole lines, so they run where the shards are and the result keeps the input's
// placement; along the sharded axis every line is split, so the input is gathered. Partial
// inputs are summed first (argsort of addends is not the argsort of their sum).
OpPlan plan_along_dim(OpId op, const OpAttrs& a, const PlanInput& x, const PlanContext& ctx) {
  OpPlan p = base(op);
  const Placement& pl = x.placement;
  if (pl.kind == PlacementKind::kShard) {
    const int r = std::max(x.meta.shape.rank(), 1);
    const int64_t d = a.axis() < 0 ? a.axis() + r : a.axis();
    if (d == pl.axis) return fallback_plan(op, 1, first_worker({x}, ctx));
  }
  p.out = pl.kind == PlacementKind::kPartial ? Placement::replicate(pl.workers) : pl;
  p.want = {p.out};
  return p;
}

OpPlan plan_layout(OpId op, const OpAttrs& a, const std::vector<PlanInput>& in,
                   const TensorMeta& out, const PlanContext& ctx) {
  OpPlan p = base(op);
  const PlanInput& x = in[0];
  const Placement& pl = x.placement;
  if (pl.kind == PlacementKind::kShard) {
    int ax = pl.axis;
    switch (op) {
      case OpId::k_reshape: {
        bool keeps = out.shape.rank() > ax;
        for (int d = 0; keeps && d <= ax; ++d) keeps = out.shape[d] == x.meta.shape[d];
        if (!keeps) break;
        p.out = pl;
        p.want = {pl};
        p.local = OpPlan::Local::kReshape;
        return p;
      }
      case OpId::k_permute: {
        p.out = pl;
        for (int d = 0; d < a.n_ints; ++d)
          if (a.ints[d] == ax) p.out.axis = d;
        p.want = {pl};
        return p;
      }
      case OpId::k_slice: {
        if (a.slice_start(ax) != 0 || a.slice_step(ax) != 1 || a.shape[ax] != x.meta.shape[ax]) break;
        p.out = pl;
        p.want = {pl};
        p.local = OpPlan::Local::kSlice;
        return p;
      }
      case OpId::k_cat: {
        int r = out.shape.rank();
        int c = static_cast<int>(a.axis() < 0 ? a.axis() + r : a.axis());
        if (c == ax) break;
        bool same = true;
        for (const auto& i : in) same = same && i.placement.same_as(pl);
        if (!same) break;
        p.out = pl;
        p.want.assign(in.size(), pl);
        return p;
      }
      default: break;
    }
    return fallback_plan(op, in.size(), first_worker(in, ctx));
  }
  if (pl.kind == PlacementKind::kPartial && op == OpId::k_permute) {
    p.out = pl;
    p.want = {pl};
    return p;
  }
  // Single / replicated inputs (partials resolved): compute where they are, together.
  Placement t = pl.kind == PlacementKind::kPartial ? Placement::replicate(pl.workers) : pl;
  for (const auto& i : in)
    if (!i.placement.same_as(t)) {
      t = Placement::single(first_worker(in, ctx));
      break;
    }
  p.out = t;
  p.want.assign(in.size(), t);
  return p;
}

// strided_copy_(dst, src) writes positions of the whole destination. A single or replicated
// destination stays where it is (every replica writes the same positions), with the whole source
// beside each copy: src's shape is the view's sizes, not dst's, so nothing of it aligns with
// dst's axes. A sharded or partial destination has no member holding those positions, so both
// are gathered to one of its workers, where the destination then lives (sharded_exec re-homes
// it).
OpPlan plan_strided_into(const Placement& dst) {
  OpPlan p = base(OpId::k_strided_copy_);
  if (dst.kind == PlacementKind::kSingle || dst.kind == PlacementKind::kReplicate) {
    p.out = dst;
  } else {
    p.out = Placement::single(dst.workers.front());
    p.fallback = true;
  }
  p.want = {p.out, p.out};
  return p;
}

Placement creation_target(const TensorMeta& out, const PlanContext& ctx) {
  if (ctx.scope) return scope_placement(*ctx.scope, ctx.all_workers, out);
  if (ctx.auto_shard && ctx.all_workers.size() > 1) {
    int64_t n = static_cast<int64_t>(ctx.all_workers.size());
    if (out.shape.rank() >= 1 && out.shape[0] % n == 0 && out.shape[0] > 0)
      return Placement::shard(0, ctx.all_workers, out.shape[0]);
    return Placement::replicate(ctx.all_workers);
  }
  return Placement::single(ctx.home);
}

}  // namespace

std::vector<uint32_t> scope_workers(const ShardSpec& spec, const std::vector<uint32_t>& all) {
  return spec.workers.empty() ? all : spec.workers;
}

OpPlan plan_op(OpId op, const OpAttrs& attrs, const std::vector<PlanInput>& in_raw,
               const TensorMeta& out, const PlanContext& ctx) {
  // Inside a scope, ops run on the scope's workers: inputs living elsewhere move there first.
  std::vector<PlanInput> in = in_raw;
  if (ctx.scope) {
    std::vector<uint32_t> ws = scope_workers(*ctx.scope, ctx.all_workers);
    for (auto& i : in)
      if (!subset(i.placement.workers, ws) || (ws.size() > 1 && i.placement.is_single()))
        i.placement = scope_placement(*ctx.scope, ctx.all_workers, i.meta);
  }
  const ShapeRule rule = op_info(op).rule;
  OpPlan p;
  if (is_creation(op)) {
    p = base(op);
    Placement t = creation_target(out, ctx);
    if (op == OpId::k_arange || op == OpId::k_from_host) {
      // Made whole on one member (exact values, one upload), then placed on first use.
      p.out = Placement::single(t.workers.front());
    } else {
      p.out = t;
      if (t.kind == PlacementKind::kShard) p.local = OpPlan::Local::kCreateShard;
    }
  } else if (op == OpId::k_host_chunk || op == OpId::k_copy_) {
    p = base(op);
    const Placement& dst = in_raw[0].placement;  // in-place: the destination stays where it is
    p.out = dst.kind == PlacementKind::kPartial ? Placement::replicate(dst.workers) : dst;
    p.want.push_back(p.out);
    for (size_t i = 1; i < in.size(); ++i) p.want.push_back(aligned_input(p.out, in[i].meta, in[0].meta));
    if (op == OpId::k_host_chunk && !p.out.is_single()) p.fallback = true;  // refused by caller
  } else if (rule == ShapeRule::kStridedInto) {
    p = plan_strided_into(in_raw[0].placement);  // in place: the destination's own placement
  } else if (is_elementwise(rule)) {
    p = plan_elementwise(op, attrs, in, out, ctx);
  } else if (rule == ShapeRule::kMatmul) {
    p = plan_matmul(in, out, ctx);
  } else if (rule == ShapeRule::kReduceSum || rule == ShapeRule::kReduceMean ||
             rule == ShapeRule::kReduceSame || rule == ShapeRule::kReduceIndex ||
             rule == ShapeRule::kReduceVar || rule == ShapeRule::kReduceFloat) {
    p = plan_reduce(op, attrs, in[0], out, ctx);
  } else if (rule == ShapeRule::kCumsum || rule == ShapeRule::kArgsort) {
    p = plan_along_dim(op, attrs, in[0], ctx);
  } else if (rule == ShapeRule::kReshape || rule == ShapeRule::kPermute ||
             rule == ShapeRule::kSlice || rule == ShapeRule::kCat) {
    p = plan_layout(op, attrs, in, out, ctx);
  } else {
    p = fallback_plan(op, in.size(), first_worker(in, ctx));
  }
  return p;
}

OpAttrs local_attrs(const OpPlan& plan, OpId op, const OpAttrs& attrs, const TensorMeta& out,
                    int m) {
  if (plan.local == OpPlan::Local::kSame || plan.out.kind != PlacementKind::kShard) return attrs;
  const Placement& pl = plan.out;
  OpAttrs a = attrs;
  const int64_t ext = pl.extents[static_cast<size_t>(m)];
  switch (plan.local) {
    case OpPlan::Local::kCreateShard:
      a.shape[pl.axis] = ext;
      if (op == OpId::k_rand || op == OpId::k_randn) {
        a.n_ints = 2;  // seed, counter; then where this slice sits in the whole tensor
        a.push_int(pl.axis);
        a.push_int(pl.offset_of(m));
        a.push_int(out.shape[pl.axis]);
      }
      break;
    case OpPlan::Local::kReshape:
      a.shape[pl.axis] = ext;
      break;
    case OpPlan::Local::kSlice:
      a.shape[pl.axis] = ext;
      break;
    case OpPlan::Local::kSame: break;
  }
  return a;
}

}  // namespace gt::dispatcher
