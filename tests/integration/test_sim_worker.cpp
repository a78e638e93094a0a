// Real daemons with sim-device workers (`gt-workerd --device sim`, ARCHITECTURE §6): what the
// GPU path must do that a CPU worker never exercised. A sync behind seconds of queued device
// work keeps the worker registered and other sessions moving; a lost device takes its worker out
// (non-zero exit, sessions told which worker); two sim workers train data parallel like one.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include "backlog_probe.h"
#include "daemons.h"
#include "instr_builder.h"
#include "raw_client.h"

using namespace gt;
using namespace gt::testing;
using Clock = std::chrono::steady_clock;


TEST_CASE("sim worker: a sync behind 6 s of device work, the worker stays registered and "
          "another session's ops complete", "[sim][integration]") {
  // Heartbeats every 200 ms, a worker silent for 1.5 s is dead: a device wait on the worker's
  // I/O thread would get it declared dead long before the 6 s are over.
  Daemons d(DaemonOptions{1,
                          {"--heartbeat-interval-ms", "200", "--heartbeat-timeout-ms", "1500"},
                          {"--device", "sim", "--sim-kernel-us", "20000"}});
  RawClient heavy(d.address());
  REQUIRE(heavy.hello().kind_case() == v1::ServerMessage::kWelcome);
  v1::ClientMessage m;
  *m.mutable_batch()->add_instrs() =
      make_instr(OpId::k_full, 1, {}, make_full(Shape{16}, DType::kFloat32, 0.0));
  for (uint64_t i = 1; i <= 300; ++i)  // 300 kernels x 20 ms of device time
    *m.mutable_batch()->add_instrs() =
        make_instr(OpId::k_add, i + 1, {i}, make_binary_scalar(ScalarSide::kRight, 1.0, false));
  const auto t0 = Clock::now();
  heavy.send(m);
  auto heavy_sync = std::async(std::launch::async, [&] {
    v1::Reply r = heavy.request(v1::Request::FETCH, 301);
    return std::make_pair(r, ms_since(t0));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  check_other_session_meanwhile(d);  // its own stream, done in well under a second
  CHECK(heavy_sync.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready);
  auto [hr, took_ms] = heavy_sync.get();
  INFO(hr.DebugString());
  REQUIRE(hr.errors_size() == 0);
  CHECK(took_ms >= 5500);
  std::vector<float> hv(16);
  std::memcpy(hv.data(), hr.tensor().data().data(), 64);
  CHECK(hv[0] == 300.0f);
  CHECK(hv[15] == 300.0f);
  check_still_registered(d);
}

TEST_CASE("sim worker: a lost device takes the worker out with a non-zero exit, the session is "
          "told which worker", "[sim][integration]") {
  Daemons d(DaemonOptions{1, {}, {"--device", "sim", "--sim-fault-after", "4"}});
  RawClient c(d.address());
  REQUIRE(c.hello().kind_case() == v1::ServerMessage::kWelcome);
  v1::ClientMessage m;
  for (uint64_t i = 1; i <= 8; ++i)
    *m.mutable_batch()->add_instrs() =
        make_instr(OpId::k_zeros, i, {}, make_shape_dtype(Shape{4}, DType::kFloat32));
  c.send(m);
  v1::Reply r = c.request(v1::Request::SYNC);
  REQUIRE(r.errors_size() >= 1);
  INFO(r.DebugString());
  CHECK(r.errors(0).origin().find("worker") != std::string::npos);
  CHECK(wait_process(d.worker_pid(0), 10000) == 3);  // its exit status (-1: still running)
  // By its next sync at the latest, the session is told that worker 0 went away (the first
  // sync raises the device's loss or, when the worker left before answering, that already).
  v1::Reply after = c.request(v1::Request::SYNC);
  const std::string told = r.DebugString() + after.DebugString();
  INFO(told);
  CHECK(told.find("worker 0") != std::string::npos);
  CHECK(told.find("its tensors are lost") != std::string::npos);
}

TEST_CASE("sim workers: data-parallel training on two sim workers matches one worker",
          "[sim][integration][sharding]") {
  // gt-bench-dp trains the same MLP on 1 worker and data parallel on 2 and exits non-zero when
  // the losses differ; the sim workers exchange shards through the staged peer link (device ->
  // host -> TCP -> device), as CUDA workers without NCCL do.
  Daemons d(DaemonOptions{2, {}, {"--device", "sim", "--sim-launch-us", "20"}, {}});
  DpRun run = run_dp_bench(d, 6);
  INFO(run.out);
  CHECK(run.rc == 0);
  CHECK(run.bytes_per_step > 0);  // shards really moved, through the staging
}

TEST_CASE("sim worker: a plain loop of temporaries, its repetitions replayed as device graphs, "
          "runs under a 64 MiB cap", "[sim][integration][graph]") {
  // 2,000 iterations of 8 MiB of temporaries, a sync every 500: the stretches between syncs are
  // one hot path of 1,500 instructions, replayed from the third on as one graph segment. Its
  // frees apply in stream order while it records (held to its end, the third stretch ran out
  // of memory at once).
  Daemons d(DaemonOptions{1, {}, {"--device", "sim", "--max-memory-bytes",
                                  std::to_string(64 << 20)}});
  auto [rc, out] = run_client(d.address(), {"temps", "2000"});
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find("ok") != std::string::npos);
  RawClient c(d.address());
  REQUIRE(c.hello().kind_case() == v1::ServerMessage::kWelcome);
  const v1::StatusReport s = c.request(v1::Request::STATUS).status();
  REQUIRE(s.workers_size() == 1);
  // (The heartbeat that carries the figures may still be on its way: at least one launch.)
  uint64_t launches = s.workers(0).graph_launches();
  for (int i = 0; i < 50 && launches == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    launches = c.request(v1::Request::STATUS).status().workers(0).graph_launches();
  }
  CHECK(launches >= 1);
}
