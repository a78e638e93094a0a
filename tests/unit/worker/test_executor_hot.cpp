// Hot paths on the executor (workerd/executor_hot.cpp, hot_path_store.h), CPU backend in-process:
// a HotRun gives bitwise the results, tensors and op counts of the same instructions sent eagerly,
// with its elementwise chains fused (and falling back to one op at a time where a fused kernel
// cannot take the tensors); poison inside a path is inherited, not reported again; definitions
// that do not hold together are refused; paths die with their session.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cpu_rig.h"
#include "executor_test_util.h"
#include "libgtcore/comm.h"
#include "libgtcore/instr_codec.h"
#include "workerd/cpu/cpu_backend.h"
#include "workerd/executor.h"

using namespace gt;
using gt::test::add_request;
using gt::test::bound;
using gt::test::free_here;
using gt::test::hot_run;
using gt::test::local;
using gt::test::op;
using gt::test::path_of;
using gt::test::Outbox;
using worker::CpuBackend;
using worker::CpuBackendOptions;
using worker::Executor;

namespace {

constexpr uint64_t kSession = gt::test::CpuRig::kSession;
using Rig = gt::test::CpuRig;

v1::Instr random(uint64_t out, Shape s, uint64_t seed) {
  return op(OpId::k_randn, out, {}, make_random(s, DType::kFloat32, seed, 0));
}
OpAttrs scalar(ScalarSide side, double v) { return make_binary_scalar(side, v, false); }

// y = exp(w / ((2 - relu(x * 1.5 + 0.25)) * bias)): seven fusable ops, each intermediate freed
// right after its use. `in(k)` names instruction k's result, `x`, `bias`, `w` the inputs.
template <class In>
void chain(v1::WorkerBatch& b, const In& in, uint64_t x, uint64_t bias, uint64_t w,
           const std::vector<uint64_t>& outs) {
  *b.add_instrs() = op(OpId::k_mul, outs[0], {x}, scalar(ScalarSide::kRight, 1.5));
  *b.add_instrs() = op(OpId::k_add, outs[1], {in(0)}, scalar(ScalarSide::kRight, 0.25));
  free_here(b, {in(0)});
  *b.add_instrs() = op(OpId::k_relu, outs[2], {in(1)});
  free_here(b, {in(1)});
  *b.add_instrs() = op(OpId::k_sub, outs[3], {in(2)}, scalar(ScalarSide::kLeft, 2.0));
  free_here(b, {in(2)});
  *b.add_instrs() = op(OpId::k_mul, outs[4], {in(3), bias});
  free_here(b, {in(3)});
  *b.add_instrs() = op(OpId::k_div, outs[5], {w, in(4)});
  free_here(b, {in(4)});
  *b.add_instrs() = op(OpId::k_exp, outs[6], {in(5)});
  free_here(b, {in(5)});
}

// The same chain as a HotPath over bindings (x, bias, w).
v1::HotPath chain_path(uint64_t id) {
  v1::WorkerBatch tmp;
  chain(tmp, [](uint64_t k) { return local(k); }, bound(0), bound(1), bound(2),
        {1, 1, 1, 1, 1, 1, 1});
  return path_of(tmp, id, 3);
}

// Inputs x [shape] (1), bias [bias_shape] (2), w [shape] (3).
void make_inputs(Rig& r, Shape bias_shape, Shape shape = Shape{64, 300}) {
  v1::WorkerBatch b = r.batch();
  *b.add_instrs() = random(1, shape, 11);
  *b.add_instrs() = random(2, bias_shape, 12);
  *b.add_instrs() = random(3, shape, 13);
  r.run(std::move(b));
}

// The chain on inputs 1, 2, 3: eagerly (results 200..206), then as a HotRun (100..106).
void run_eager_then_hot(Rig& r) {
  v1::WorkerBatch eager = r.batch();
  chain(eager, [](uint64_t k) { return 200 + k; }, 1, 2, 3, {200, 201, 202, 203, 204, 205, 206});
  r.run(std::move(eager));
  v1::WorkerBatch hot = r.batch();
  *hot.add_hot_define() = chain_path(5);
  *hot.add_instrs() = hot_run(5, {1, 2, 3}, 100);
  r.run(std::move(hot));
}

}  // namespace

