// gt-bench-chain: the fused elementwise chain of issue 11, y = ((x * a + b).relu() * c).exp()
// with b a bias row, on N float32 (16 M by default) through GT, three ways in one run -- eager
// (a `compile: false` scope: one kernel and one full tensor per op), a plain loop (the hot path
// found and replayed: one fused pass on a CPU worker, one generated kernel on a CUDA or sim
// worker) and under gt::compile -- each call waiting for its result (gt::synchronize). Reports
// medians (alternating blocks of calls per mode; --interleave: the modes call by call, a
// program alternating between paths) and the ratios eager / loop and eager / compiled; checks
// the three give the same y.
// Works on whatever worker serves GT_ADDRESS (else the embedded default: a CPU worker), so
// scripts/device-check.sh runs it through a CUDA worker.
//
// Usage: gt-bench-chain [--elems N] [--reps R] [--interleave] [--json]
#include <gt/gt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"

using gt::bench::median;
using gt::bench::now_s;

namespace {

struct Args {
  int64_t elems = int64_t{16} << 20;
  int reps = 9;
  bool json = false;
  bool interleave = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--elems" && i + 1 < argc) a.elems = std::atoll(argv[++i]);
    else if (s == "--reps" && i + 1 < argc) a.reps = std::atoi(argv[++i]);
    else if (s == "--json") a.json = true;
    else if (s == "--interleave") a.interleave = true;
    else {
      std::fprintf(stderr, "usage: gt-bench-chain [--elems N] [--reps R] [--interleave] [--json]\n");
      std::exit(2);
    }
  }
  if (a.elems < 1024 || a.elems % 1024 != 0 || a.reps < 1) {
    std::fprintf(stderr, "gt-bench-chain: --elems must be a positive multiple of 1024, --reps >= 1\n");
    std::exit(2);
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  const int64_t cols = 1024, rows = args.elems / cols;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> xv(static_cast<size_t>(args.elems)), bv(cols);
  for (float& v : xv) v = normal(rng);
  for (float& v : bv) v = normal(rng) * 0.1f;
  gt::Tensor x = gt::from_vector(xv, {rows, cols});
  gt::Tensor b = gt::from_vector(bv, {cols});
  auto chain = [&](const gt::Tensor& t) { return ((t * 1.5f + b).relu() * 0.5f).exp(); };
  const std::string eager_scope = "gt-bench-chain.eager";
  gt::SignalConfig no_hot_paths;
  no_hot_paths.compile = false;
  gt::register_config(eager_scope, no_hot_paths);
  auto compiled = gt::compile([&] { return chain(x); });
  enum Mode { kEager, kLoop, kCompiled };
  gt::Tensor y;
  auto run = [&](Mode m) {
    y = gt::Tensor();  // the previous result goes first, as in a loop
    if (m == kCompiled) {
      y = compiled();
    } else if (m == kLoop) {
      y = chain(x);
    } else {
      gt::signal::Scope scope(eager_scope);
      y = chain(x);
    }
    gt::synchronize();
  };
  // Warm-up: the loop's hot path is found and defined, the worker's kernel for the chain made
  // (compiled off its executor on a GPU: a pause lets it finish).
  std::vector<std::vector<float>> results;
  for (Mode m : {kEager, kLoop, kCompiled}) {
    for (int i = 0; i < 6; ++i) run(m);
    gt::bench::sleep_ms(300);
    run(m);
    results.push_back(y.to_vector<float>());
  }
  const bool same = results[0] == results[1] && results[0] == results[2];
  // Alternating blocks of `reps` calls per mode, three rounds: a loop is a loop (what the
  // dispatcher's detection sees), and drifts of a shared machine hit all three modes.
  std::vector<double> t[3];
  // --interleave: the modes call by call instead, as a program alternating between paths (each
  // stretch then follows another hot path than the one before it).
  auto timed = [&](Mode m) {
    const double t0 = now_s();
    run(m);
    t[m].push_back(now_s() - t0);
  };
  for (int round = 0; round < 3; ++round) {
    if (args.interleave) {
      for (int r = 0; r < args.reps; ++r)
        for (Mode m : {kEager, kLoop, kCompiled}) timed(m);
    } else {
      for (Mode m : {kEager, kLoop, kCompiled})
        for (int r = 0; r < args.reps; ++r) timed(m);
    }
  }
  const double eager = median(t[kEager]), loop = median(t[kLoop]), comp = median(t[kCompiled]);
  std::string device = "?";
  if (auto ws = gt::worker_stats(); !ws.empty()) device = ws[0].device;
  if (args.json) {
    std::printf("{\"elems\": %lld, \"device\": \"%s\", \"eager_ms\": %.4f, \"loop_ms\": %.4f, "
                "\"compiled_ms\": %.4f, \"eager_over_loop\": %.3f, \"eager_over_compiled\": %.3f, "
                "\"same_results\": %s}\n",
                static_cast<long long>(args.elems), device.c_str(), eager * 1e3, loop * 1e3,
                comp * 1e3, eager / loop, eager / comp, same ? "true" : "false");
  } else {
    std::printf("gt-bench-chain: ((x * 1.5 + b).relu() * 0.5).exp() on %lld float32 [%lld, %lld], "
                "worker %s, medians of 3 x %d\n",
                static_cast<long long>(args.elems), static_cast<long long>(rows),
                static_cast<long long>(cols), device.c_str(), args.reps);
    std::printf("  %-36s %10s %10s\n", "", "ms", "eager/x");
    std::printf("  %-36s %10.3f %10s\n", "GT eager (compile: false)", eager * 1e3, "1.00x");
    std::printf("  %-36s %10.3f %9.2fx\n", "GT loop (hot path replayed, fused)", loop * 1e3, eager / loop);
    std::printf("  %-36s %10.3f %9.2fx\n", "GT under gt::compile", comp * 1e3, eager / comp);
    std::printf("  results of the three: %s\n", same ? "identical" : "DIFFERENT");
  }
  return same ? 0 : 1;
}
