// A training-like loop over the raw protocol, for the hot-path tests (test_hot_paths.cpp,
// test_hot_replay.cpp): x @ w + b, relu, (with `chain`) an elementwise tail the worker can fuse,
// summed; temporaries freed; the loss fetched each step (the sync point that ends the stretch)
// and checked against host arithmetic.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "daemons.h"
#include "instr_builder.h"
#include "libgtcore/op_attrs.h"
#include "raw_client.h"

namespace gt::testing {

inline std::vector<float> values(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 7 + 3) % 11) - 5 * scale;
  return v;
}

// The elementwise tail of a `chain` step, on the host.
inline double chain_tail(double y) { return std::exp(std::max(0.0, y * 1.5 + 0.25) * 0.5); }

// sum(relu(x @ w + b)) on the host (sum(chain_tail(relu(...))) with `chain`), x [rows, 8],
// w [8, 8], b [8].
inline double reference_loss(const std::vector<float>& x, const std::vector<float>& w,
                             const std::vector<float>& b, bool chain = false) {
  const size_t rows = x.size() / 8;
  double total = 0;
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < 8; ++j) {
      double s = b[j];
      for (size_t k = 0; k < 8; ++k) s += static_cast<double>(x[r * 8 + k]) * w[k * 8 + j];
      total += chain ? chain_tail(std::max(0.0, s)) : std::max(0.0, s);
    }
  return total;
}

// A signal config "rows" splitting tensors along axis 0 over workers 0 and 1 (or over every
// worker there is, at each instruction), and the scope entered: what follows is sharded.
inline v1::ClientMessage enter_rows_scope(bool two_workers) {
  v1::ClientMessage m;
  v1::SignalConfigEntry* cfg = m.mutable_batch()->add_instrs()->mutable_config();
  cfg->set_name("rows");
  cfg->set_has_shard(true);
  cfg->set_axis(0);
  if (two_workers) {
    cfg->add_workers(0);
    cfg->add_workers(1);
  }
  v1::SignalEvent* enter = m.mutable_batch()->add_instrs()->mutable_signal();
  enter->set_kind(v1::SignalEvent::ENTER);
  enter->set_name("rows");
  return m;
}

// The session's tensors: ids 1 (x [4, 8]), 2 (x2 [6, 8]), 3 (w), 4 (b); steps use ids from 100.
struct Loop {
  RawClient c;
  uint64_t session = 0;
  uint64_t next = 100;
  uint64_t prev_loss = 0;
  bool chain = false;
  // Each instruction in a frame of its own, the frees and the fetch in a last one (the worst
  // case of a client's flusher): the dispatcher must hold a hot stretch back to replay it.
  bool split_frames = false;
  std::vector<float> x = values(32, 0.5f), x2 = values(48, 0.25f), w = values(64, 0.125f),
                     b = values(8, 0.1f);

  // Rows: everything runs under a signal scope that splits tensors along axis 0 over workers 0
  // and 1 (or over every worker there is at each instruction), so steps exchange shards (the
  // plan's collectives and moves).
  enum class Rows { kWhole, kOverTwoWorkers, kOverAllWorkers };
  explicit Loop(const std::string& address, bool with_chain = false, Rows rows = Rows::kWhole,
                const std::string& token = "")
      : c(address), chain(with_chain) {
    v1::ServerMessage hello = c.hello(0, 0, token);
    REQUIRE(hello.has_welcome());
    session = hello.welcome().session_id();
    if (rows != Rows::kWhole) c.send(enter_rows_scope(rows == Rows::kOverTwoWorkers));
    c.send(batch_of({from_floats(1, x, Shape{4, 8}), from_floats(2, x2, Shape{6, 8}),
                     from_floats(3, w, Shape{8, 8}), from_floats(4, b, Shape{8})}));
    REQUIRE(c.request(v1::Request::SYNC).errors_size() == 0);
  }

  // One step on input `xid`; returns the fetched loss (checked against the host's).
  float step(uint64_t xid) {
    const v1::Reply r = step_reply(xid);
    REQUIRE(r.errors_size() == 0);
    const std::vector<float> got = floats_of(r);
    REQUIRE(got.size() == 1);
    const double want = reference_loss(xid == 1 ? x : x2, w, b, chain);
    CHECK(got[0] == Approx(want).epsilon(1e-5));
    return got[0];
  }