TEST_CASE("a HotRun gives bitwise the eager results, with its chain fused",
          "[worker][hot]") {
  Rig r;
  make_inputs(r, Shape{300});
  // Eager: results 200..206, only 206 survives.
  v1::WorkerBatch eager = r.batch();
  chain(eager, [](uint64_t k) { return 200 + k; }, 1, 2, 3, {200, 201, 202, 203, 204, 205, 206});
  r.run(std::move(eager));
  const uint64_t ops_eager = r.load().ops_executed();
  const size_t tensors_eager = r.ex.tensor_count();

  v1::WorkerBatch hot = r.batch();
  *hot.add_hot_define() = chain_path(5);
  *hot.add_instrs() = hot_run(5, {1, 2, 3}, 100);
  hot.set_hot_extra(7 + 6 - 1);  // seven instructions and six frees in one position
  const uint64_t seq_before = r.ex.executed_seq();
  r.run(std::move(hot));
  CHECK(r.ex.executed_seq() - seq_before == 13);
  CHECK(r.out.errors().empty());
  const v1::WorkerLoad l = r.load();
  CHECK(l.hot_path_hits() == 1);
  CHECK(l.hot_paths() == 1);
  CHECK(l.fused_ops() == 7);
  CHECK(l.ops_executed() - ops_eager == 7);  // the same op count as eagerly
  CHECK(r.ex.tensor_count() == tensors_eager + 1);  // only the result: no intermediate left

  const auto [a, pa] = r.fetch(206);
  const auto [b, pb] = r.fetch(106);
  REQUIRE(a.size() == 64 * 300 * sizeof(float));
  CHECK(pa.empty());
  CHECK(pb.empty());
  CHECK(a == b);  // bitwise

  // Closed form at one element, against the inputs.
  auto floats = [](const std::string& s) {
    std::vector<float> v(s.size() / 4);
    std::memcpy(v.data(), s.data(), s.size());
    return v;
  };
  const auto x = floats(r.fetch(1).first), bias = floats(r.fetch(2).first),
             w = floats(r.fetch(3).first), y = floats(b);
  for (int i : {0, 299, 300, 12345, 64 * 300 - 1}) {
    const float relu = std::max(0.0f, x[i] * 1.5f + 0.25f);
    const float want = std::exp(w[i] / ((2.0f - relu) * bias[i % 300]));
    CHECK(y[i] == Approx(want).epsilon(1e-5));
  }
}

TEST_CASE("a column operand is gathered a block at a time, with the eager results",
          "[worker][hot]") {
  Rig r;
  make_inputs(r, Shape{64, 1});  // a column: broadcasts, but does not repeat along the rows
  run_eager_then_hot(r);
  CHECK(r.out.errors().empty());
  CHECK(r.load().fused_ops() == 7);
  CHECK(r.fetch(206).first == r.fetch(106).first);  // bitwise
}

TEST_CASE("a chain over many of the compute pool's chunks gives bitwise the eager results",
          "[worker][hot]") {
  // 700,700 elements: several chunks taken by the pool's threads (fused_chain.cpp), a last
  // chunk and block that are partial, the head and w streamed and prefetched a block ahead.
  for (const Shape bias : {Shape{1001}, Shape{700, 1}}) {
    Rig r;
    make_inputs(r, bias, Shape{700, 1001});
    run_eager_then_hot(r);
    CHECK(r.out.errors().empty());
    CHECK(r.load().fused_ops() == 7);
    const std::string a = r.fetch(206).first;
    CHECK(a.size() == size_t{700} * 1001 * sizeof(float));
    CHECK(a == r.fetch(106).first);  // bitwise
  }
}

TEST_CASE("a chain that leaves float32 fuses its float32 prefix, the rest runs one op at a time",
          "[worker][hot]") {
  Rig r;
  v1::WorkerBatch in = r.batch();
  *in.add_instrs() = random(1, Shape{64, 300}, 11);
  // A float64 bias: the chain's tensors are not all float32.
  *in.add_instrs() = op(OpId::k_randn, 2, {}, make_random(Shape{300}, DType::kFloat64, 12, 0));
  *in.add_instrs() = random(3, Shape{64, 300}, 13);
  r.run(std::move(in));
  run_eager_then_hot(r);
  CHECK(r.out.errors().empty());
  CHECK(r.load().fused_ops() == 4);  // mul, add, relu, sub; then mul by the float64 bias
  const auto [a, pa] = r.fetch(206);
  CHECK(a.size() == 64 * 300 * sizeof(double));  // promoted, as eagerly
  CHECK(a == r.fetch(106).first);
}

