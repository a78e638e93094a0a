// The sharding rule table (dispatcherd/planner.h), as pure logic: every op in the op table has
// a plan for sharded inputs (a rule or the explicit gather fallback), plans are well-formed,
// and the named rules of ARCHITECTURE §5 give the placements they promise.
#include <catch2/catch.hpp>

#include "dispatcherd/planner.h"
#include "libgtcore/shape_rules.h"
#include "require_ok.h"

using namespace gt;
using namespace gt::dispatcher;

namespace {

const std::vector<uint32_t> kAll = {0, 1, 2};

PlanContext ctx() {
  PlanContext c;
  c.all_workers = kAll;
  c.home = 0;
  return c;
}

Placement rows(int64_t n, int axis = 0) { return Placement::shard(axis, kAll, n); }

OpPlan plan(OpId op, const OpAttrs& a, std::vector<PlanInput> in, const PlanContext& c = ctx()) {
  std::vector<TensorMeta> metas;
  for (const auto& i : in) metas.push_back(i.meta);
  auto m = infer_meta(op, metas, a);
  GT_REQUIRE_OK(m);
  return plan_op(op, a, in, *m, c);
}

void check_well_formed(const OpPlan& p, size_t n_in, const TensorMeta& out) {
  REQUIRE(!p.out.workers.empty());
  REQUIRE(p.want.size() == n_in);
  if (p.out.kind == PlacementKind::kShard) {
    int64_t total = 0;
    for (int64_t e : p.out.extents) total += e;
    REQUIRE(p.out.extents.size() == p.out.workers.size());
    REQUIRE(total == out.shape[p.out.axis]);
  }
  for (const auto& w : p.want) {
    // Every member of the result finds its operand pieces on its own worker.
    if (w.kind != PlacementKind::kSingle || p.out.kind == PlacementKind::kSingle)
      REQUIRE(w.workers == p.out.workers);
  }
}

TensorMeta f32(Shape s) { return TensorMeta{s, DType::kFloat32}; }

}  // namespace