  // The same, the fetch's reply as it came (errors included).
  v1::Reply step_reply(uint64_t xid) {
    const uint64_t h = next++, z = next++, y = next++;
    v1::ClientMessage m = batch_of({
        make_instr(OpId::k_matmul, h, {xid, 3}),
        make_instr(OpId::k_add, z, {h, 4}),
        make_instr(OpId::k_relu, y, {z}),
    });
    v1::ClientBatch& batch = *m.mutable_batch();
    std::vector<uint64_t> temps = {h, z, y};
    uint64_t last = y;
    if (chain) {  // ((y * 1.5 + 0.25).relu() * 0.5).exp()
      const uint64_t a1 = next++, a2 = next++, a3 = next++, a4 = next++, e = next++;
      *batch.add_instrs() =
          make_instr(OpId::k_mul, a1, {y}, make_binary_scalar(ScalarSide::kRight, 1.5, false));
      *batch.add_instrs() =
          make_instr(OpId::k_add, a2, {a1}, make_binary_scalar(ScalarSide::kRight, 0.25, false));
      *batch.add_instrs() = make_instr(OpId::k_relu, a3, {a2});
      *batch.add_instrs() =
          make_instr(OpId::k_mul, a4, {a3}, make_binary_scalar(ScalarSide::kRight, 0.5, false));
      *batch.add_instrs() = make_instr(OpId::k_exp, e, {a4});
      temps.insert(temps.end(), {a1, a2, a3, a4, e});
      last = e;
    }
    const uint64_t loss = next++;
    *batch.add_instrs() = make_instr(OpId::k_sum, loss, {last}, make_reduce(kAllDims, false));
    if (prev_loss != 0) {  // last step's loss, dropped first
      batch.add_frees(prev_loss);
      batch.add_free_at(0);
    }
    for (uint64_t t : temps) {
      batch.add_frees(t);
      batch.add_free_at(static_cast<uint32_t>(batch.instrs_size()));
    }
    // The fetch travels with the step's instructions (one frame, as a client's flush at a sync
    // point sends them): the stretch can then be replayed by reference.
    if (split_frames) {
      for (const v1::Instr& in : batch.instrs()) {
        v1::ClientMessage one;
        *one.mutable_batch()->add_instrs() = in;
        c.send(one);
      }
      batch.clear_instrs();
      for (auto& at : *batch.mutable_free_at()) at = 0;
    }
    prev_loss = loss;
    return c.request_with(std::move(m), v1::Request::FETCH, loss);
  }
};

// ---- running the loop against real daemons (test_hot_replay.cpp, tests/gpu) ----

inline v1::StatusReport status_of(RawClient& c) { return c.request(v1::Request::STATUS).status(); }

// The worker's figures arrive with its heartbeat answers: waits until `ok` holds for them.
template <class Ok>
v1::WorkerStatus worker_when(RawClient& c, Ok ok) {
  v1::WorkerStatus w;
  for (int i = 0; i < 100; ++i) {
    const v1::StatusReport s = status_of(c);
    if (s.workers_size() == 1) {
      w = s.workers(0);
      if (ok(w)) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return w;
}

// Each worker's figure `of` (in the status report's order) once `ok` holds for them all, or as
// they are after ~5 s: the workers' figures arrive with their heartbeats.
template <class Of, class Ok>
std::vector<uint64_t> worker_figures_when(RawClient& c, Of of, Ok ok) {
  std::vector<uint64_t> v;
  for (int i = 0; i < 100; ++i) {
    v.clear();
    const v1::StatusReport s = status_of(c);
    for (const v1::WorkerStatus& w : s.workers()) v.push_back(of(w));
    if (ok(v)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return v;
}

// What a session left on each worker once it ended: bytes allocated plus hot paths held.
inline std::vector<uint64_t> left_on_workers(RawClient& watcher, size_t workers) {
  return worker_figures_when(
      watcher, [](const v1::WorkerStatus& w) { return w.memory_used_bytes() + w.hot_paths(); },
      [&](const std::vector<uint64_t>& v) { return v == std::vector<uint64_t>(workers, 0); });
}

struct Run {
  std::vector<float> losses;
  uint64_t replays = 0, fused_ops = 0, hits = 0;
  int64_t bytes_saved = 0;
  uint64_t graph_launches = 0, graph_instantiations = 0, graph_fallbacks = 0;
  uint64_t fused_kernels_compiled = 0, fused_kernels_from_disk = 0, fused_kernels_failed = 0;
};

// Six steps of the `chain` loop on x [4, 8], two on x2 [6, 8] (a shape change), one on x again,
// against real daemons (the worker started with `worker_args`, the dispatcher with `args`),
// with or without replay; the
// losses and what the session and the worker counted (once its figures satisfy `also`, if
// given: work it does off its executor, such as compiling a kernel).
inline Run run_loop(bool replay, std::vector<std::string> worker_args = {},
                    std::function<bool(const v1::WorkerStatus&)> also = {},
                    std::vector<std::string> args = {}) {
  if (!replay) args.push_back("--hot-path-replay=false");
  Daemons d(DaemonOptions{1, args, std::move(worker_args)});
  Loop a(d.address(), /*chain=*/true);
  Run r;
  for (int i = 0; i < 6; ++i) r.losses.push_back(a.step(1));
  for (int i = 0; i < 2; ++i) r.losses.push_back(a.step(2));
  r.losses.push_back(a.step(1));
  const v1::StatusReport s = status_of(a.c);
  REQUIRE(s.sessions_size() == 1);
  r.replays = s.sessions(0).hot_path_replays();
  r.bytes_saved = s.sessions(0).hot_path_bytes_saved();
  const uint64_t want_hits = replay ? r.replays : 0;
  const v1::WorkerStatus w =
      worker_when(a.c, [&](const v1::WorkerStatus& ws) {
        return ws.hot_path_hits() >= want_hits && (!also || also(ws));
      });
  r.fused_ops = w.fused_ops();
  r.hits = w.hot_path_hits();
  r.graph_launches = w.graph_launches();
  r.graph_instantiations = w.graph_instantiations();
  r.graph_fallbacks = w.graph_fallbacks();
  r.fused_kernels_compiled = w.fused_kernels_compiled();
  r.fused_kernels_from_disk = w.fused_kernels_from_disk();
  r.fused_kernels_failed = w.fused_kernels_failed();
  return r;
}

}  // namespace gt::testing