TEST_CASE("a poisoned input of a hot path is inherited and names the op that failed",
          "[worker][hot]") {
  Rig r;
  make_inputs(r, Shape{300});
  v1::WorkerBatch bad = r.batch();
  *bad.add_instrs() = op(OpId::k_neg, 50, {999});  // unknown handle: 50 is poisoned by neg
  r.run(std::move(bad));
  REQUIRE(r.out.errors().size() == 1);
  v1::WorkerBatch hot = r.batch();
  *hot.add_hot_define() = chain_path(5);
  *hot.add_instrs() = hot_run(5, {50, 2, 3}, 100);
  r.run(std::move(hot));
  CHECK(r.out.errors().size() == 1);  // inherited, not reported again
  CHECK(r.fetch(106).second == "neg");
  CHECK(r.load().fused_ops() == 0);
}

TEST_CASE("an upload inside a hot path takes the run's payload", "[worker][hot]") {
  Rig r;
  v1::HotPath p;
  p.set_id(1);
  *p.add_instrs() = op(OpId::k_from_host, 1, {}, make_shape_dtype(Shape{3}, DType::kFloat32));
  *p.add_instrs() = op(OpId::k_neg, 1, {local(0)});
  p.add_uploads(0);
  p.add_frees(0);
  p.add_free_at(2);
  for (float base : {1.0f, 10.0f}) {
    v1::WorkerBatch b = r.batch();
    if (base == 1.0f) *b.add_hot_define() = p;
    v1::Instr run = hot_run(1, {}, base == 1.0f ? 10 : 20);
    const float v[3] = {base, base + 1, base + 2};
    run.mutable_hot()->add_data(std::string(reinterpret_cast<const char*>(v), sizeof v));
    *b.add_instrs() = std::move(run);
    r.run(std::move(b));
  }
  CHECK(r.out.errors().empty());
  const float want[3] = {-10, -11, -12};
  CHECK(r.fetch(21).first == std::string(reinterpret_cast<const char*>(want), sizeof want));
  CHECK(r.ex.tensor_count() == 2);  // 11 and 21; the uploads were freed inside the path
}