TEST_CASE("every op has a plan for sharded inputs (rule or explicit fallback)", "[planner]") {
  const Shape s{6, 4};
  const TensorMeta m = f32(s);
  const PlanInput sharded{m, rows(6)};
  for (int i = 0; i < kNumOps; ++i) {
    const OpId op = static_cast<OpId>(i);
    const OpInfo& info = op_info(op);
    INFO("op " << info.name);
    std::vector<PlanInput> in;
    OpAttrs a;
    switch (info.attrs) {
      case AttrKind::kShapeDType: a = make_shape_dtype(s, DType::kFloat32); break;
      case AttrKind::kFull: a = make_full(s, DType::kFloat32, 1.0); break;
      case AttrKind::kArange: a = make_arange(0, 6, 1, DType::kFloat32); break;
      case AttrKind::kRandom: a = make_random(s, DType::kFloat32, 1, 2); break;
      case AttrKind::kHostData: a = make_shape_dtype(s, DType::kFloat32); break;
      case AttrKind::kReduce: a = make_reduce(0, false); break;
      case AttrKind::kShape: a = make_reshape(Shape{6, 2, 2}); break;
      case AttrKind::kDims: a = make_permute(std::vector<int64_t>{1, 0}); break;
      case AttrKind::kAxis: a = make_axis(1); break;
      case AttrKind::kDType: a = make_cast(DType::kInt64); break;
      case AttrKind::kSlice: {
        a.shape = Shape{6, 2};
        a.has_shape = true;
        for (int64_t v : {0, 1, 1, 1}) a.push_int(v);
        break;
      }
      case AttrKind::kHostChunk: a.push_int(0); break;
      case AttrKind::kStrided: {  // [6, 4] read transposed; strided_copy_'s source is [4, 6]
        const int64_t st[] = {1, 4};
        a = make_strided(Shape{4, 6}, st, 0);
        break;
      }
      default: break;
    }
    if (info.attrs == AttrKind::kHostData) a.data = {};
    int arity = info.arity < 0 ? 2 : info.arity;
    const PlanInput idx1{TensorMeta{Shape{3}, DType::kInt64}, Placement::single(1)};
    const PlanInput idx2{TensorMeta{Shape{6, 4}, DType::kInt64}, rows(6)};
    const PlanInput mask{TensorMeta{s, DType::kBool}, rows(6)};
    switch (info.attrs) {
      case AttrKind::kFillValue: a = make_fill_value(2.0); break;
      case AttrKind::kClamp: a = make_clamp(-1.0, 1.0, false); break;
      case AttrKind::kVar: a = make_var(0, false, 1.0); break;
      case AttrKind::kNumClasses: a = make_num_classes(5); break;
      case AttrKind::kSort: a = make_sort(1, false); break;
      default: break;
    }
    if (info.rule == ShapeRule::kIndexSelect) {
      in = {sharded, idx1};
    } else if (info.rule == ShapeRule::kGather) {
      in = {sharded, idx2};
    } else if (info.rule == ShapeRule::kScatterAdd) {
      in = {sharded, idx2, sharded};
    } else if (info.rule == ShapeRule::kIndexAdd) {
      in = {sharded, idx1, PlanInput{f32(Shape{6, 3}), rows(6)}};
    } else if (info.rule == ShapeRule::kOneHot) {
      in = {PlanInput{TensorMeta{Shape{6}, DType::kInt64}, rows(6)}};
    } else if (info.rule == ShapeRule::kMaskedFill) {
      in = {sharded, mask};
    } else if (info.rule == ShapeRule::kExpand) {
      in = {PlanInput{f32(Shape{6, 1}), rows(6)}};
      a = make_reshape(Shape{6, 4});
    } else if (info.rule == ShapeRule::kWhere) {
      in = {PlanInput{TensorMeta{s, DType::kBool}, rows(6)}, sharded, sharded};
    } else if (info.rule == ShapeRule::kStridedInto) {
      in = {sharded, PlanInput{f32(Shape{4, 6}), rows(4)}};
    } else if (info.rule == ShapeRule::kMatmul) {
      in = {sharded, PlanInput{f32(Shape{4, 3}), Placement::single(1)}};
    } else {
      for (int k = 0; k < arity; ++k) in.push_back(sharded);
    }
    std::vector<TensorMeta> metas;
    for (const auto& x : in) metas.push_back(x.meta);
    auto out = infer_meta(op, metas, a);
    // Every op gets valid sharded inputs here: a new op without a case fails the test.
    GT_REQUIRE_OK(out);
    OpPlan p = plan_op(op, a, in, *out, ctx());
    if (op == OpId::k_host_chunk) {
      CHECK(p.fallback);  // uploads into a spread tensor are refused
      continue;
    }
    check_well_formed(p, in.size(), *out);
    if (p.fallback) CHECK(p.out.kind == PlacementKind::kSingle);
  }
}

TEST_CASE("creation follows the scope, without one, the home worker or auto-shard", "[planner]") {
  PlanContext c = ctx();
  OpPlan home = plan(OpId::k_randn, make_random(Shape{6, 4}, DType::kFloat32, 1, 0), {}, c);
  CHECK(home.out.is_single());
  CHECK(home.out.workers[0] == 0);
  c.scope = ShardSpec{1, {}, false};
  OpPlan cols = plan(OpId::k_randn, make_random(Shape{6, 4}, DType::kFloat32, 1, 0), {}, c);
  CHECK(cols.out.kind == PlacementKind::kShard);
  CHECK(cols.out.axis == 1);
  CHECK(cols.out.extents == std::vector<int64_t>{2, 1, 1});
  CHECK(cols.local == OpPlan::Local::kCreateShard);
  OpAttrs la = local_attrs(cols, OpId::k_randn, make_random(Shape{6, 4}, DType::kFloat32, 1, 0),
                           f32(Shape{6, 4}), 1);
  CHECK(la.shape == Shape{6, 1});
  CHECK(la.n_ints == 5);
  CHECK(la.ints[3] == 2);  // member 1's columns start at 2
  c.scope = ShardSpec{0, {2}, false};
  CHECK(plan(OpId::k_zeros, make_shape_dtype(Shape{3}, DType::kFloat32), {}, c).out.workers ==
        std::vector<uint32_t>{2});
  c.scope.reset();
  c.auto_shard = true;
  CHECK(plan(OpId::k_ones, make_shape_dtype(Shape{6, 2}, DType::kFloat32), {}, c).out.kind ==
        PlacementKind::kShard);
  CHECK(plan(OpId::k_ones, make_shape_dtype(Shape{5, 2}, DType::kFloat32), {}, c).out.kind ==
        PlacementKind::kReplicate);
}

