// Hot-path detection (dispatcherd/hot_paths.h) as pure logic: a stream of instructions and frees
// cut at sync points, fed the way ClientSession feeds it. What makes two stretches the same
// path is their whole signature (ops, attributes, metas, placements, dataflow), never op
// names alone.
#include <catch2/catch.hpp>

#include <map>
#include <vector>

#include "dispatcherd/hot_paths.h"
#include "gt/core/ops.h"

using namespace gt;
using namespace gt::dispatcher;
using Outcome = HotPathDetector::Outcome;

namespace {

// A session's tensors as the detector sees them, and a little stream builder over them.
struct Stream {
  HotPathDetector det;
  std::map<uint64_t, TensorEntry> tensors;
  uint64_t next_id = 1;

  explicit Stream(HotPathOptions o = {}) : det(o) {}

  uint64_t leaf(Shape s, uint32_t worker = 0) {  // made before any stretch we look at
    TensorEntry e;
    e.meta = TensorMeta{s, DType::kFloat32};
    e.placement = Placement::single(worker);
    tensors[next_id] = e;
    return next_id++;
  }
  // op(inputs...) -> a new id whose meta is the first input's (enough for the detector).
  uint64_t op(OpId op, std::vector<uint64_t> inputs, std::vector<int64_t> ints = {},
             bool compile_now = false) {
    v1::Instr in;
    in.set_op(static_cast<uint32_t>(op));
    std::vector<TensorEntry*> entries;
    for (uint64_t id : inputs) {
      in.add_inputs(id);
      entries.push_back(&tensors.at(id));
    }
    for (int64_t v : ints) in.add_ints(v);
    const uint64_t out = next_id++;
    in.set_out(out);
    det.instr(in, entries, out, "", compile_now);
    tensors[out] = *entries.at(0);
    return out;
  }
  void free(uint64_t id) {
    det.free(id, tensors.at(id));
    tensors.erase(id);
  }
  // One step of a small MLP-like loop: y = relu(x @ w + b); loss = sum(y); temporaries freed.
  HotPathDetector::Cut step(uint64_t x, uint64_t w, uint64_t b) {
    const uint64_t h = op(OpId::k_matmul, {x, w});
    const uint64_t z = op(OpId::k_add, {h, b});
    const uint64_t y = op(OpId::k_relu, {z});
    const uint64_t loss = op(OpId::k_sum, {y}, {-1});
    free(h);
    free(z);
    free(y);
    (void)loss;  // what the step hands back (read at the sync point)
    return det.cut();
  }
};

}  // namespace

TEST_CASE("hot paths: a repeated stretch becomes a hot path on its second sight, then hits") {
  Stream s;
  const uint64_t x = s.leaf(Shape{4, 8}), w = s.leaf(Shape{8, 8}), b = s.leaf(Shape{8});
  auto c1 = s.step(x, w, b);
  CHECK(c1.outcome == Outcome::kNone);
  CHECK(c1.instructions == 4);
  auto c2 = s.step(x, w, b);
  CHECK(c2.outcome == Outcome::kDefined);
  CHECK(c2.path == 1);
  for (int i = 0; i < 3; ++i) {
    auto c = s.step(x, w, b);
    CHECK(c.outcome == Outcome::kHit);
    CHECK(c.path == 1);
  }
  CHECK(s.det.stats().defined == 1);
  CHECK(s.det.stats().hits == 3);
  CHECK(s.det.stats().misses == 0);
}