TEST_CASE("hot path definitions that do not hold together are refused", "[worker][hot]") {
  Rig r;
  auto refused = [&](v1::HotPath p) {
    const size_t before = r.out.errors().size();
    v1::WorkerBatch b = r.batch();
    *b.add_hot_define() = std::move(p);
    r.run(std::move(b));
    return r.out.errors().size() == before + 1 && r.load().hot_paths() == 0;
  };
  auto base = [] {
    v1::HotPath p;
    p.set_id(3);
    p.set_bindings(1);
    *p.add_instrs() = op(OpId::k_neg, 1, {bound(0)});
    *p.add_instrs() = op(OpId::k_exp, 1, {local(0)});
    return p;
  };
  v1::HotPath forward = base();
  forward.mutable_instrs(0)->set_inputs(0, local(1));  // reads a later result
  CHECK(refused(forward));
  v1::HotPath unbound = base();
  unbound.set_bindings(0);
  CHECK(refused(unbound));
  v1::HotPath two_outs = base();
  two_outs.mutable_instrs(1)->set_out(2);
  CHECK(refused(two_outs));
  v1::HotPath not_op = base();
  not_op.mutable_instrs(1)->set_op(0);
  CHECK(refused(not_op));
  v1::HotPath early_free = base();
  early_free.add_frees(1);
  early_free.add_free_at(1);  // before instruction 1 made it
  CHECK(refused(early_free));
  v1::HotPath unpaired = base();
  unpaired.add_frees(0);
  CHECK(refused(unpaired));
  v1::HotPath nested = base();
  *nested.mutable_instrs(1)->mutable_hot() = v1::HotRun();
  CHECK(refused(nested));
  v1::HotPath empty;
  empty.set_id(4);
  CHECK(refused(empty));
  // Communication (a sharded path's exchange): a known comm with its tag, a result exactly
  // when it is not a send, and not an op at the same time.
  auto with_comm = [&](CommId c, const OpAttrs& a, uint64_t out) {
    v1::HotPath p = base();
    v1::Instr* in = p.add_instrs();
    encode_comm_instr(c, a, in);
    in->add_inputs(local(1));
    in->set_out(out);
    return p;
  };
  const uint32_t pair[] = {0, 1};
  CHECK(refused(with_comm(CommId::k_send, make_send(1, 7), 1)));  // a send has no result
  CHECK(refused(with_comm(CommId::k_all_reduce, make_all_reduce(7, ReduceKind::kSum, pair), 0)));
  CHECK(refused(with_comm(CommId::k_send, OpAttrs{}, 0)));  // no tag
  v1::HotPath unknown = with_comm(CommId::k_send, make_send(1, 7), 0);
  unknown.mutable_instrs(2)->set_comm(99);
  CHECK(refused(unknown));
  v1::HotPath both = with_comm(CommId::k_send, make_send(1, 7), 0);
  both.mutable_instrs(2)->set_op(op_wire_id(OpId::k_neg));
  CHECK(refused(both));
  {
    v1::WorkerBatch b = r.batch();
    v1::HotPath ok = with_comm(CommId::k_all_reduce, make_all_reduce(7, ReduceKind::kSum, pair), 1);
    ok.set_id(6);
    *b.add_hot_define() = std::move(ok);
    const size_t errors = r.out.errors().size();
    r.run(std::move(b));
    CHECK(r.out.errors().size() == errors);
    CHECK(r.load().hot_paths() == 1);
    v1::WorkerBatch f = r.batch();
    f.add_hot_forget(6);
    r.run(std::move(f));
    REQUIRE(r.load().hot_paths() == 0);
  }

  // Runs that do not match their path: reported, nothing made, the worker goes on.
  const size_t before = r.out.errors().size();
  v1::WorkerBatch b = r.batch();
  *b.add_instrs() = random(1, Shape{4}, 1);
  *b.add_hot_define() = base();
  *b.add_instrs() = hot_run(99, {1}, 10);     // unknown path
  *b.add_instrs() = hot_run(3, {1, 1}, 20);   // two bindings for one
  *b.add_instrs() = hot_run(3, {1}, 0);       // no result handles
  *b.add_instrs() = hot_run(3, {1}, 30);      // fine
  r.run(std::move(b));
  CHECK(r.out.errors().size() == before + 3);
  CHECK(r.ex.tensor_count() == 3);  // 1, and the path's results 30 and 31
  CHECK(r.fetch(31).second.empty());
}

TEST_CASE("hot paths are forgotten on request and die with their session", "[worker][hot]") {
  Rig r;
  v1::HotPath p;
  p.set_id(1);
  *p.add_instrs() = op(OpId::k_zeros, 1, {}, make_shape_dtype(Shape{2}, DType::kFloat32));
  v1::WorkerBatch b = r.batch();
  *b.add_hot_define() = p;
  p.set_id(2);
  *b.add_hot_define() = p;
  *b.add_instrs() = hot_run(1, {}, 10);
  r.run(std::move(b));
  CHECK(r.load().hot_paths() == 2);
  v1::WorkerBatch forget = r.batch();
  forget.add_hot_forget(1);
  r.run(std::move(forget));
  CHECK(r.load().hot_paths() == 1);
  v1::WorkerBatch again = r.batch();
  *again.add_instrs() = hot_run(1, {}, 20);  // forgotten: reported
  r.run(std::move(again));
  CHECK(r.out.errors().size() == 1);
  // Another session cannot run this session's path.
  v1::WorkerBatch other;
  other.set_session(kSession + 1);
  *other.add_instrs() = hot_run(2, {}, 30);
  r.ex.execute(other);
  CHECK(r.out.errors().size() == 2);
  v1::WorkerBatch end = r.batch();
  end.set_end_session(true);
  r.run(std::move(end));
  CHECK(r.load().hot_paths() == 0);
  CHECK(r.ex.tensor_count() == 0);
}