TEST_CASE("matmul rules", "[planner]") {
  PlanInput a_rows{f32(Shape{6, 4}), rows(6)};
  PlanInput b_rep{f32(Shape{4, 5}), Placement::replicate(kAll)};
  OpPlan p = plan(OpId::k_matmul, {}, {a_rows, b_rep});
  CHECK(p.out.kind == PlacementKind::kShard);
  CHECK(p.out.axis == 0);
  PlanInput a_rep{f32(Shape{6, 4}), Placement::replicate(kAll)};
  PlanInput b_cols{f32(Shape{4, 6}), rows(6, 1)};
  p = plan(OpId::k_matmul, {}, {a_rep, b_cols});
  CHECK(p.out.kind == PlacementKind::kShard);
  CHECK(p.out.axis == 1);
  PlanInput a_k{f32(Shape{5, 6}), rows(6, 1)};
  PlanInput b_k{f32(Shape{6, 2}), rows(6, 0)};
  p = plan(OpId::k_matmul, {}, {a_k, b_k});
  CHECK(p.out.kind == PlacementKind::kPartial);
  CHECK(p.want[0].same_as(a_k.placement));
  CHECK(p.want[1].same_as(b_k.placement));
}

TEST_CASE("reductions over the sharded axis give Partial or an all-reduce", "[planner]") {
  PlanInput x{f32(Shape{6, 4}), rows(6)};
  OpPlan s0 = plan(OpId::k_sum, make_reduce(0, false), {x});
  CHECK(s0.out.kind == PlacementKind::kPartial);
  OpPlan m0 = plan(OpId::k_mean, make_reduce(0, false), {x});
  CHECK(m0.out.kind == PlacementKind::kPartial);
  CHECK(m0.local_op == OpId::k_sum);
  REQUIRE(m0.post_scale);
  CHECK(*m0.post_scale == Approx(1.0 / 6));
  OpPlan mx = plan(OpId::k_max, make_reduce(kAllDims, false), {x});
  CHECK(mx.out.kind == PlacementKind::kReplicate);
  REQUIRE(mx.post_reduce);
  OpPlan s1 = plan(OpId::k_sum, make_reduce(1, false), {x});
  CHECK(s1.out.kind == PlacementKind::kShard);
  CHECK(s1.out.axis == 0);
  PlanInput y{f32(Shape{4, 6}), rows(6, 1)};
  OpPlan s2 = plan(OpId::k_sum, make_reduce(0, false), {y});  // axis 1 shifts to 0
  CHECK(s2.out.axis == 0);
  CHECK(plan(OpId::k_argmax, make_reduce(0, false), {x}).fallback);
  // Along one dim (cumsum, argsort): whole lines on each shard of another axis run locally and
  // stay sharded; along the sharded axis the input is gathered.
  for (const OpAttrs& along1 : {make_axis(1), make_sort(1, false)}) {
    const OpId op = along1.n_ints == 1 ? OpId::k_cumsum : OpId::k_argsort;
    OpPlan local = plan(op, along1, {x});
    CHECK_FALSE(local.fallback);
    CHECK(local.out.kind == PlacementKind::kShard);
    CHECK(local.out.axis == 0);
    OpAttrs along0 = along1;
    along0.ints[0] = -2;
    CHECK(plan(op, along0, {x}).fallback);
  }
}

TEST_CASE("layout: keeping the sharded axis is local, destroying it gathers", "[planner]") {
  PlanInput x{f32(Shape{6, 4}), rows(6)};
  OpPlan keep = plan(OpId::k_reshape, make_reshape(Shape{6, 2, 2}), {x});
  CHECK(keep.out.kind == PlacementKind::kShard);
  CHECK(keep.local == OpPlan::Local::kReshape);
  CHECK(plan(OpId::k_reshape, make_reshape(Shape{24}), {x}).fallback);
  OpPlan t = plan(OpId::k_permute, make_permute(std::vector<int64_t>{1, 0}), {x});
  CHECK(t.out.axis == 1);
  PlanInput y{f32(Shape{6, 4}), rows(6)};
  CHECK(plan(OpId::k_cat, make_axis(1), {x, y}).out.kind == PlacementKind::kShard);
  CHECK(plan(OpId::k_cat, make_axis(0), {x, y}).fallback);
}

