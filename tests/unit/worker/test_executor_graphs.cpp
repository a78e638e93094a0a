// Hot paths as device graphs on the sim device (workerd/executor_hot.cpp, Backend::begin_graph;
// ARCHITECTURE §7): each run of a path records its graph segments on the session's stream and
// launches each as one graph, the first run instantiating it and the later ones updating it in
// place. Results are bitwise the eager results of the same instructions; errors found while
// recording are reported once, as eagerly; a capture the device invalidates runs again eagerly
// with nothing visible but the fallback count (including a copy-on-write it had recorded); the
// graphs go with their path and with the session.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "executor_test_util.h"
#include "require_ok.h"
#include "workerd/executor.h"
#include "workerd/sim/sim_backend.h"

using namespace gt;
using gt::test::add_request;
using gt::test::bound;
using gt::test::hot_run;
using gt::test::local;
using gt::test::op;
using gt::test::Outbox;
using worker::Executor;
using worker::SimBackend;
using worker::SimBackendOptions;

namespace {

constexpr uint64_t kSession = 3;

SimBackendOptions sim_options(uint64_t fail_capture_every = 0) {
  SimBackendOptions o;
  o.device.launch_us = 20;
  o.device.memory_bytes = uint64_t{256} << 20;
  o.device.fail_capture_every = fail_capture_every;
  // Graph counts here do not wait on a compile: a chain's kernel becoming ready changes the
  // graph's topology (fused_options() turns it on).
  o.fused_kernels = false;
  return o;
}

struct Rig {
  explicit Rig(uint64_t fail_capture_every = 0, bool graphs = true)
      : Rig(sim_options(fail_capture_every), graphs) {}
  Rig(SimBackendOptions o, bool graphs) : backend(std::move(o)) { ex.set_device_graphs(graphs); }
  SimBackend backend;
  Outbox out;
  Executor ex{backend, [this](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 64 << 20};
  uint64_t next_request = 1;

  v1::WorkerBatch batch() {
    v1::WorkerBatch b;
    b.set_session(kSession);
    return b;
  }
  void run(v1::WorkerBatch b) { ex.execute(b); }
  // The bytes of `handle` once the device has computed them, or the op its poison names.
  std::pair<std::string, std::string> fetch(uint64_t handle) {
    v1::WorkerBatch b = batch();
    const uint64_t id = next_request++;
    add_request(b, id, v1::Request::FETCH, handle);
    run(std::move(b));
    REQUIRE(out.wait_reply(id) != gt::test::Clock::time_point{});
    return out.fetched(id);
  }
  v1::WorkerLoad load() {
    v1::WorkerLoad l;
    ex.fill_load(&l);
    return l;
  }
};

// y = relu(x @ w + b) * 0.5 over bindings x, w, b; the intermediates freed inside the path.
// `in(k)` names instruction k's result (a local reference in a path, a handle eagerly).
template <class In>
void layer(v1::WorkerBatch* eager, v1::HotPath* path, const In& in, uint64_t x, uint64_t w,
           uint64_t b, const std::vector<uint64_t>& outs) {
  std::vector<v1::Instr> instrs = {
      op(OpId::k_matmul, outs[0], {x, w}),
      op(OpId::k_add, outs[1], {in(0), b}),
      op(OpId::k_relu, outs[2], {in(1)}),
      op(OpId::k_mul, outs[3], {in(2)}, make_binary_scalar(ScalarSide::kRight, 0.5, false)),
  };
  for (auto& i : instrs) *(eager ? eager->add_instrs() : path->add_instrs()) = i;
  if (path)
    for (uint32_t k : {0u, 1u, 2u}) {
      path->add_frees(k);
      path->add_free_at(k + 2);
    }
}

v1::HotPath layer_path(uint64_t id) {
  v1::HotPath p;
  p.set_id(id);
  p.set_bindings(3);
  layer(nullptr, &p, [](uint64_t k) { return local(k); }, bound(0), bound(1), bound(2),
        {1, 1, 1, 1});
  return p;
}

// x [16, 32], w [32, 8], b [8] at handles 1, 2, 3; w2 [5, 8] (a misfit) at 4.
void make_inputs(Rig& r) {
  v1::WorkerBatch in = r.batch();
  *in.add_instrs() = op(OpId::k_randn, 1, {}, make_random(Shape{16, 32}, DType::kFloat32, 1, 0));
  *in.add_instrs() = op(OpId::k_randn, 2, {}, make_random(Shape{32, 8}, DType::kFloat32, 2, 0));
  *in.add_instrs() = op(OpId::k_randn, 3, {}, make_random(Shape{8}, DType::kFloat32, 3, 0));
  *in.add_instrs() = op(OpId::k_randn, 4, {}, make_random(Shape{5, 8}, DType::kFloat32, 4, 0));
  r.run(std::move(in));
}

// The layer eagerly into 200..203, then three runs of the path into 100.., 110.., 120...
void eager_then_hot(Rig& r, uint64_t w = 2) {
  v1::WorkerBatch eager = r.batch();
  layer(&eager, nullptr, [](uint64_t k) { return 200 + k; }, 1, w, 3, {200, 201, 202, 203});
  r.run(std::move(eager));
  v1::WorkerBatch hot = r.batch();
  *hot.add_hot_define() = layer_path(9);
  for (uint64_t first : {100, 110, 120}) *hot.add_instrs() = hot_run(9, {1, w, 3}, first);
  r.run(std::move(hot));
}

}  // namespace

TEST_CASE("sim device: a hot path runs as one device graph, updated at each run, with the "
          "eager results", "[worker][sim][hot][graph]") {
  Rig r;
  make_inputs(r);
  eager_then_hot(r);
  const auto [eager, pe] = r.fetch(203);
  REQUIRE(eager.size() == 16 * 8 * sizeof(float));
  CHECK(pe.empty());
  for (uint64_t y : {103, 113, 123}) CHECK(r.fetch(y).first == eager);  // bitwise
  CHECK(r.out.errors().empty());
  const v1::WorkerLoad l = r.load();
  CHECK(l.hot_path_hits() == 3);
  CHECK(l.graph_launches() == 3);        // one segment: all four ops
  CHECK(l.graph_instantiations() == 1);  // then updated in place
  CHECK(l.graph_fallbacks() == 0);
  CHECK(r.backend.sim().graphs() == 1);
  // 4 inputs, the eager layer's 4 results, one result per run: the intermediates were freed.
  CHECK(r.ex.tensor_count() == 4 + 4 + 3);
  // The relu really ran (some zeros, some positives, each half of x @ w + b).
  std::vector<float> v(16 * 8);
  std::memcpy(v.data(), eager.data(), eager.size());
  int zeros = 0;
  for (float f : v) zeros += f == 0.0f;
  CHECK(zeros > 0);
  CHECK(zeros < 16 * 8);

  // The path's graph goes with the session.
  v1::WorkerBatch end = r.batch();
  end.set_end_session(true);
  r.run(std::move(end));
  CHECK(r.backend.sim().graphs() == 0);
  CHECK(r.ex.tensor_count() == 0);
}

TEST_CASE("sim device: with device graphs off, a hot path runs op by op, with the same results",
          "[worker][sim][hot][graph]") {
  Rig r(0, /*graphs=*/false);
  make_inputs(r);
  eager_then_hot(r);
  const std::string eager = r.fetch(203).first;
  for (uint64_t y : {103, 113, 123}) CHECK(r.fetch(y).first == eager);
  CHECK(r.load().graph_launches() == 0);
  CHECK(r.backend.sim().graphs() == 0);
}

TEST_CASE("sim device: a failed capture runs its segment eagerly, with nothing else visible",
          "[worker][sim][hot][graph]") {
  Rig r(/*fail_capture_every=*/2);  // the second run's capture fails
  make_inputs(r);
  eager_then_hot(r);
  const std::string eager = r.fetch(203).first;
  for (uint64_t y : {103, 113, 123}) CHECK(r.fetch(y).first == eager);
  CHECK(r.out.errors().empty());
  const v1::WorkerLoad l = r.load();
  CHECK(l.graph_launches() == 2);
  CHECK(l.graph_fallbacks() == 1);
  CHECK(l.ops_executed() == 4 + 4 + 3 * 4);  // the failed capture's ops are not counted twice
  CHECK(r.ex.tensor_count() == 4 + 4 + 3);
}

TEST_CASE("sim device: an error found while recording is reported once, naming its op, and "
          "dependents inherit it", "[worker][sim][hot][graph]") {
  Rig r;
  make_inputs(r);
  eager_then_hot(r, /*w=*/4);  // x [16, 32] @ w2 [5, 8]: matmul refuses the shapes
  // Eagerly one error (matmul), and one per run: dependents inherit the poison silently.
  const auto errors = r.out.errors();
  REQUIRE(errors.size() == 4);
  for (const auto& e : errors) CHECK(e.error().op() == "matmul");
  CHECK(r.fetch(123).second == "matmul");
  CHECK(r.fetch(203).second == "matmul");
  CHECK(r.load().graph_launches() == 3);
}

TEST_CASE("sim device: a copy-on-write recorded by a failed capture is undone before the eager "
          "rerun", "[worker][sim][hot][graph]") {
  Rig r(/*fail_capture_every=*/1);  // every capture fails
  // x [8] = 0..7 and a view v of it (shared bytes); y [4].
  v1::WorkerBatch in = r.batch();
  *in.add_instrs() = op(OpId::k_arange, 1, {}, make_arange(0, 8, 1, DType::kFloat32));
  *in.add_instrs() = op(OpId::k_reshape, 2, {1}, make_reshape(Shape{8}));
  *in.add_instrs() = op(OpId::k_arange, 3, {}, make_arange(10, 14, 1, DType::kFloat32));
  r.run(std::move(in));
  // The path: z = exp(y) - exp(y) (zeros); v[2:6] = z (strided_copy_ into the shared view: the
  // view gets its own copy of x first, then z over four of its elements).
  v1::HotPath p;
  p.set_id(4);
  p.set_bindings(2);
  *p.add_instrs() = op(OpId::k_exp, 1, {bound(1)});
  *p.add_instrs() = op(OpId::k_sub, 1, {local(0), local(0)});
  const int64_t stride[] = {1};
  *p.add_instrs() = op(OpId::k_strided_copy_, 0, {bound(0), local(1)},
                       make_strided(Shape{4}, stride, 2));
  p.add_frees(0);
  p.add_free_at(2);
  v1::WorkerBatch hot = r.batch();
  *hot.add_hot_define() = p;
  *hot.add_instrs() = hot_run(4, {2, 3}, 50);
  r.run(std::move(hot));
  CHECK(r.out.errors().empty());
  CHECK(r.load().graph_fallbacks() == 1);
  auto floats = [](const std::string& s) {
    std::vector<float> v(s.size() / 4);
    std::memcpy(v.data(), s.data(), s.size());
    return v;
  };
  CHECK(floats(r.fetch(2).first) == std::vector<float>{0, 1, 0, 0, 0, 0, 6, 7});
  CHECK(floats(r.fetch(1).first) == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});  // untouched
}