namespace {
// sum or mean(relu(x * 1.5 - 0.25) * bias) over x [n] (handle 1) and bias [n] (handle 2): two
// fusable ops, one with a tensor operand, and the reduction as the chain's tail. Eagerly into
// 300..303 (303 the reduction), then as a HotRun into 400..403.
void reduce_eager_then_hot(Rig& r, int64_t n, OpId reduction, uint64_t path) {
  v1::WorkerBatch in = r.batch();
  *in.add_instrs() = random(1, Shape{n}, 21);
  *in.add_instrs() = random(2, Shape{n}, 22);
  r.run(std::move(in));
  auto steps = [&](v1::WorkerBatch& b, auto ref, uint64_t x, uint64_t bias,
                   const std::vector<uint64_t>& outs) {
    *b.add_instrs() = op(OpId::k_mul, outs[0], {x}, scalar(ScalarSide::kRight, 1.5));
    *b.add_instrs() = op(OpId::k_sub, outs[1], {ref(0)}, scalar(ScalarSide::kRight, 0.25));
    free_here(b, {ref(0)});
    *b.add_instrs() = op(OpId::k_relu, outs[2], {ref(1)});
    free_here(b, {ref(1)});
    *b.add_instrs() = op(OpId::k_mul, outs[3], {ref(2), bias});
    free_here(b, {ref(2)});
    *b.add_instrs() = op(reduction, outs[4], {ref(3)}, make_reduce(kAllDims, false));
    free_here(b, {ref(3)});
  };
  v1::WorkerBatch eager = r.batch();
  steps(eager, [](uint64_t k) { return 300 + k; }, 1, 2, {300, 301, 302, 303, 304});
  r.run(std::move(eager));
  v1::WorkerBatch tmp;
  steps(tmp, [](uint64_t k) { return local(k); }, bound(0), bound(1), {1, 1, 1, 1, 1});
  v1::WorkerBatch hot = r.batch();
  *hot.add_hot_define() = path_of(tmp, path, 2);
  *hot.add_instrs() = hot_run(path, {1, 2}, 400);
  r.run(std::move(hot));
}
}  // namespace

TEST_CASE("a chain ending in a sum or mean fuses the reduction, bitwise eager's",
          "[worker][hot]") {
  // Below one vector, one block and a tail of leftovers, several blocks, at the limit.
  for (int64_t n : {int64_t{5}, int64_t{2048 + 8 + 3}, int64_t{19200}, int64_t{1} << 17}) {
    for (OpId reduction : {OpId::k_sum, OpId::k_mean}) {
      INFO("n " << n << ", " << op_name(reduction));
      Rig r;
      reduce_eager_then_hot(r, n, reduction, 8);
      CHECK(r.out.errors().empty());
      const auto [eager, pe] = r.fetch(304);
      const auto [hot, ph] = r.fetch(404);
      REQUIRE(eager.size() == sizeof(float));
      CHECK(hot == eager);  // bitwise
      CHECK(r.load().fused_ops() == 5);  // four steps and the reduction
      CHECK(r.ex.tensor_count() == 2 + 1 + 1);  // x, bias, the eager sum, the fused one
      // Against the host, in double.
      const std::string xs = r.fetch(1).first, bs = r.fetch(2).first;
      std::vector<float> x(static_cast<size_t>(n)), b(static_cast<size_t>(n));
      std::memcpy(x.data(), xs.data(), xs.size());
      std::memcpy(b.data(), bs.data(), bs.size());
      double want = 0, scale = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        const double t = std::max(0.0f, x[i] * 1.5f - 0.25f) * b[i];
        want += t;
        scale += std::abs(t);
      }
      if (reduction == OpId::k_mean) {
        want /= static_cast<double>(n);
        scale /= static_cast<double>(n);
      }
      float got = 0;
      std::memcpy(&got, hot.data(), sizeof got);
      CHECK(std::abs(got - want) <= 1e-5 * scale + 1e-6);
    }
  }
}

TEST_CASE("a chain over more elements than one thread should sum keeps its threads, the "
          "reduction runs after it", "[worker][hot]") {
  Rig r;
  reduce_eager_then_hot(r, (int64_t{1} << 17) + 1, OpId::k_sum, 8);
  CHECK(r.out.errors().empty());
  CHECK(r.fetch(404).first == r.fetch(304).first);
  CHECK(r.load().fused_ops() == 4);  // the steps only
  CHECK(r.ex.tensor_count() == 2 + 1 + 1);
}

