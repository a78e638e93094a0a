// Hot paths replayed by reference against real daemons (issue 11 step 2, ARCHITECTURE §7): the
// same training-like loop run with replay and with --hot-path-replay=false gives bitwise the
// same losses; the session's replays and the worker's fused ops are counted (and are zero with
// replay off); two sessions running the same loop over different shapes keep separate paths
// (each checked against host arithmetic); a value-dependent failure inside a replayed path is
// raised at the next sync naming its op; session end leaves no tensors and no paths. A sharded
// loop (rows over two workers) is replayed on both, exchanges included, bitwise eager's, and
// leaves nothing behind; a worker joining re-plans it and its parts are defined again.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "daemons.h"
#include "hot_loop.h"
#include "instr_builder.h"
#include "raw_client.h"

using namespace gt;
using namespace gt::testing;

namespace {

// The worker's own tensor count (STATS), waiting a little for it to reach 0 (a session's end
// runs on the worker after the dispatcher has seen the client go).
uint64_t worker_tensors_once_idle(RawClient& c) {
  uint64_t tensors = 1;
  for (int i = 0; i < 100 && tensors != 0; ++i) {
    const auto stats = c.worker_stats();
    REQUIRE(stats.size() == 1);
    tensors = stats[0].tensors();
    if (tensors != 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return tensors;
}

}  // namespace

TEST_CASE("hot paths replayed by reference: bitwise the eager losses, chains fused",
          "[hot][replay]") {
  const Run eager = run_loop(false);
  const Run hot = run_loop(true);
  CHECK(hot.losses == eager.losses);  // bitwise, step by step
  CHECK(eager.replays == 0);
  CHECK(eager.bytes_saved == 0);
  // Seven replays of a 9-instruction step, less the definitions: worker batches got smaller.
  CHECK(hot.bytes_saved > 7 * 9 * 8);
  CHECK(eager.fused_ops == 0);
  // Replayed: steps 2-6 on x (defined at the second), step 8 on x2, step 9 back on x.
  CHECK(hot.replays == 7);
  CHECK(hot.hits == 7);
  // Each step's add, relu, mul, add, relu, mul, exp and the loss's sum (the chain's reduction
  // tail) run as one fused pass.
  CHECK(hot.fused_ops == 7 * 8);
}

TEST_CASE("hot paths: a sharded stretch is replayed on both workers, its exchanges included",
          "[hot][replay][shard]") {
  struct Sharded {
    std::vector<float> losses;
    uint64_t replays = 0;
    std::vector<uint64_t> runs, peer_bytes;  // per worker
    std::vector<uint64_t> left_after_end;    // per worker: bytes allocated and paths held
  };
  auto run = [](bool replay) {
    std::vector<std::string> args;
    if (!replay) args.push_back("--hot-path-replay=false");
    args.push_back("--heartbeat-interval-ms=50");  // the workers' figures below, fresh
    Daemons d(DaemonOptions{2, args});
    auto loop = std::make_unique<Loop>(d.address(), /*chain=*/true, Loop::Rows::kOverTwoWorkers);
    Loop& a = *loop;
    Sharded r;
    for (int i = 0; i < 6; ++i) r.losses.push_back(a.step(1));  // each checked on the host
    for (int i = 0; i < 2; ++i) r.losses.push_back(a.step(2));  // another shape: re-detected
    const v1::StatusReport s = status_of(a.c);
    REQUIRE(s.sessions_size() == 1);
    r.replays = s.sessions(0).hot_path_replays();
    // The workers' figures come with their heartbeats: read until they hold still.
    int same = 0;
    for (int i = 0; i < 100 && same < 3; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const v1::StatusReport t = status_of(a.c);
      std::vector<uint64_t> runs, bytes;
      for (const v1::WorkerStatus& w : t.workers()) {
        runs.push_back(w.hot_path_hits());
        bytes.push_back(w.peer_bytes_sent());
      }
      same = runs == r.runs && bytes == r.peer_bytes && runs.size() == 2 ? same + 1 : 0;
      r.runs = runs;
      r.peer_bytes = bytes;
    }
    // The session ends: nothing of it is left on either worker, tensors or paths.
    loop.reset();
    RawClient watcher(d.address());
    REQUIRE(watcher.hello().has_welcome());
    r.left_after_end = left_on_workers(watcher, 2);
    return r;
  };
  const Sharded eager = run(false);
  const Sharded hot = run(true);
  CHECK(hot.losses == eager.losses);  // bitwise, step by step
  CHECK(eager.replays == 0);
  // Steps 2-6 on x, step 8 on x2 (detected at its second step): each a HotRun on each worker.
  CHECK(hot.replays == 6);
  REQUIRE(hot.runs.size() == 2);
  CHECK(hot.runs[0] == 6);
  CHECK(hot.runs[1] == 6);
  REQUIRE(eager.runs == std::vector<uint64_t>{0, 0});
  // The shards were exchanged, replayed or not: the same bytes either way.
  CHECK(hot.peer_bytes[0] + hot.peer_bytes[1] > 0);
  CHECK(hot.peer_bytes == eager.peer_bytes);
  CHECK(hot.left_after_end == std::vector<uint64_t>{0, 0});
  CHECK(eager.left_after_end == std::vector<uint64_t>{0, 0});
}

TEST_CASE("hot paths: a worker joining re-plans a sharded path, whose parts are defined again",
          "[hot][replay][shard]") {
  Daemons d(DaemonOptions{1, {"--heartbeat-interval-ms=50"}});
  Loop a(d.address(), /*chain=*/true, Loop::Rows::kOverAllWorkers);
  for (int i = 0; i < 3; ++i) a.step(1);  // all on worker 0; replayed from the second step
  d.add_worker();
  d.wait_for_workers(2);
  // The same stretch (the same signature) is now planned over two workers: worker 0's part
  // differs from the one it holds and is defined again, worker 1's is new. A stale definition
  // would not match the runs (an error) or give other values (each loss is host-checked).
  for (int i = 0; i < 3; ++i) a.step(1);
  const v1::StatusReport s = status_of(a.c);
  REQUIRE(s.sessions_size() == 1);
  CHECK(s.sessions(0).hot_path_replays() == 5);
  const std::vector<uint64_t> runs = worker_figures_when(
      a.c, [](const v1::WorkerStatus& w) { return w.hot_path_hits(); },
      [](const std::vector<uint64_t>& v) { return v == std::vector<uint64_t>{5, 3}; });
  CHECK(runs == std::vector<uint64_t>{5, 3});
  CHECK(a.c.request(v1::Request::SYNC).errors_size() == 0);
}

TEST_CASE("hot paths on a sim worker run as device graphs: bitwise the eager losses, a failed "
          "capture runs eagerly", "[hot][replay][sim][graph]") {
  // (Fused kernels off: one becoming ready mid-loop would change a graph's topology.)
  const std::vector<std::string> sim = {"--device", "sim", "--sim-launch-us", "20",
                                        "--fused-kernels=false"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = sim;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const Run eager = run_loop(false, sim);
  const Run graphs = run_loop(true, sim);
  const Run faulty = run_loop(true, with({"--sim-graph-fault-every", "3"}));
  const Run off = run_loop(true, with({"--device-graphs=false"}));
  CHECK(graphs.losses == eager.losses);  // bitwise, step by step
  CHECK(faulty.losses == eager.losses);
  CHECK(off.losses == eager.losses);
  CHECK(eager.graph_launches == 0);
  // Each replayed step is one segment (no uploads inside): one graph launch per replay, a new
  // executable graph for each shape (x, x2) and updates otherwise.
  CHECK(graphs.replays == 7);
  CHECK(graphs.graph_launches == 7);
  CHECK(graphs.graph_instantiations == 2);
  CHECK(graphs.graph_fallbacks == 0);
  CHECK(faulty.graph_fallbacks == 2);  // captures 3 and 6 of 7
  CHECK(faulty.graph_launches == 5);
  CHECK(off.replays == 7);
  CHECK(off.graph_launches == 0);
}

TEST_CASE("hot paths on a sim worker: chains as generated kernels, kept in kernel_cache_dir and "
          "read back by the next worker", "[hot][replay][sim][fused]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("gt_kernel_cache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::vector<std::string> sim = {"--device", "sim", "--sim-launch-us", "20",
                                        "--kernel-cache-dir", dir.string()};
  auto kernels = [&] {
    std::vector<fs::path> v;
    if (fs::exists(dir))
      for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".gtk") v.push_back(e.path());
    return v;
  };
  const Run eager = run_loop(false, sim);
  CHECK(eager.fused_kernels_compiled == 0);  // (nothing replayed, nothing fused)
  // The first worker compiles the loop's chain (off its executor: the first runs of the chain
  // go op by op) and writes it to the directory.
  auto kernel_done = [](const v1::WorkerStatus& w) {
    return w.fused_kernels_compiled() + w.fused_kernels_from_disk() + w.fused_kernels_failed() >= 1;
  };
  const Run first = run_loop(true, sim, kernel_done);
  CHECK(first.losses == eager.losses);  // bitwise, fused or not
  CHECK(first.fused_kernels_failed == 0);
  CHECK(first.fused_kernels_compiled == 1);
  // The step's chain (its reduction tail runs as an op on a device) at both shapes: one kernel.
  for (int i = 0; i < 200 && kernels().size() < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(kernels().size() == 1);
  const auto written = fs::last_write_time(kernels()[0]);
  // The next worker reads it back instead of compiling it.
  const Run second = run_loop(true, sim, kernel_done);
  CHECK(second.losses == eager.losses);
  CHECK(second.fused_kernels_compiled == 0);
  CHECK(second.fused_kernels_from_disk == 1);
  REQUIRE(kernels().size() == 1);
  CHECK(fs::last_write_time(kernels()[0]) == written);
  fs::remove_all(dir);
}

TEST_CASE("hot paths: two sessions with the same loop keep separate paths", "[hot][replay]") {
  Daemons d(DaemonOptions{1});
  Loop a(d.address(), true), b(d.address(), true);
  // Both sessions' first paths are path 1 on the same worker, over different shapes: each
  // step checks its loss against the host, so a shared definition would fail here.
  for (int i = 0; i < 4; ++i) {
    a.step(1);
    b.step(2);
  }
  const v1::StatusReport s = status_of(a.c);
  REQUIRE(s.sessions_size() >= 1);
  CHECK(s.sessions(0).hot_path_replays() == 3);
  const v1::WorkerStatus w =
      worker_when(a.c, [](const v1::WorkerStatus& ws) { return ws.hot_path_hits() >= 6; });
  CHECK(w.hot_path_hits() == 6);
  CHECK(w.hot_paths() == 2);
}

namespace {

// Each step: idx = an upload; y = exp(index_select(x, 0, idx) * 2); fetch y. An index out of
// range is found by a worker, inside the replayed path: the fetch raises it naming the op, the
// path still runs afterwards, and the session's end leaves nothing on any worker. `rows`: under
// a scope that splits every tensor's rows over workers 0 and 1 (a sharded path).
void failure_inside_a_path(Loop::Rows rows) {
  const bool sharded = rows != Loop::Rows::kWhole;
  Daemons d(DaemonOptions{sharded ? 2 : 1, {"--heartbeat-interval-ms=50"}});
  {
    RawClient c(d.address());
    REQUIRE(c.hello().has_welcome());
    if (sharded) c.send(enter_rows_scope(true));
    c.send(batch_of({from_floats(1, {1, 2, 3, 4}, Shape{4})}));
    REQUIRE(c.request(v1::Request::SYNC).errors_size() == 0);
    uint64_t id = 100;
    auto step = [&](int64_t index) {
      const uint64_t idx = id++, g = id++, m2 = id++, y = id++;
      std::vector<int64_t> iv = {index, 0};
      OpAttrs a = make_shape_dtype(Shape{2}, DType::kInt64);
      std::string bytes(reinterpret_cast<const char*>(iv.data()), iv.size() * sizeof(int64_t));
      a.data = bytes;
      v1::ClientMessage m = batch_of({
          make_instr(OpId::k_from_host, idx, {}, a),
          make_instr(OpId::k_index_select, g, {1, idx}, make_axis(0)),
          make_instr(OpId::k_mul, m2, {g}, make_binary_scalar(ScalarSide::kRight, 2.0, false)),
          make_instr(OpId::k_exp, y, {m2}),
      });
      for (uint64_t t : {idx, g, m2}) {
        m.mutable_batch()->add_frees(t);
        m.mutable_batch()->add_free_at(4);
      }
      return c.request_with(std::move(m), v1::Request::FETCH, y);
    };
    for (int64_t i : {1, 2, 3}) {
      const v1::Reply r = step(i);
      REQUIRE(r.errors_size() == 0);
      const std::vector<float> got = floats_of(r);
      REQUIRE(got.size() == 2);
      CHECK(got[0] == Approx(std::exp(2.0 * static_cast<double>(i + 1))).epsilon(1e-6));
      CHECK(got[1] == Approx(std::exp(2.0)).epsilon(1e-6));
    }
    const v1::Reply bad = step(7);  // out of range
    REQUIRE(bad.errors_size() == 1);
    CHECK(bad.errors(0).op() == "index_select");
    const v1::Reply sync = c.request(v1::Request::SYNC);
    CHECK(sync.errors_size() == 0);  // the fetch raised it already
    CHECK(status_of(c).sessions(0).hot_path_replays() == 3);
    const v1::Reply good = step(0);  // the path still runs after a failure
    REQUIRE(good.errors_size() == 0);
    CHECK(floats_of(good)[0] == Approx(std::exp(2.0)).epsilon(1e-6));
  }  // the client leaves
  RawClient watcher(d.address());
  REQUIRE(watcher.hello().has_welcome());
  CHECK(left_on_workers(watcher, sharded ? 2 : 1) == std::vector<uint64_t>(sharded ? 2 : 1, 0));
}

}  // namespace

TEST_CASE("hot paths: a failure inside a replayed path names its op, session end frees all",
          "[hot][replay]") {
  failure_inside_a_path(Loop::Rows::kWhole);
}

TEST_CASE("hot paths: a failure inside a replayed sharded path names its op, session end frees "
          "all on both workers", "[hot][replay][shard]") {
  failure_inside_a_path(Loop::Rows::kOverTwoWorkers);
}

TEST_CASE("hot paths: a client cannot send hot-path runs", "[hot][replay]") {
  Daemons d(DaemonOptions{1});
  RawClient c(d.address());
  REQUIRE(c.hello().has_welcome());
  c.send(batch_of({from_floats(1, {1, 2}, Shape{2})}));
  v1::Instr smuggled = make_instr(OpId::k_neg, 2, {1});
  smuggled.mutable_hot()->set_path(1);
  smuggled.mutable_hot()->add_bindings(1);
  smuggled.mutable_hot()->set_first_out(1);
  v1::Instr bare;  // op 0 with only a HotRun
  bare.mutable_hot()->set_path(1);
  c.send(batch_of({smuggled, bare, make_instr(OpId::k_neg, 3, {1})}));
  const v1::Reply sync = c.request(v1::Request::SYNC);
  REQUIRE(sync.errors_size() == 2);
  CHECK(sync.errors(0).message().find("workers only") != std::string::npos);
  CHECK(sync.errors(0).code() == static_cast<uint32_t>(Code::kPermissionDenied));
  CHECK(sync.errors(1).message().find("empty instruction") != std::string::npos);
  const v1::Reply fine = c.request(v1::Request::FETCH, 3);  // the session goes on
  REQUIRE(fine.errors_size() == 0);
  CHECK(floats_of(fine) == std::vector<float>{-1, -2});
  CHECK(c.request(v1::Request::FETCH, 2).errors_size() == 1);  // the smuggled op's result
}

namespace {

// The same steps (`steps` runs them on a chain Loop, returning their losses) with replay off and
// on, every instruction in a frame of its own: the losses of both, and the replays counted.
struct SplitFrameRuns {
  std::vector<float> eager, hot;
  uint64_t replays = 0;
};
template <class Steps>
SplitFrameRuns run_split_frames(Steps steps, Loop::Rows rows = Loop::Rows::kWhole,
                                const std::vector<std::string>& dispatcher_args = {}) {
  SplitFrameRuns r;
  for (bool replay : {false, true}) {
    std::vector<std::string> args = dispatcher_args;
    if (!replay) args.push_back("--hot-path-replay=false");
    Daemons d(DaemonOptions{rows == Loop::Rows::kWhole ? 1 : 2, args});
    Loop a(d.address(), /*chain=*/true, rows);
    a.split_frames = true;
    (replay ? r.hot : r.eager) = steps(a);
    if (replay) r.replays = status_of(a.c).sessions(0).hot_path_replays();
  }
  return r;
}

// Six steps on x [4, 8]: their losses.
std::vector<float> six_steps(Loop& a) {
  std::vector<float> losses;
  for (int i = 0; i < 6; ++i) losses.push_back(a.step(1));
  return losses;
}

}  // namespace

TEST_CASE("hot paths: a stretch sent one instruction per frame is held back and replayed",
          "[hot][replay]") {
  // What a client's flusher does under load: every instruction in its own frame. Once the
  // stretch is a hot path, the dispatcher holds each frame's part back while it follows the
  // path and sends the whole as one HotRun; the losses are those of eager execution.
  const SplitFrameRuns r = run_split_frames(six_steps);
  CHECK(r.hot == r.eager);  // bitwise
  // Step 2 defines the path (its frames went out eagerly); steps 3-6 are held and replayed.
  CHECK(r.replays == 4);
}

TEST_CASE("hot paths: a sharded stretch sent one instruction per frame is held on both workers "
          "and replayed", "[hot][replay][shard]") {
  // The same with every tensor's rows over two workers: each frame's part goes to both, with
  // the plan's exchanges between them. The dispatcher holds every batch of the frame (never one
  // member's alone: its peer would wait in an exchange for it) and replays both parts.
  const SplitFrameRuns r = run_split_frames(six_steps, Loop::Rows::kOverTwoWorkers);
  CHECK(r.hot == r.eager);  // bitwise
  CHECK(r.replays == 4);    // steps 3-6, as on one worker
}

TEST_CASE("hot paths: two paths alternating, one instruction per frame, are both replayed",
          "[hot][replay]") {
  // A program alternating two steps (a GAN's generator and discriminator, training and
  // evaluation): each stretch follows the other path than the one before it. The dispatcher
  // holds a stretch while it is the beginning of any of its hot paths, so both are replayed.
  const SplitFrameRuns r = run_split_frames([](Loop& a) {
    std::vector<float> losses;
    for (int i = 0; i < 6; ++i) {
      losses.push_back(a.step(1));  // x [4, 8]
      losses.push_back(a.step(2));  // x2 [6, 8]: another path
    }
    return losses;
  });
  CHECK(r.hot == r.eager);  // bitwise
  // Each path is defined at its second step; its steps 3-6 are held and replayed.
  CHECK(r.replays == 8);
}

TEST_CASE("hot paths: held work starts without the rest of its stretch", "[hot][replay]") {
  // A client that stops half way through a hot stretch (host work before its sync) still gets
  // its work run: the dispatcher holds it back only briefly.
  Daemons d(DaemonOptions{1});
  Loop a(d.address(), true);
  for (int i = 0; i < 3; ++i) a.step(1);  // a hot path by now
  RawClient watcher(d.address());
  REQUIRE(watcher.hello().has_welcome());
  auto ops = [&] {
    const auto stats = watcher.worker_stats();
    REQUIRE(stats.size() == 1);
    return stats[0].ops_executed();
  };
  const uint64_t before = ops();
  // The start of the next step (the matmul and the bias add, the path's first two
  // instructions), then nothing.
  const uint64_t h = a.next++, z = a.next++;
  a.c.send(batch_of({make_instr(OpId::k_matmul, h, {1, 3}), make_instr(OpId::k_add, z, {h, 4})}));
  uint64_t after = before;
  for (int i = 0; i < 100 && after < before + 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    after = ops();
  }
  CHECK(after == before + 2);  // ran, without a sync from its session
  const v1::Reply r = a.c.request(v1::Request::FETCH, z);
  REQUIRE(r.errors_size() == 0);
  CHECK(floats_of(r).size() == 32);
}

TEST_CASE("hot paths: a client leaving in the middle of a held stretch leaves nothing behind",
          "[hot][replay]") {
  Daemons d(DaemonOptions{1});
  RawClient watcher(d.address());
  REQUIRE(watcher.hello().has_welcome());
  {
    Loop a(d.address(), true);
    for (int i = 0; i < 3; ++i) a.step(1);  // a hot path by now
    const uint64_t h = a.next++, z = a.next++;
    // Half a step (held back by the dispatcher), then the client is gone at once.
    a.c.send(batch_of({make_instr(OpId::k_matmul, h, {1, 3}), make_instr(OpId::k_add, z, {h, 4})}));
  }
  CHECK(worker_tensors_once_idle(watcher) == 0);
  const v1::WorkerStatus w =
      worker_when(watcher, [](const v1::WorkerStatus& ws) { return ws.hot_paths() == 0; });
  CHECK(w.hot_paths() == 0);
  CHECK(watcher.request(v1::Request::SYNC).errors_size() == 0);  // the dispatcher goes on
}

TEST_CASE("hot paths: a client leaving in the middle of a held sharded stretch leaves nothing "
          "behind on either worker", "[hot][replay][shard]") {
  Daemons d(DaemonOptions{2, {"--heartbeat-interval-ms=50"}});
  RawClient watcher(d.address());
  REQUIRE(watcher.hello().has_welcome());
  {
    Loop a(d.address(), true, Loop::Rows::kOverTwoWorkers);
    for (int i = 0; i < 3; ++i) a.step(1);  // a hot path by now
    const uint64_t h = a.next++, z = a.next++;
    // Half a step (both workers' parts held back by the dispatcher), then the client is gone.
    a.c.send(batch_of({make_instr(OpId::k_matmul, h, {1, 3}), make_instr(OpId::k_add, z, {h, 4})}));
  }
  CHECK(left_on_workers(watcher, 2) == std::vector<uint64_t>{0, 0});
  CHECK(watcher.request(v1::Request::SYNC).errors_size() == 0);  // the dispatcher goes on
}

TEST_CASE("hot paths cut into segments (hot_path_segment): bitwise the eager losses, each "
          "segment replayed", "[hot][replay]") {
  // The 9-instruction chain step cut after 3 instructions (matmul, add, relu), the other 6 a
  // segment of their own: two hot paths per step, each replayed, the chain's tail still fused.
  const std::vector<std::string> segments = {"--hot-path-segment=3"};
  const Run eager = run_loop(false, {}, {}, segments);
  const Run hot = run_loop(true, {}, {}, segments);
  CHECK(hot.losses == eager.losses);  // bitwise, step by step
  CHECK(eager.replays == 0);
  CHECK(hot.replays == 2 * 7);  // as unsegmented (7 steps replayed), two segments each
  CHECK(hot.hits == 2 * 7);
  CHECK(hot.fused_ops > 7 * 4);
}

TEST_CASE("hot paths cut into segments, one instruction per frame: each segment goes as soon as "
          "it is whole", "[hot][replay]") {
  const SplitFrameRuns r =
      run_split_frames(six_steps, Loop::Rows::kWhole, {"--hot-path-segment=3"});
  CHECK(r.hot == r.eager);  // bitwise
  CHECK(r.replays == 2 * 4);  // steps 3-6, each segment held until whole, then replayed
  // The same over two workers, with the plan's exchanges: each member's part of a segment held
  // (the frame's earlier segment sent), both parts replayed.
  const SplitFrameRuns sharded =
      run_split_frames(six_steps, Loop::Rows::kOverTwoWorkers, {"--hot-path-segment=3"});
  CHECK(sharded.hot == sharded.eager);  // bitwise
  CHECK(sharded.replays == 2 * 4);

  // The first segment of a step is replayed before the rest of the step has even been sent:
  // the worker runs it (its hit counted) while the client has not finished the step.
  Daemons d(DaemonOptions{1, {"--hot-path-segment=3"}});
  Loop a(d.address(), /*chain=*/true);
  for (int i = 0; i < 3; ++i) a.step(1);  // the segments are hot paths now
  const uint64_t hits =
      worker_when(a.c, [](const v1::WorkerStatus& w) { return w.hot_path_hits() >= 4; })
          .hot_path_hits();
  REQUIRE(hits == 4);  // steps 2 and 3, two segments each
  const uint64_t h = a.next++, z = a.next++, y = a.next++;
  a.c.send(batch_of({make_instr(OpId::k_matmul, h, {1, 3})}));
  v1::ClientMessage rest =
      batch_of({make_instr(OpId::k_add, z, {h, 4}), make_instr(OpId::k_relu, y, {z})});
  rest.mutable_batch()->set_segment_end(true);  // (as a compiled scope's client marks it)
  a.c.send(rest);
  RawClient watcher(d.address());
  REQUIRE(watcher.hello().has_welcome());
  CHECK(worker_when(watcher, [&](const v1::WorkerStatus& w) { return w.hot_path_hits() > hits; })
            .hot_path_hits() == hits + 1);
  // The rest of the step (a held segment would have gone eagerly after 2 ms, a whole one
  // waits for the next instruction unless its frame says it ended: it went as one HotRun).
  a.c.send(batch_of({make_instr(OpId::k_neg, a.next++, {y})}));
  const v1::Reply r2 = a.c.request(v1::Request::FETCH, y);
  REQUIRE(r2.errors_size() == 0);
  const std::vector<float> got = floats_of(r2);
  REQUIRE(got.size() == 32);
  for (size_t r = 0; r < 4; ++r)
    for (size_t j = 0; j < 8; ++j) {
      double want = a.b[j];
      for (size_t k = 0; k < 8; ++k) want += static_cast<double>(a.x[r * 8 + k]) * a.w[k * 8 + j];
      CHECK(got[r * 8 + j] == Approx(std::max(0.0, want)).epsilon(1e-5));
    }
}
