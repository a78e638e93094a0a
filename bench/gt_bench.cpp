// gt-bench: GT's headline figures from one run, each beside its baseline measured in the same
// run (ARCHITECTURE §11: benchmarks are programs). Uses GT_ADDRESS when set, else the embedded default.
//
//   (a) pipelined small-op stream: N x `c = a + b` on 4x4 float32, then one fetch -> ops/s
//   (b) fetch round trip of a 4x4 tensor vs a raw loopback TCP ping-pong -> ratio
//   (c) 1024^2 matmul + fetch through GT vs the same OpenBLAS call in-process -> ratio
//
// Usage: gt-bench [--ops N] [--reps R] [--only a,b,c] [--json]
// --json prints one JSON object of named figures instead of the text (for tooling).
#include <cblas.h>
#include <gt/gt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "tcp_pingpong.h"

using gt::bench::median;
using gt::bench::now_s;

namespace {

struct Args {
  int ops = 200000;
  int reps = 5;
  std::string only = "abc";
  bool json = false;
};

// The figures of one run, in order, for --json.
std::vector<std::pair<std::string, double>> g_figures;

void figure(const char* name, double v) { g_figures.emplace_back(name, v); }

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--ops" && i + 1 < argc) a.ops = std::atoi(argv[++i]);
    else if (s == "--reps" && i + 1 < argc) a.reps = std::atoi(argv[++i]);
    else if (s == "--only" && i + 1 < argc) a.only = argv[++i];
    else if (s == "--json") a.json = true;
    else {
      std::fprintf(stderr, "usage: gt-bench [--ops N] [--reps R] [--only abc] [--json]\n");
      std::exit(2);
    }
  }
  return a;
}

void bench_small_ops(const Args& args) {
  gt::Tensor a = gt::randn({4, 4}), b = gt::randn({4, 4});
  gt::Tensor c = a + b;
  (void)c.to_vector<float>();  // warm up the session
  std::vector<double> rates;
  for (int r = 0; r < args.reps; ++r) {
    double t0 = now_s();
    for (int i = 0; i < args.ops; ++i) c = a + b;
    (void)c.to_vector<float>();
    rates.push_back(args.ops / (now_s() - t0));
  }
  figure("small_ops_per_s", median(rates));
  if (!args.json)
    std::printf("(a) small-op stream: %d x (4x4 add) + 1 fetch: median %.0f ops/s over %d runs "
                "(target >= 400000)\n",
                args.ops, median(rates), args.reps);
}

void bench_fetch_rtt(const Args& args) {
  gt::Tensor a = gt::randn({4, 4});
  (void)a.to_vector<float>();
  // Alternating blocks, so the shared machine's load swings hit both sides alike.
  const int blocks = 10, iters = 200;
  std::vector<double> gt_t, tcp_t;
  for (int b = 0; b < blocks; ++b) {
    for (int i = 0; i < iters + 10; ++i) {
      double t0 = now_s();
      (void)a.to_vector<float>();
      if (i >= 10) gt_t.push_back(now_s() - t0);
    }
    std::vector<double> t = gt::bench::tcp_pingpong(iters, 64);
    tcp_t.insert(tcp_t.end(), t.begin(), t.end());
  }
  double g = median(gt_t), t = median(tcp_t);
  figure("fetch_rtt_us", g * 1e6);
  figure("tcp_rtt_us", t * 1e6);
  figure("fetch_rtt_ratio", g / t);
  if (!args.json)
    std::printf("(b) fetch round trip (4x4 float32): median %.1f us; raw loopback TCP ping-pong: "
                "median %.1f us; ratio %.2fx (target <= 2.5x)\n",
                g * 1e6, t * 1e6, g / t);
}

void bench_matmul(const Args& args) {
  const int n = 1024;
  gt::Tensor a = gt::randn({n, n}), b = gt::randn({n, n});
  (void)gt::matmul(a, b).to_vector<float>();  // warm up worker allocator and BLAS threads
  auto through_gt = [&] {
    std::vector<float> out = gt::matmul(a, b).to_vector<float>();
    if (out.size() != static_cast<size_t>(n) * n) std::abort();
  };
  std::vector<float> ha = a.to_vector<float>(), hb = b.to_vector<float>(), hc(n * n);
  auto local = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, ha.data(), n,
                hb.data(), n, 0.0f, hc.data(), n);
  };
  local();
  // Alternating blocks of 2, so load swings on the shared machine hit both sides alike.
  std::vector<double> gt_t, local_t;
  for (int b = 0; b < args.reps * 2; ++b) {
    for (double t : gt::bench::time_runs(2, through_gt)) gt_t.push_back(t);
    for (double t : gt::bench::time_runs(2, local)) local_t.push_back(t);
  }
  double g = median(gt_t), l = median(local_t);
  figure("matmul_fetch_ms", g * 1e3);
  figure("matmul_local_ms", l * 1e3);
  figure("matmul_ratio", g / l);
  if (!args.json)
    std::printf("(c) 1024^2 matmul + fetch: GT median %.2f ms; in-process OpenBLAS median %.2f ms "
                "(%.1f GFLOP/s); ratio %.2fx (target <= 1.15x)\n",
                g * 1e3, l * 1e3, 2.0 * n * n * n / l / 1e9, g / l);
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  const char* addr = std::getenv("GT_ADDRESS");
  if (!args.json)
    std::printf("gt-bench: %s\n",
                addr ? addr : "embedded default (private dispatcher + 1 CPU worker)");
  if (args.only.find('a') != std::string::npos) bench_small_ops(args);
  if (args.only.find('b') != std::string::npos) {
    // After (a)'s seconds of full load, round trips on a small VM stay 2-2.5x slower for a
    // second or two -- also after load that never touched GT (a client spinning on its own),
    // so the scheduler's or the idle governor's state, not GT's. (b) measures an idle
    // system's round trip: it starts after a pause (docs/PERFORMANCE.md, "Data path").
    if (args.only.find('a') != std::string::npos)
      std::this_thread::sleep_for(std::chrono::seconds(2));
    bench_fetch_rtt(args);
  }
  if (args.only.find('c') != std::string::npos) bench_matmul(args);
  if (args.json) {
    std::printf("{");
    for (size_t i = 0; i < g_figures.size(); ++i)
      std::printf("%s\"%s\": %.6g", i ? ", " : "", g_figures[i].first.c_str(), g_figures[i].second);
    std::printf("}\n");
  }
  return 0;
}