namespace {

OpAttrs transpose2() {
  const int64_t p[2] = {1, 0};
  return make_permute(p);
}

// A Linear layer's forward and weight gradient as autograd writes them for `x @ w.t()` (what
// F.linear's own gradient no longer emits: it computes g^T x, with no transposed result), over
// bindings x [64, 48], w [40, 48], g [64, 40] (`in(k)` names instruction k's result):
//   0 wt = w^T; 1 h = x @ wt; 2 xt = x^T; 3 gwt = xt @ g; 4 gw = gwt^T; 5 y = h + g
// wt, xt and gwt freed after their one reader, h after y: gw and y are left.
template <class In>
void linear(v1::WorkerBatch& b, const In& in, uint64_t x, uint64_t w, uint64_t g,
            const std::vector<uint64_t>& outs) {
  *b.add_instrs() = op(OpId::k_permute, outs[0], {w}, transpose2());
  *b.add_instrs() = op(OpId::k_matmul, outs[1], {x, in(0)});
  free_here(b, {in(0)});
  *b.add_instrs() = op(OpId::k_permute, outs[2], {x}, transpose2());
  *b.add_instrs() = op(OpId::k_matmul, outs[3], {in(2), g});
  free_here(b, {in(2)});
  *b.add_instrs() = op(OpId::k_permute, outs[4], {in(3)}, transpose2());
  free_here(b, {in(3)});
  *b.add_instrs() = op(OpId::k_add, outs[5], {in(1), g});
  free_here(b, {in(1)});
}

void linear_inputs(Rig& r, DType w_dtype = DType::kFloat32) {
  v1::WorkerBatch b = r.batch();
  *b.add_instrs() = random(1, Shape{64, 48}, 21);
  *b.add_instrs() = op(OpId::k_randn, 2, {}, make_random(Shape{40, 48}, w_dtype, 22, 0));
  *b.add_instrs() = random(3, Shape{64, 40}, 23);
  r.run(std::move(b));
}

// The layer eagerly (results 200..205), then as a HotRun (100..105).
void linear_eager_then_hot(Rig& r) {
  v1::WorkerBatch eager = r.batch();
  linear(eager, [](uint64_t k) { return 200 + k; }, 1, 2, 3, {200, 201, 202, 203, 204, 205});
  r.run(std::move(eager));
  v1::WorkerBatch tmp;
  linear(tmp, [](uint64_t k) { return local(k); }, bound(0), bound(1), bound(2), {1, 1, 1, 1, 1, 1});
  v1::WorkerBatch hot = r.batch();
  *hot.add_hot_define() = path_of(tmp, 6, 3);
  *hot.add_instrs() = hot_run(6, {1, 2, 3}, 100);
  r.run(std::move(hot));
}

}  // namespace

TEST_CASE("a matmul's transposed operands and result are folded into its GEMM, bitwise eager's",
          "[worker][hot][fold]") {
  Rig r;
  linear_inputs(r);
  const uint64_t ops_before = r.load().ops_executed();
  v1::WorkerBatch eager = r.batch();
  linear(eager, [](uint64_t k) { return 200 + k; }, 1, 2, 3, {200, 201, 202, 203, 204, 205});
  r.run(std::move(eager));
  const uint64_t ops_eager = r.load().ops_executed() - ops_before;
  const size_t tensors_eager = r.ex.tensor_count();
  v1::WorkerBatch tmp;
  linear(tmp, [](uint64_t k) { return local(k); }, bound(0), bound(1), bound(2), {1, 1, 1, 1, 1, 1});
  v1::WorkerBatch hot = r.batch();
  *hot.add_hot_define() = path_of(tmp, 6, 3);
  *hot.add_instrs() = hot_run(6, {1, 2, 3}, 100);
  r.run(std::move(hot));
  CHECK(r.out.errors().empty());
  const v1::WorkerLoad l = r.load();
  // wt folded into h's GEMM (b transposed), xt into gwt's (a transposed): four of the six ops
  // in two GEMMs, no copy (gw = gwt^T stays a permute: see fusion.h).
  CHECK(l.fused_ops() == 4);
  CHECK(l.ops_executed() - ops_before - ops_eager == ops_eager);  // eager's op count
  CHECK(r.ex.tensor_count() == tensors_eager + 2);  // gw and y: nothing else made or left
  CHECK(r.load().hot_path_hits() == 1);
  for (uint64_t k : {4, 5}) {
    INFO("result " << k);
    const auto [want, pw] = r.fetch(200 + k);
    const auto [got, pg] = r.fetch(100 + k);
    REQUIRE(want.size() > 0);
    CHECK(pw.empty());
    CHECK(pg.empty());
    CHECK(got == want);  // bitwise
  }
  // Against the definition at a few elements: gw[i][j] = sum_r g[r][i] x[r][j].
  auto floats = [](const std::string& s) {
    std::vector<float> v(s.size() / 4);
    std::memcpy(v.data(), s.data(), s.size());
    return v;
  };
  const auto x = floats(r.fetch(1).first), g = floats(r.fetch(3).first),
             gw = floats(r.fetch(104).first);
  REQUIRE(gw.size() == 40 * 48);
  for (auto [i, j] : {std::pair{0, 0}, {39, 47}, {17, 5}}) {
    double want = 0;
    for (int row = 0; row < 64; ++row) want += double(g[row * 40 + i]) * x[row * 48 + j];
    CHECK(gw[i * 48 + j] == Approx(want).epsilon(1e-4).margin(1e-4));
  }
}

