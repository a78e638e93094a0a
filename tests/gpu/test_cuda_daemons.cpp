// The CUDA worker as a real process (issue 10), tagged [.gpu] (hidden: plain ctest never runs
// them; scripts/device-check.sh runs each case on a GPU machine):
//   - a sync behind seconds of queued GPU work: the worker keeps answering heartbeats (no device
//     wait on its I/O thread), stays registered, and another session's ops complete meanwhile
//     (the sim-device twin runs in CI: test_sim_worker);
//   - hot paths as CUDA graphs: the replayed loop gives bitwise the eager losses, each replay one
//     graph launch, updated in place (the sim-device twin runs in CI: test_hot_replay);
//   - NCCL itself: libnccl.so.2 loads and a one-rank communicator all-reduces on GPU 0, so a
//     failing two-GPU run can be told apart from a missing or broken library.
// Binaries come from $GT_BIN_DIR (the device bundle's bin/) or else this build's bin/.
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#if __has_include(<nccl.h>)
#include <nccl.h>
#define GT_TEST_HAVE_NCCL_H 1
#endif

#include "backlog_probe.h"
#include "daemons.h"
#include "hot_loop.h"
#include "instr_builder.h"
#include "libgtcore/op_attrs.h"
#include "raw_client.h"

using namespace gt;
using namespace gt::testing;
using Clock = std::chrono::steady_clock;

namespace {

// Without a GPU the case fails under device-check.sh (GT_GPU_TESTS_REQUIRE_DEVICE) and warns
// elsewhere, as the in-process parity cases do.
bool have_gpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0) return true;
  if (std::getenv("GT_GPU_TESTS_REQUIRE_DEVICE")) FAIL("no CUDA device visible");
  WARN("no CUDA device visible: skipped");
  return false;
}

}  // namespace