TEST_CASE("elementwise: aligned shards stay local, broadcast operands are replicated", "[planner]") {
  PlanInput x{f32(Shape{6, 4}), rows(6)};
  PlanInput bias{f32(Shape{4}), Placement::single(1)};
  OpPlan p = plan(OpId::k_add, {}, {x, bias});
  CHECK(p.out.kind == PlacementKind::kShard);
  CHECK(p.want[1].kind == PlacementKind::kReplicate);  // broadcast along the sharded axis
  PlanInput col{f32(Shape{6, 1}), Placement::single(1)};
  p = plan(OpId::k_mul, {}, {x, col});
  CHECK(p.want[1].kind == PlacementKind::kShard);      // spans the sharded axis: sliced
  PlanInput part{f32(Shape{6, 4}), Placement::partial(kAll)};
  CHECK(plan(OpId::k_add, {}, {part, part}).out.kind == PlacementKind::kPartial);
  CHECK(plan(OpId::k_relu, {}, {part}).out.kind == PlacementKind::kReplicate);
}

TEST_CASE("scopes move inputs to their workers (pipeline stages)", "[planner]") {
  PlanContext c = ctx();
  c.scope = ShardSpec{0, {1}, false};
  PlanInput on0{f32(Shape{4, 4}), Placement::single(0)};
  OpPlan p = plan(OpId::k_exp, {}, {on0}, c);
  CHECK(p.out.workers == std::vector<uint32_t>{1});
  CHECK(p.want[0].workers == std::vector<uint32_t>{1});
}

TEST_CASE("strided_copy_: a single or replicated destination stays, a spread one is gathered",
          "[planner]") {
  const int64_t col[] = {4};
  const OpAttrs a = make_strided(Shape{6}, col, 1);  // column 1 of a [6, 4] destination
  const PlanInput src_on2{f32(Shape{6}), Placement::single(2)};
  const PlanInput src_rows{f32(Shape{6}), rows(6)};
  // Single: the source joins it, whole (its shape is the view's, nothing to align).
  OpPlan p = plan(OpId::k_strided_copy_, a, {{f32(Shape{6, 4}), Placement::single(1)}, src_on2});
  CHECK_FALSE(p.fallback);
  CHECK(p.out.same_as(Placement::single(1)));
  REQUIRE(p.want.size() == 2);
  CHECK(p.want[0].same_as(p.out));
  CHECK(p.want[1].same_as(p.out));
  // Replicated: every replica writes the same positions from a whole copy of the source.
  p = plan(OpId::k_strided_copy_, a, {{f32(Shape{6, 4}), Placement::replicate(kAll)}, src_rows});
  CHECK_FALSE(p.fallback);
  CHECK(p.out.same_as(Placement::replicate(kAll)));
  CHECK(p.want[0].same_as(p.out));
  CHECK(p.want[1].same_as(p.out));
  // Sharded or partial: positions are whole-tensor ones, so both go to one of dst's workers.
  const std::vector<uint32_t> two = {2, 1};
  for (const Placement& spread : {rows(6), rows(4, 1), Placement::shard(0, two, 6),
                                  Placement::partial(kAll), Placement::partial(two)}) {
    INFO("destination " << spread.str());
    p = plan(OpId::k_strided_copy_, a, {{f32(Shape{6, 4}), spread}, src_rows});
    CHECK(p.fallback);
    CHECK(p.out.same_as(Placement::single(spread.workers.front())));
    CHECK(p.want[0].same_as(p.out));
    CHECK(p.want[1].same_as(p.out));
  }
  // In a scope the destination still stays where it is (it is written, not made).
  PlanContext c = ctx();
  c.scope = ShardSpec{0, {}, false};
  p = plan(OpId::k_strided_copy_, a, {{f32(Shape{6, 4}), Placement::single(1)}, src_on2}, c);
  CHECK(p.out.same_as(Placement::single(1)));
  CHECK(p.want[1].same_as(Placement::single(1)));
}

TEST_CASE("as_strided: no rule, a spread input is gathered, a single one stays", "[planner]") {
  const int64_t st[] = {1, 4};
  const OpAttrs t = make_strided(Shape{4, 6}, st, 0);
  OpPlan p = plan(OpId::k_as_strided, t, {{f32(Shape{6, 4}), rows(6)}});
  CHECK(p.fallback);
  CHECK(p.out.is_single());
  CHECK(p.want[0].same_as(p.out));
  p = plan(OpId::k_as_strided, t, {{f32(Shape{6, 4}), Placement::single(2)}});
  CHECK(p.out.same_as(Placement::single(2)));
  CHECK(p.want[0].same_as(p.out));
}