TEST_CASE("hot paths: the same op names with a different dataflow are a different path") {
  Stream s;
  const uint64_t a = s.leaf(Shape{16}), b = s.leaf(Shape{16});
  // (a + b) * a  vs  (a + b) * b: same ops, same shapes, a different input feeds the multiply.
  auto run = [&](bool second_reads_b) {
    const uint64_t t = s.op(OpId::k_add, {a, b});
    s.op(OpId::k_mul, {t, second_reads_b ? b : a});
    return s.det.cut();
  };
  CHECK(run(false).outcome == Outcome::kNone);
  CHECK(run(false).outcome == Outcome::kDefined);
  const auto other = run(true);
  CHECK(other.outcome == Outcome::kMiss);  // not the hot path, and its predecessor was
  CHECK(other.path == 0);
  CHECK(run(true).outcome == Outcome::kDefined);  // a path of its own on its second sight
  CHECK(run(false).outcome == Outcome::kHit);
  CHECK(s.det.stats().defined == 2);

  // A result reading its own stretch's result vs an outside tensor of the same meta differ too.
  Stream u;
  const uint64_t p = u.leaf(Shape{16});
  auto chain = [&](bool from_local) {
    const uint64_t t = u.op(OpId::k_neg, {p});
    u.op(OpId::k_neg, {from_local ? t : p});
    return u.det.cut();
  };
  chain(true);
  CHECK(chain(true).outcome == Outcome::kDefined);
  CHECK(chain(false).outcome == Outcome::kMiss);
}

TEST_CASE("hot paths: attributes, shapes and placements are part of the key") {
  Stream s;
  const uint64_t x = s.leaf(Shape{4, 8}), y = s.leaf(Shape{5, 8}), z = s.leaf(Shape{4, 8}, 1);
  auto sum = [&](uint64_t in, int64_t dim) {
    s.op(OpId::k_sum, {in}, {dim});
    return s.det.cut();
  };
  sum(x, 0);
  CHECK(sum(x, 0).outcome == Outcome::kDefined);
  CHECK(sum(x, 1).outcome == Outcome::kMiss);  // another dim
  CHECK(sum(x, 0).outcome == Outcome::kHit);
  CHECK(sum(y, 0).outcome == Outcome::kMiss);  // a shape change mid-loop
  CHECK(sum(y, 0).outcome == Outcome::kDefined);  // ... detected again
  CHECK(sum(z, 0).outcome == Outcome::kMiss);  // the same meta on another worker
  // An outside tensor read twice is one slot; two distinct outside tensors are two.
  Stream t;
  const uint64_t a = t.leaf(Shape{3}), b = t.leaf(Shape{3});
  auto add = [&](uint64_t l, uint64_t r) {
    t.op(OpId::k_add, {l, r});
    return t.det.cut();
  };
  add(a, a);
  CHECK(add(a, a).outcome == Outcome::kDefined);
  CHECK(add(a, b).outcome == Outcome::kMiss);
}

TEST_CASE("hot paths: frees are part of the stretch, tainted and overlong stretches are not") {
  Stream s;
  const uint64_t x = s.leaf(Shape{8});
  auto body = [&](bool free_tmp) {
    const uint64_t t = s.op(OpId::k_exp, {x});
    s.op(OpId::k_neg, {t});
    if (free_tmp) s.free(t);
    return s.det.cut();
  };
  body(true);
  CHECK(body(true).outcome == Outcome::kDefined);
  CHECK(body(false).outcome == Outcome::kMiss);  // the free is part of what the path does
  CHECK(body(true).outcome == Outcome::kHit);
  // Frees of tensors made before the stretch (the last step's loss, freed with this frame or
  // the one before) do not change it.
  const uint64_t old1 = s.leaf(Shape{1}), old2 = s.leaf(Shape{5});
  s.free(old1);
  CHECK(body(true).outcome == Outcome::kHit);
  const uint64_t t = s.op(OpId::k_exp, {x});
  s.free(old2);
  s.op(OpId::k_neg, {t});
  s.free(t);
  CHECK(s.det.cut().outcome == Outcome::kHit);
  s.op(OpId::k_exp, {x});
  s.op(OpId::k_neg, {x});
  s.det.taint();  // e.g. an instruction was refused
  CHECK(s.det.cut().outcome == Outcome::kMiss);
  CHECK(s.det.cut().outcome == Outcome::kNone);  // an empty stretch is nothing
  // A `compile: false` stretch after a hot path is no candidate and no miss: the user opted out.
  CHECK(body(true).outcome == Outcome::kHit);
  const uint64_t misses = s.det.stats().misses;
  s.op(OpId::k_exp, {x});
  s.det.opt_out();
  CHECK(s.det.cut().outcome == Outcome::kNone);
  CHECK(s.det.stats().misses == misses);
  CHECK(body(true).outcome == Outcome::kHit);  // and the path is still there

  Stream shortcap(HotPathOptions{true, 2, 64, 3});
  const uint64_t y = shortcap.leaf(Shape{2});
  for (int rep = 0; rep < 3; ++rep) {
    for (int i = 0; i < 4; ++i) shortcap.op(OpId::k_neg, {y});
    CHECK(shortcap.det.cut().outcome == Outcome::kNone);
  }
  CHECK(shortcap.det.stats().cached == 0);
}