TEST_CASE("cuda worker: a sync behind seconds of GPU work, the worker stays registered and "
          "another session's ops complete", "[.gpu]") {
  if (!have_gpu()) return;
  // Heartbeats every 200 ms, a worker silent for 1.5 s is dead.
  Daemons d(DaemonOptions{1,
                          {"--heartbeat-interval-ms", "200", "--heartbeat-timeout-ms", "1500"},
                          {"--device", "0"}});
  RawClient heavy(d.address());
  REQUIRE(heavy.hello().kind_case() == v1::ServerMessage::kWelcome);
  // 300 float32 GEMMs of 8192^3 (1.1 TFLOP each: about 20 ms at H200 float32 rates, so ~6 s),
  // each result freed at once (no memory growth), then the sum of the last one.
  constexpr int64_t kN = 8192;
  constexpr int kGemms = 300;
  v1::ClientMessage m;
  *m.mutable_batch()->add_instrs() = make_instr(
      OpId::k_full, 1, {}, make_full(Shape{kN, kN}, DType::kFloat32, 1.0 / kN));
  for (int i = 0; i < kGemms; ++i) {
    const uint64_t id = 2 + static_cast<uint64_t>(i);
    *m.mutable_batch()->add_instrs() = make_instr(OpId::k_matmul, id, {1, 1});
    if (i + 1 < kGemms) {
      m.mutable_batch()->add_frees(id);
      m.mutable_batch()->add_free_at(static_cast<uint32_t>(m.batch().instrs_size()));
    }
  }
  const uint64_t last = 1 + kGemms, total = 1000;
  *m.mutable_batch()->add_instrs() =
      make_instr(OpId::k_sum, total, {last}, make_reduce(kAllDims, false));
  const auto t0 = Clock::now();
  heavy.send(m);
  auto heavy_fetch = std::async(std::launch::async, [&] {
    v1::Reply r = heavy.request(v1::Request::FETCH, total);
    return std::make_pair(r, ms_since(t0));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const int64_t light_ms = check_other_session_meanwhile(d);  // its own stream, meanwhile
  CHECK(heavy_fetch.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready);
  auto [hr, took_ms] = heavy_fetch.get();
  INFO(hr.DebugString());
  REQUIRE(hr.errors_size() == 0);
  WARN("GPU backlog: " << kGemms << " GEMMs of " << kN << "^3 and a sync took " << took_ms
                       << " ms; the other session's op + fetch took " << light_ms << " ms");
  // Every entry of (J/n)(J/n) is 1/n, so the sum is n (float32 rounding of the partial sums).
  REQUIRE(floats_of(hr).size() == 1);
  CHECK(floats_of(hr)[0] == Approx(static_cast<double>(kN)).epsilon(1e-4));
  check_still_registered(d);
}

TEST_CASE("cuda worker: hot paths run as CUDA graphs with bitwise the eager losses", "[.gpu]") {
  if (!have_gpu()) return;
  // (Fused kernels off: one becoming ready mid-loop would change a graph's topology.)
  const std::vector<std::string> gpu = {"--device", "0", "--fused-kernels=false"};
  const Run eager = run_loop(false, gpu);
  const Run graphs = run_loop(true, gpu);
  std::vector<std::string> off = gpu;
  off.push_back("--device-graphs=false");
  const Run plain = run_loop(true, off);
  CHECK(graphs.losses == eager.losses);
  CHECK(plain.losses == eager.losses);
  CHECK(graphs.replays == 7);
  CHECK(graphs.graph_launches == 7);
  CHECK(graphs.graph_instantiations == 2);  // x and x2; updates otherwise
  CHECK(graphs.graph_fallbacks == 0);
  CHECK(plain.graph_launches == 0);
}

TEST_CASE("cuda worker: chains run as NVRTC kernels, kept in kernel_cache_dir, with bitwise the "
          "eager losses", "[.gpu]") {
  if (!have_gpu()) return;
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("gt_cuda_kernels_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::vector<std::string> gpu = {"--device", "0", "--kernel-cache-dir", dir.string()};
  auto kernel_done = [](const v1::WorkerStatus& w) {
    return w.fused_kernels_compiled() + w.fused_kernels_from_disk() + w.fused_kernels_failed() >= 1;
  };
  const Run eager = run_loop(false, gpu);
  const Run first = run_loop(true, gpu, kernel_done);
  const Run second = run_loop(true, gpu, kernel_done);
  CHECK(first.losses == eager.losses);  // bitwise, whichever steps ran fused
  CHECK(second.losses == eager.losses);
  CHECK(first.fused_kernels_failed == 0);
  CHECK(first.fused_kernels_compiled == 1);
  CHECK(second.fused_kernels_compiled == 0);  // read back from the directory
  CHECK(second.fused_kernels_from_disk == 1);
  CHECK(second.fused_ops > 0);
  fs::remove_all(dir);
}

TEST_CASE("nccl: libnccl.so.2 loads and a one-rank communicator all-reduces on GPU 0", "[.gpu]") {
  if (!have_gpu()) return;
#ifndef GT_TEST_HAVE_NCCL_H
  FAIL("built without nccl.h");
#else
  // The way the worker loads it (workerd/peer/nccl_peer_link.cpp): at run time, by soname.
  void* h = ::dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  INFO("dlopen: " << (h ? "ok" : ::dlerror()));
  REQUIRE(h != nullptr);
  auto get_version = reinterpret_cast<decltype(&::ncclGetVersion)>(::dlsym(h, "ncclGetVersion"));
  auto get_id = reinterpret_cast<decltype(&::ncclGetUniqueId)>(::dlsym(h, "ncclGetUniqueId"));
  auto init = reinterpret_cast<decltype(&::ncclCommInitRank)>(::dlsym(h, "ncclCommInitRank"));
  auto all_reduce = reinterpret_cast<decltype(&::ncclAllReduce)>(::dlsym(h, "ncclAllReduce"));
  auto destroy = reinterpret_cast<decltype(&::ncclCommDestroy)>(::dlsym(h, "ncclCommDestroy"));
  REQUIRE(get_version);
  REQUIRE(get_id);
  REQUIRE(init);
  REQUIRE(all_reduce);
  REQUIRE(destroy);
  int version = 0;
  REQUIRE(get_version(&version) == ncclSuccess);
  WARN("NCCL version " << version);
  CHECK(version >= 21400);  // what the peer link requires (bfloat16, non-blocking init)
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  ncclUniqueId id;
  REQUIRE(get_id(&id) == ncclSuccess);
  ncclComm_t comm = nullptr;
  REQUIRE(init(&comm, 1, id, 0) == ncclSuccess);
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  std::vector<float> host{1.5f, -2.0f, 3.25f, 0.0f};
  float* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, 2 * host.size() * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMemcpy(dev, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice) ==
          cudaSuccess);
  REQUIRE(all_reduce(dev, dev + host.size(), host.size(), ncclFloat32, ncclSum, comm, s) ==
          ncclSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  std::vector<float> back(host.size());
  REQUIRE(cudaMemcpy(back.data(), dev + host.size(), back.size() * sizeof(float),
                     cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(back == host);  // a sum over one rank is the input
  CHECK(destroy(comm) == ncclSuccess);
  cudaFree(dev);
  cudaStreamDestroy(s);
#endif
}