// Session 4 frees a 12 MiB block whose kernel is still 120 ms away on its stream, then session
// 3 replays y = x * 2, w = y + 1 as a graph (x 12 MiB too, y and w the same size): what the
// capture allocates, and what x, y and the worker's figures are afterwards.
struct CrossSessionCapture {
  std::vector<float> x, y;
  v1::WorkerLoad load;
  worker::device::AllocatorStats allocator;
  size_t errors = 0;
};
CrossSessionCapture capture_beside_a_freed_block(uint64_t max_memory_bytes) {
  SimBackendOptions o = sim_options();
  o.device.kernel_us = 40000;  // every kernel holds its stream 40 ms
  o.max_memory_bytes = max_memory_bytes;
  SimBackend backend(o);
  Outbox out;
  Executor ex(backend, [&](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 64 << 20);
  ex.set_device_graphs(true);
  const Shape big{3 << 20};  // 12 MiB: a large-pool segment of its own
  auto batch = [](uint64_t session) {
    v1::WorkerBatch b;
    b.set_session(session);
    return b;
  };
  v1::WorkerBatch in = batch(3);
  *in.add_instrs() = op(OpId::k_randn, 1, {}, make_random(big, DType::kFloat32, 5, 0));
  ex.execute(in);
  v1::WorkerBatch other = batch(4);
  *other.add_instrs() = op(OpId::k_randn, 41, {}, make_random(Shape{16}, DType::kFloat32, 6, 0));
  *other.add_instrs() = op(OpId::k_neg, 42, {41});
  *other.add_instrs() = op(OpId::k_neg, 43, {42});
  *other.add_instrs() = op(OpId::k_randn, 44, {}, make_random(big, DType::kFloat32, 7, 0));
  other.add_frees(44);
  other.add_free_at(4);
  ex.execute(other);
  v1::HotPath p;
  p.set_id(2);
  p.set_bindings(1);
  *p.add_instrs() = op(OpId::k_mul, 1, {bound(0)}, make_binary_scalar(ScalarSide::kRight, 2, false));
  *p.add_instrs() = op(OpId::k_add, 1, {local(0)}, make_binary_scalar(ScalarSide::kRight, 1, false));
  v1::WorkerBatch hot = batch(3);
  *hot.add_hot_define() = p;
  *hot.add_instrs() = hot_run(2, {1}, 10);
  ex.execute(hot);
  // (In a batch of their own: y's fetch in the run's batch would cut the path's one segment.)
  v1::WorkerBatch fetches = batch(3);
  add_request(fetches, 1, v1::Request::FETCH, 1);
  add_request(fetches, 2, v1::Request::FETCH, 10);
  ex.execute(fetches);
  CrossSessionCapture c;
  for (uint64_t r : {1, 2}) REQUIRE(out.wait_reply(r) != gt::test::Clock::time_point{});
  ex.fill_load(&c.load);
  auto floats = [](const std::vector<v1::Reply>& chunks) {
    std::string bytes;
    for (const auto& r : chunks) bytes += r.tensor().data();
    std::vector<float> v(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  };
  c.x = floats(out.replies(1));
  c.y = floats(out.replies(2));
  c.allocator = backend.allocator_stats();
  c.errors = out.errors().size();
  return c;
}

size_t wrong_doubles(const CrossSessionCapture& c) {
  REQUIRE(c.x.size() == c.y.size());
  REQUIRE(c.x.size() == static_cast<size_t>(3 << 20));
  size_t wrong = 0;
  for (size_t i = 0; i < c.x.size(); ++i) wrong += c.y[i] != c.x[i] * 2;
  return wrong;
}

TEST_CASE("sim device: a capture never takes a block another session freed (a wait recorded in "
          "a graph waits for whatever its event stands for when the graph runs)",
          "[worker][sim][hot][graph]") {
  // The freed block is the best fit, but pending on session 4's stream: the capture grows a
  // segment instead, and no cross-stream wait is recorded.
  const CrossSessionCapture c = capture_beside_a_freed_block(0);
  CHECK(c.load.graph_launches() == 1);
  CHECK(c.load.graph_fallbacks() == 0);
  CHECK(c.errors == 0);
  CHECK(wrong_doubles(c) == 0);  // session 4's late write did not land on y
  CHECK(c.allocator.cross_stream_waits == 0);
  CHECK(c.allocator.segments >= 4);  // x, session 4's, y, w (and the small pool's)
}

TEST_CASE("sim device: a capture that runs out of memory runs again eagerly, which may trim and "
          "take the other session's block (after its work)",
          "[worker][sim][hot][graph]") {
  // 40 MiB: x, session 4's freed block and y fit, w does not; the capture is spoiled (no trim
  // inside it: that would wait on the capturing stream), the segment runs eagerly, whose
  // allocations take the freed block with a wait for session 4's stream.
  const CrossSessionCapture c = capture_beside_a_freed_block(uint64_t{40} << 20);
  CHECK(c.load.graph_launches() == 0);
  CHECK(c.load.graph_fallbacks() == 1);
  CHECK(c.errors == 0);
  CHECK(wrong_doubles(c) == 0);
  CHECK(c.allocator.cross_stream_waits >= 1);
}

TEST_CASE("sim device: a long segment of temporaries frees them in stream order while it records "
          "(memory as eager)", "[worker][sim][hot][graph]") {
  SimBackendOptions o = sim_options();
  o.max_memory_bytes = uint64_t{64} << 20;
  SimBackend backend(o);
  Outbox out;
  Executor ex(backend, [&](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 64 << 20);
  // 40 x (t = zeros [1 M] + 1; s = t.sum()): 320 MiB of 4 MiB temporaries, each freed after its
  // use; the sums survive. Held to the segment's end they could not fit in 64 MiB.
  v1::HotPath p;
  p.set_id(1);
  const Shape big{1 << 20};
  for (uint32_t i = 0; i < 40; ++i) {
    const uint32_t z = 3 * i;
    *p.add_instrs() = op(OpId::k_zeros, 1, {}, make_shape_dtype(big, DType::kFloat32));
    *p.add_instrs() = op(OpId::k_add, 1, {local(z)}, make_binary_scalar(ScalarSide::kRight, 1, false));
    *p.add_instrs() = op(OpId::k_sum, 1, {local(z + 1)}, make_reduce(kAllDims, false));
    p.add_frees(z);
    p.add_free_at(z + 2);
    p.add_frees(z + 1);
    p.add_free_at(z + 3);
  }
  v1::WorkerBatch b;
  b.set_session(kSession);
  *b.add_hot_define() = p;
  for (uint64_t first : {1000, 2000}) *b.add_instrs() = hot_run(1, {}, first);
  add_request(b, 1, v1::Request::FETCH, 2000 + 3 * 39 + 2);  // the last run's last sum
  ex.execute(b);
  REQUIRE(out.wait_reply(1) != gt::test::Clock::time_point{});
  CHECK(out.errors().empty());
  std::string bytes;
  for (const auto& r : out.replies(1)) bytes += r.tensor().data();
  float s = 0;
  REQUIRE(bytes.size() == sizeof s);
  std::memcpy(&s, bytes.data(), sizeof s);
  CHECK(s == static_cast<float>(1 << 20));
  v1::WorkerLoad l;
  ex.fill_load(&l);
  CHECK(l.graph_launches() == 2);
  CHECK(ex.tensor_count() == 2 * 40);  // the sums
  CHECK(backend.allocator_stats().peak_bytes <= uint64_t{24} << 20);
}

// Fused chains on the sim device (StreamBackend's fused kernels): the layer's add, relu and mul
// are one generated kernel, compiled (here: synchronously, so the first run has it) and cached.
SimBackendOptions fused_options(bool synchronous, bool fused = true) {
  SimBackendOptions o = sim_options();
  o.fused_kernels = fused;
  o.kernel_cache.synchronous = synchronous;
  return o;
}

TEST_CASE("sim device: a hot path's elementwise chain is one generated kernel in its graph, with "
          "the eager results", "[worker][sim][hot][graph][fused]") {
  Rig r(fused_options(true), /*graphs=*/true);
  REQUIRE(r.backend.fuses_chains());
  CHECK_FALSE(r.backend.fuses_chain_tails());  // generated kernels have no reduction tails
  make_inputs(r);
  eager_then_hot(r);
  const std::string eager = r.fetch(203).first;
  REQUIRE(eager.size() == 16 * 8 * sizeof(float));
  for (uint64_t y : {103, 113, 123}) CHECK(r.fetch(y).first == eager);  // bitwise
  CHECK(r.out.errors().empty());
  const v1::WorkerLoad l = r.load();
  CHECK(l.fused_ops() == 3 * 3);           // add, relu, mul in each of three runs
  CHECK(l.graph_launches() == 3);          // the matmul and the fused kernel: one graph
  CHECK(l.graph_instantiations() == 1);    // the same topology at every run
  REQUIRE(r.backend.fused_kernels() != nullptr);
  const auto st = r.backend.fused_kernels()->stats();
  CHECK(st.compiled == 1);  // one chain, compiled once
  CHECK(st.ready == 1);
  CHECK(r.ex.tensor_count() == 4 + 4 + 3);  // no intermediate of the chain was ever made
}

TEST_CASE("sim device: a failed capture with a fused kernel in it counts its fused ops once",
          "[worker][sim][hot][graph][fused]") {
  SimBackendOptions o = fused_options(true);
  o.device.fail_capture_every = 2;  // the second run's capture fails: it runs again eagerly
  Rig r(std::move(o), /*graphs=*/true);
  make_inputs(r);
  eager_then_hot(r);
  const std::string eager = r.fetch(203).first;
  for (uint64_t y : {103, 113, 123}) CHECK(r.fetch(y).first == eager);
  const v1::WorkerLoad l = r.load();
  CHECK(l.graph_fallbacks() == 1);
  CHECK(l.fused_ops() == 3 * 3);  // the undone recording's chain is not counted
}

TEST_CASE("sim device: a chain runs op by op until its kernel is compiled, then fused",
          "[worker][sim][hot][fused]") {
  Rig r(fused_options(false), /*graphs=*/false);
  make_inputs(r);
  v1::WorkerBatch hot = r.batch();
  *hot.add_hot_define() = layer_path(9);
  *hot.add_instrs() = hot_run(9, {1, 2, 3}, 100);
  r.run(std::move(hot));
  // The first sight queued the compile and ran the chain op by op.
  CHECK(r.load().fused_ops() == 0);
  REQUIRE(r.backend.fused_kernels() != nullptr);
  r.backend.fused_kernels()->wait_idle();
  v1::WorkerBatch again = r.batch();
  for (uint64_t first : {110, 120}) *again.add_instrs() = hot_run(9, {1, 2, 3}, first);
  r.run(std::move(again));
  CHECK(r.load().fused_ops() == 2 * 3);
  const std::string unfused = r.fetch(103).first;
  REQUIRE(unfused.size() == 16 * 8 * sizeof(float));
  CHECK(r.fetch(113).first == unfused);
  CHECK(r.fetch(123).first == unfused);
  CHECK(r.backend.fused_kernels()->stats().compiled == 1);
}

TEST_CASE("sim device: with fused kernels off, chains run op by op", "[worker][sim][hot][fused]") {
  Rig r(fused_options(true, /*fused=*/false), /*graphs=*/true);
  CHECK_FALSE(r.backend.fuses_chains());
  make_inputs(r);
  eager_then_hot(r);
  const std::string eager = r.fetch(203).first;
  for (uint64_t y : {103, 113, 123}) CHECK(r.fetch(y).first == eager);
  CHECK(r.load().fused_ops() == 0);
  CHECK(r.backend.fused_kernels() == nullptr);
}

TEST_CASE("sim device: a fetch due inside a graph segment cuts the segment there, and is answered "
          "before the rest of the path is launched", "[worker][sim][hot][graph][early]") {
  Rig r;
  make_inputs(r);
  // The layer, then s = y.sum() and t = y * 2: one segment of six, y (instruction 3) fetched.
  auto tail = [](auto add, uint64_t y, uint64_t s, uint64_t t) {
    add(op(OpId::k_sum, s, {y}, make_reduce(kAllDims, false)));
    add(op(OpId::k_mul, t, {y}, make_binary_scalar(ScalarSide::kRight, 2.0, false)));
  };
  v1::WorkerBatch eager = r.batch();
  layer(&eager, nullptr, [](uint64_t k) { return 200 + k; }, 1, 2, 3, {200, 201, 202, 203});
  tail([&](v1::Instr i) { *eager.add_instrs() = i; }, 203, 204, 205);
  r.run(std::move(eager));
  v1::HotPath path = layer_path(9);
  tail([&](v1::Instr i) { *path.add_instrs() = i; }, local(3), 1, 1);

  std::vector<uint64_t> ids;
  for (uint64_t first : {100, 110, 120}) {
    v1::WorkerBatch hot = r.batch();
    if (first == 100) *hot.add_hot_define() = path;
    *hot.add_instrs() = hot_run(9, {1, 2, 3}, first);
    ids.push_back(r.next_request++);
    add_request(hot, ids.back(), v1::Request::FETCH, first + 3);  // y: final after 4 of 6
    r.run(std::move(hot));
  }
  const auto [y, py] = r.fetch(203);
  REQUIRE(y.size() == 16 * 8 * sizeof(float));
  for (uint64_t id : ids) {
    REQUIRE(r.out.wait_reply(id) != gt::test::Clock::time_point{});
    CHECK(r.out.fetched(id).first == y);  // bitwise eager's
  }
  CHECK(r.fetch(124).first == r.fetch(204).first);
  CHECK(r.fetch(125).first == r.fetch(205).first);
  CHECK(r.out.errors().empty());
  const v1::WorkerLoad l = r.load();
  CHECK(l.early_fetches() == 3);
  CHECK(l.graph_launches() == 6);        // two segments a run: [0, 4) and [4, 6)
  CHECK(l.graph_instantiations() == 2);  // cut before the first run's capture, updated after
  CHECK(l.graph_fallbacks() == 0);
}