TEST_CASE("hot paths: the cache is bounded, least recently seen first out") {
  Stream s(HotPathOptions{true, 2, 2, 4096});
  const uint64_t x = s.leaf(Shape{8});
  auto one = [&](int64_t dim) {
    s.op(OpId::k_sum, {x}, {dim});
    return s.det.cut();
  };
  one(0);
  CHECK(one(0).outcome == Outcome::kDefined);  // path 1
  one(1);                                      // a candidate: the cache is full (2)
  const auto c = one(2);                       // evicts the least recent: path 1
  CHECK(c.evicted == 1);
  CHECK(s.det.stats().evictions == 1);
  CHECK(s.det.stats().cached == 2);
  CHECK(one(0).outcome == Outcome::kNone);     // forgotten: a candidate again
  CHECK(one(0).outcome == Outcome::kDefined);
  CHECK(one(0).path == 2);
}

TEST_CASE("hot paths: a session's signatures are bounded in bytes too") {
  HotPathOptions o;
  o.cache_bytes = 4096;  // a quarter: 1024 bytes per signature at most
  Stream s(o);
  const uint64_t x = s.leaf(Shape{8});
  auto stretch = [&](int64_t dim, int n) {
    for (int i = 0; i < n; ++i) s.op(OpId::k_sum, {x}, {dim});
    return s.det.cut();
  };
  for (int64_t dim = 0; dim < 100; ++dim) stretch(dim, 10);  // 100 distinct candidates
  CHECK(s.det.stats().cached_bytes <= o.cache_bytes);
  CHECK(s.det.stats().cached < 100);
  CHECK(s.det.stats().cached > 10);
  stretch(0, 200);  // a signature over 1024 bytes: never kept
  stretch(0, 200);
  CHECK(s.det.stats().defined == 0);
  CHECK(s.det.stats().cached_bytes <= o.cache_bytes);
}

TEST_CASE("hot paths: min_repeats, compile: true scopes, and disabling") {
  Stream now(HotPathOptions{true, 1, 64, 4096});
  const uint64_t x = now.leaf(Shape{8});
  now.op(OpId::k_neg, {x});
  CHECK(now.det.cut().outcome == Outcome::kDefined);  // compile at first sight

  // A `compile: true` signal scope: its stretch is a hot path at first sight, whatever
  // min_repeats says; other stretches still need their repeats.
  Stream scoped;
  const uint64_t v = scoped.leaf(Shape{8});
  scoped.op(OpId::k_exp, {v}, {}, true);
  const auto first = scoped.det.cut();
  CHECK(first.outcome == Outcome::kDefined);
  scoped.op(OpId::k_exp, {v}, {}, true);
  CHECK(scoped.det.cut().outcome == Outcome::kHit);
  scoped.op(OpId::k_neg, {v});
  CHECK(scoped.det.cut().outcome == Outcome::kMiss);  // not compiled: a candidate

  Stream three(HotPathOptions{true, 3, 64, 4096});
  const uint64_t y = three.leaf(Shape{8});
  std::vector<Outcome> seen;
  for (int i = 0; i < 4; ++i) {
    three.op(OpId::k_neg, {y});
    seen.push_back(three.det.cut().outcome);
  }
  CHECK(seen == std::vector<Outcome>{Outcome::kNone, Outcome::kNone, Outcome::kDefined,
                                     Outcome::kHit});

  Stream off(HotPathOptions{false, 2, 64, 4096});
  const uint64_t z = off.leaf(Shape{8});
  for (int i = 0; i < 3; ++i) {
    off.op(OpId::k_neg, {z});
    CHECK(off.det.cut().outcome == Outcome::kNone);
  }
  CHECK(off.det.stats().cached == 0);
}

