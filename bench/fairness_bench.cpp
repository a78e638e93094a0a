// gt-bench-fairness: a light user's 4x4 op + fetch on a worker shared with a user flooding
// 512² matmuls (the reliability issue's fairness target: p99 <= 50 ms), beside the same light
// round trip on an idle worker, measured in one run. Starts its own dispatcher and one CPU
// worker (from its bin/ folder, like the integration tests).
//
//   gt-bench-fairness [--samples N] [--flood N] [--json] [--fifo]
//
// --fifo: the same with turns and per-session cost budgets switched off (worker turn_us and
// dispatcher session_inflight_us at their maximum): the worker is first-in first-out, as before
// the fairness fix — the figure to compare against.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "daemons.h"
#include "instr_builder.h"
#include "raw_client.h"

using namespace gt;
using namespace gt::testing;
using Clock = std::chrono::steady_clock;

namespace {

double pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// `n` round trips of a 4x4 creation + fetch, 5 ms apart; milliseconds each.
std::vector<double> light_round_trips(const std::string& address, int n) {
  RawClient light(address);
  if (light.hello().kind_case() != v1::ServerMessage::kWelcome) return {};
  std::vector<double> ms;
  for (uint64_t i = 1; i <= static_cast<uint64_t>(n); ++i) {
    auto t0 = Clock::now();
    light.send(batch_of({make_instr(OpId::k_full, i, {}, make_full(Shape{4, 4}, DType::kFloat32, 1.0))}));
    v1::Reply r = light.request(v1::Request::FETCH, i);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (r.errors_size() != 0 || floats_of(r) != std::vector<float>(16, 1.0f)) {
      std::fprintf(stderr, "gt-bench-fairness: wrong light result\n");
      return {};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  int samples = 200, flood = 6000;
  bool json = false, fifo = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--samples" && i + 1 < argc) samples = std::max(10, std::atoi(argv[++i]));
    else if (a == "--flood" && i + 1 < argc) flood = std::max(200, std::atoi(argv[++i]));
    else if (a == "--json") json = true;
    else if (a == "--fifo") fifo = true;
    else {
      std::fprintf(stderr, "usage: gt-bench-fairness [--samples N] [--flood N] [--json] [--fifo]\n");
      return 2;
    }
  }
  DaemonOptions opts{1};
  if (fifo) {
    opts.dispatcher_args = {"--session-inflight-us", "60000000"};
    opts.worker_args = {"--turn-us", "600000000"};
  }
  Daemons d(opts);
  std::vector<double> idle = light_round_trips(d.address(), samples);

  std::atomic<int> queued{0};
  std::atomic<bool> stop{false};
  std::thread flooder([&] {
    RawClient f(d.address());
    if (f.hello().kind_case() != v1::ServerMessage::kWelcome) return;
    f.send(batch_of({make_instr(OpId::k_full, 1, {}, make_full(Shape{512, 512}, DType::kFloat32, 0.001))}));
    uint64_t id = 2;
    for (int sent = 0; sent < flood && !stop; sent += 200, id += 200) {
      f.send(matmul_flood(1, id, 200));
      queued += 200;
    }
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  });
  while (queued < std::min(flood, 3000)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::vector<double> busy = light_round_trips(d.address(), samples);
  stop = true;
  flooder.join();
  if (idle.empty() || busy.empty()) return 1;

  const double i50 = pct(idle, 0.5), i99 = pct(idle, 0.99), b50 = pct(busy, 0.5), b99 = pct(busy, 0.99);
  if (json) {
    std::printf("{\"idle_p50_ms\": %.3f, \"idle_p99_ms\": %.3f, \"flood_p50_ms\": %.3f, "
                "\"flood_p99_ms\": %.3f, \"p99_ratio\": %.2f, \"samples\": %d, \"flood_matmuls\": %d}\n",
                i50, i99, b50, b99, b99 / i99, samples, flood);
  } else {
    std::printf("light user: 4x4 op + fetch, %d samples each (one run)%s\n", samples,
                fifo ? ", turns and cost budgets OFF (first-in first-out worker)" : "");
    std::printf("  %-34s %10s %10s\n", "worker", "p50 ms", "p99 ms");
    std::printf("  %-34s %10.2f %10.2f\n", "idle", i50, i99);
    std::printf("  %-34s %10.2f %10.2f\n", "shared with a 512^2 matmul flood", b50, b99);
    std::printf("  target: p99 <= 50 ms under the flood: %s\n", b99 <= 50 ? "met" : "MISSED");
  }
  return 0;
}