TEST_CASE("a transpose that cannot be folded runs as written, at its matmul at the latest",
          "[worker][hot][fold]") {
  Rig r;
  // x float64 (w, g float32): wt is put off (w can be read transposed), but h = x @ wt cannot
  // be a float32 GEMM, so wt runs at h, and h fails as eagerly (mixed dtypes); xt = x^T is not
  // float32 and runs as written.
  {
    v1::WorkerBatch b = r.batch();
    *b.add_instrs() = op(OpId::k_randn, 1, {}, make_random(Shape{64, 48}, DType::kFloat64, 21, 0));
    *b.add_instrs() = random(2, Shape{40, 48}, 22);
    *b.add_instrs() = random(3, Shape{64, 40}, 23);
    r.run(std::move(b));
  }
  const uint64_t before = r.load().ops_executed();
  linear_eager_then_hot(r);
  const auto errors = r.out.errors();
  REQUIRE(errors.size() == 4);  // each run: h's matmul and gwt's (float64 @ float32)
  CHECK(errors[0].error().op() == errors[2].error().op());
  CHECK(errors[0].error().message() == errors[2].error().message());
  CHECK(r.load().fused_ops() == 0);
  // The same ops ran (wt too, late), and y names the op that failed as eagerly.
  CHECK((r.load().ops_executed() - before) % 2 == 0);
  const auto [eager_y, eager_poison] = r.fetch(205);
  const auto [hot_y, hot_poison] = r.fetch(105);
  CHECK(eager_poison == "matmul");
  CHECK(hot_poison == eager_poison);
}

TEST_CASE("a transpose whose input is written in place before its matmul is not folded",
          "[worker][hot][fold]") {
  Rig r;
  linear_inputs(r);
  // wt = w^T; w.copy_(z) in place; h = x @ wt: h must use w's old values.
  auto body = [](v1::WorkerBatch& b, auto in, uint64_t x, uint64_t w, uint64_t z, uint64_t o0,
                 uint64_t o2) {
    *b.add_instrs() = op(OpId::k_permute, o0, {w}, transpose2());
    *b.add_instrs() = op(OpId::k_copy_, 0, {w, z});
    *b.add_instrs() = op(OpId::k_matmul, o2, {x, in(0)});
    free_here(b, {in(0)});
  };
  {
    v1::WorkerBatch b = r.batch();
    *b.add_instrs() = random(4, Shape{40, 48}, 31);  // z
    *b.add_instrs() = random(5, Shape{40, 48}, 22);  // a second w, as w was made
    r.run(std::move(b));
  }
  v1::WorkerBatch eager = r.batch();
  body(eager, [](uint64_t k) { return 200 + k; }, 1, 2, 4, 200, 202);
  r.run(std::move(eager));
  v1::WorkerBatch tmp;
  body(tmp, [](uint64_t k) { return local(k); }, bound(0), bound(1), bound(2), 1, 1);
  v1::WorkerBatch hot = r.batch();
  *hot.add_hot_define() = path_of(tmp, 7, 3);
  *hot.add_instrs() = hot_run(7, {1, 5, 4}, 100);  // on the second w, equal to the first
  r.run(std::move(hot));
  CHECK(r.out.errors().empty());
  CHECK(r.load().fused_ops() == 0);
  const auto [got, poison] = r.fetch(101);  // (the path's second result)
  CHECK(poison.empty());
  CHECK(got == r.fetch(202).first);
}