TEST_CASE("hot paths: a scope change inside a stretch is part of its key, eviction is reported") {
  Stream s;
  const uint64_t x = s.leaf(Shape{4, 8});
  // relu, (scope "inner") neg: twice with the same inner scope -> one path; another name -> not.
  auto stretch = [&](const char* inner) {
    const uint64_t a = s.op(OpId::k_relu, {x});
    s.det.scope(inner);
    const uint64_t b = s.op(OpId::k_neg, {a});
    s.free(a);
    (void)b;
    return s.det.cut();
  };
  CHECK(stretch("inner").outcome == Outcome::kNone);
  const auto defined = stretch("inner");
  CHECK(defined.outcome == Outcome::kDefined);
  CHECK(defined.instructions == 2);
  const auto other = stretch("other");
  CHECK(other.outcome == Outcome::kMiss);  // a different stretch, not the hot path
  CHECK(other.path == 0);

  // Every hot path pushed out of the cache is listed (the workers holding it forget it).
  Stream t(HotPathOptions{true, 1, 2});
  const uint64_t y = t.leaf(Shape{2});
  std::vector<uint64_t> paths;
  for (OpId op : {OpId::k_relu, OpId::k_neg, OpId::k_exp}) {
    t.op(op, {y});
    const auto c = t.det.cut();
    REQUIRE(c.outcome == Outcome::kDefined);
    paths.push_back(c.path);
    if (op == OpId::k_exp) CHECK(c.forgotten == std::vector<uint64_t>{paths[0]});
    else CHECK(c.forgotten.empty());
  }
}

TEST_CASE("hot paths: a stretch is found to follow any hot path, not only the previous one") {
  // Two alternating paths (a GAN's two steps; training and evaluation): the session holds a
  // stretch back while it is the beginning of some hot path (client_session_hot.cpp), so the
  // check must know both, whichever ran last.
  Stream s;
  const uint64_t x = s.leaf(Shape{8});
  auto path_a = [&](bool cut) {
    const uint64_t t = s.op(OpId::k_exp, {x});
    s.op(OpId::k_neg, {t});
    return cut ? s.det.cut() : HotPathDetector::Cut{};
  };
  auto path_b = [&](bool cut) {
    const uint64_t t = s.op(OpId::k_relu, {x});
    s.op(OpId::k_abs, {t});
    return cut ? s.det.cut() : HotPathDetector::Cut{};
  };
  CHECK_FALSE(s.det.follows_hot_path());  // an empty stretch, no path yet
  s.det.cut();
  for (int i = 0; i < 2; ++i) {  // both become hot paths
    path_a(true);
    path_b(true);
  }
  // After A: the first op of B follows B; then A's first op follows A.
  CHECK(path_a(true).outcome == Outcome::kHit);
  s.op(OpId::k_relu, {x});
  CHECK(s.det.follows_hot_path());
  CHECK(s.det.cut().outcome == Outcome::kMiss);  // (only half of B: a stretch of its own)
  CHECK(path_b(true).outcome == Outcome::kHit);
  s.op(OpId::k_exp, {x});
  CHECK(s.det.follows_hot_path());
  // The whole of A, checked at every step, still follows; one op more leaves every path.
  const uint64_t t = s.op(OpId::k_exp, {x});
  (void)t;
  CHECK_FALSE(s.det.follows_hot_path());  // exp, exp: neither A nor B
  s.det.cut();
  // A stretch that begins like neither is not held; nor after a cut does it stay refused.
  s.op(OpId::k_sigmoid, {x});
  CHECK_FALSE(s.det.follows_hot_path());
  s.det.cut();
  const uint64_t u = s.op(OpId::k_relu, {x});
  CHECK(s.det.follows_hot_path());
  s.op(OpId::k_abs, {u});
  CHECK(s.det.follows_hot_path());
  CHECK(s.det.cut().outcome == Outcome::kHit);
}

TEST_CASE("hot paths: a long stretch is cut by length into segments of s, 2s, 4s, ...") {
  HotPathOptions o;
  o.segment = 2;
  Stream s(o);
  const uint64_t x = s.leaf(Shape{4, 8});
  // A 13-instruction step fed the way ClientSession feeds it: the session cuts (by length)
  // whenever the detector says the segment is full, and at the step's sync point.
  auto run_step = [&] {
    std::vector<HotPathDetector::Cut> cuts;
    uint64_t v = x;
    for (int i = 0; i < 13; ++i) {
      const uint64_t next = s.op(i % 2 ? OpId::k_relu : OpId::k_neg, {v});
      if (v != x) s.free(v);
      v = next;
      if (s.det.segment_full()) cuts.push_back(s.det.cut(/*by_length=*/true));
    }
    cuts.push_back(s.det.cut());  // the sync point: the rest (7, before the third segment's 8)
    return cuts;
  };
  const auto first = run_step();
  REQUIRE(first.size() == 3);
  CHECK(first[0].instructions == 2);
  CHECK(first[1].instructions == 4);
  CHECK(first[2].instructions == 7);
  for (const auto& c : first) CHECK(c.outcome == HotPathDetector::Outcome::kNone);
  // Each segment is its own hot path on its second sight, then hits; they are three paths.
  const auto second = run_step();
  REQUIRE(second.size() == 3);
  CHECK(second[0].outcome == HotPathDetector::Outcome::kDefined);
  CHECK(second[1].outcome == HotPathDetector::Outcome::kDefined);
  CHECK(second[2].outcome == HotPathDetector::Outcome::kDefined);
  CHECK(second[0].path != second[1].path);
  CHECK(second[1].path != second[2].path);
  const auto third = run_step();
  REQUIRE(third.size() == 3);
  for (int k = 0; k < 3; ++k) {
    CHECK(third[static_cast<size_t>(k)].outcome == HotPathDetector::Outcome::kHit);
    CHECK(third[static_cast<size_t>(k)].path == second[static_cast<size_t>(k)].path);
  }
  CHECK(s.det.stats().defined == 3);
  CHECK(s.det.stats().hits == 3);
  CHECK(s.det.stats().misses == 0);
}

TEST_CASE("hot paths: segment cuts count every instruction, and 0 turns them off") {
  HotPathOptions o;
  o.segment = 3;
  Stream s(o);
  const uint64_t x = s.leaf(Shape{4});
  // A tainted stretch (a refused instruction) is still cut at the same places: segments stay
  // where they are whatever happened inside one.
  s.op(OpId::k_neg, {x});
  s.det.taint();
  s.op(OpId::k_neg, {x});
  CHECK_FALSE(s.det.segment_full());
  s.op(OpId::k_neg, {x});
  CHECK(s.det.segment_full());
  s.det.cut(true);
  for (int i = 0; i < 5; ++i) {  // the second segment is twice as long
    s.op(OpId::k_neg, {x});
    CHECK_FALSE(s.det.segment_full());
  }
  s.op(OpId::k_neg, {x});
  CHECK(s.det.segment_full());
  s.det.cut(true);
  s.op(OpId::k_neg, {x});
  s.det.cut();  // any other cut: the next segment is `segment` again
  s.op(OpId::k_neg, {x});
  s.op(OpId::k_neg, {x});
  CHECK_FALSE(s.det.segment_full());
  s.op(OpId::k_neg, {x});
  CHECK(s.det.segment_full());

  Stream off;  // the default: no length cuts however long the stretch
  const uint64_t y = off.leaf(Shape{4});
  for (int i = 0; i < 100; ++i) off.op(OpId::k_neg, {y});
  CHECK_FALSE(off.det.segment_full());
}
