// gt-bench-dp: a data-parallel MLP training step (64x784 -> 256 -> 10, SGD, loss.item() every
// step) on 2 CPU workers vs the same step on 1, and the data-parallel step under gt::compile (its
// hot path replayed on both workers, their exchanges included: issue 11), from one run, plus the
// bytes moved between workers per step against the minimum this sharding plan needs. Uses
// GT_ADDRESS when set (it must have >= 2 workers), else an embedded default with 2 workers.
//
// Usage: gt-bench-dp [STEPS] [--json]      (STEPS per mode, default 30, in 3 alternating blocks)
//
// Plan: the batch is split by rows over the workers (signal "data"); parameters live whole on
// the session's home worker. Each step every other worker needs the parameters (P bytes each)
// and returns its Partial gradient sums (P bytes each): minimum 2 * P * (workers - 1).
#include <gt/gt.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"
#include "libgtclient/session.h"

using gt::bench::median;
using gt::bench::now_s;

namespace {

struct Step {
  gt::nn::Linear l1{784, 256}, l2{256, 10};
  std::vector<gt::Tensor> params;
  gt::optim::SGD opt;
  gt::Tensor x, labels;
  Step(gt::Tensor x_, gt::Tensor labels_)
      : params(collect()), opt(params, gt::optim::SGDOptions(0.01)), x(x_), labels(labels_) {}
  std::vector<gt::Tensor> collect() {
    std::vector<gt::Tensor> p = l1->parameters();
    for (auto& t : l2->parameters()) p.push_back(t);
    return p;
  }
  gt::Tensor step() {
    opt.zero_grad();
    gt::Tensor loss = gt::nn::functional::cross_entropy(l2(l1(x).relu()), labels);
    loss.backward();
    opt.step();
    return loss;
  }
  float run() { return step().item<float>(); }
};

uint64_t peer_bytes() {
  uint64_t b = 0;
  for (const auto& s : gt::worker_stats()) b += s.peer_bytes_received;
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 30;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) json = true;
    else if (std::atoi(argv[i]) > 0) steps = std::atoi(argv[i]);
    else {
      std::fprintf(stderr, "usage: gt-bench-dp [STEPS] [--json]\n");
      return 2;
    }
  }
  if (!std::getenv("GT_ADDRESS")) gt::set_embedded_workers(2);
  gt::register_config("data", gt::SignalConfig{gt::ShardConfig{0, {}, false}, "data", false});
  // Eager data parallel: no hot-path replay (a stretch that happens to arrive in one frame
  // would otherwise be replayed now and then).
  gt::register_config("gt-bench-dp.eager", gt::SignalConfig{std::nullopt, "", false});
  gt::manual_seed(1);
  gt::Tensor x = gt::randn({64, 784});
  std::vector<int64_t> lv(64);
  for (int i = 0; i < 64; ++i) lv[i] = i % 10;
  gt::Tensor labels = gt::from_vector(lv, {64});
  size_t workers = gt::worker_stats().size();
  for (int i = 0; i < 200 && workers < 2; ++i) {  // the second embedded worker may still join
    gt::bench::sleep_ms(10);
    workers = gt::worker_stats().size();
  }
  if (workers < 2) {
    std::fprintf(stderr, "gt-bench-dp: needs at least 2 workers, found %zu\n", workers);
    return 2;
  }
  gt::Tensor xs;
  {
    gt::signal::Scope s("data");
    xs = x * 1.0;  // the batch, split by rows
  }
  gt::manual_seed(2);
  Step single(x, labels);
  gt::manual_seed(2);
  Step dp(xs, labels);
  gt::manual_seed(2);
  Step hot(xs, labels);  // the same model again, trained under gt::compile
  auto compiled = gt::compile([&] { return hot.step(); });
  auto dp_eager = [&] {
    gt::Tensor loss;
    {
      gt::signal::Scope scope("gt-bench-dp.eager");
      loss = dp.step();
    }
    return loss.item<float>();
  };
  int64_t param_bytes = 0;
  for (const auto& p : single.params) param_bytes += p.numel() * 4;
  // Warm up each, then time them in alternating blocks so load changes hit all alike.
  float l1 = single.run(), l2 = dp_eager(), l3 = compiled().item<float>();
  bool bitwise = l2 == l3;  // the compiled model follows the eager one step by step
  std::vector<double> t1, t2, t3;
  uint64_t peer = 0;
  for (int block = 0; block < 3; ++block) {
    for (int i = 0; i < steps / 3; ++i) {
      double t0 = now_s();
      l1 = single.run();
      t1.push_back(now_s() - t0);
    }
    uint64_t p0 = peer_bytes();
    for (int i = 0; i < steps / 3; ++i) {
      double t0 = now_s();
      l2 = dp_eager();
      t2.push_back(now_s() - t0);
    }
    peer += peer_bytes() - p0;
    for (int i = 0; i < steps / 3; ++i) {
      double t0 = now_s();
      l3 = compiled().item<float>();
      t3.push_back(now_s() - t0);
    }
    bitwise = bitwise && l2 == l3;
  }
  const double per_step = static_cast<double>(peer) / static_cast<double>(t2.size());
  const double minimum = 2.0 * static_cast<double>(param_bytes) * static_cast<double>(workers - 1);
  const double m1 = median(t1), m2 = median(t2), m3 = median(t3);
  if (json) {
    std::printf("{\"workers\": %zu, \"single_ms\": %.4f, \"dp_ms\": %.4f, \"dp_compiled_ms\": %.4f, "
                "\"dp_over_single\": %.3f, \"compiled_over_eager\": %.3f, "
                "\"peer_bytes_per_step\": %.0f, \"plan_minimum_bytes\": %.0f, "
                "\"compiled_losses_bitwise\": %s}\n",
                workers, m1 * 1e3, m2 * 1e3, m3 * 1e3, m2 / m1, m3 / m2, per_step, minimum,
                bitwise ? "true" : "false");
  } else {
    std::printf("gt-bench-dp: MLP 64x784->256->10 SGD step, loss.item() each step (%zu workers)\n",
                workers);
    std::printf("  1 worker:          median %.2f ms/step (loss %.4f)\n", m1 * 1e3, l1);
    std::printf("  %zu workers (data): median %.2f ms/step (loss %.4f); ratio %.2fx of 1 worker\n",
                workers, m2 * 1e3, l2, m2 / m1);
    std::printf("  %zu workers, gt::compile (hot path on each): median %.2f ms/step (loss %.4f); "
                "ratio %.2fx of eager; losses %s\n",
                workers, m3 * 1e3, l3, m3 / m2, bitwise ? "bitwise eager's" : "DIFFERENT");
    std::printf("  bytes between workers per step: %.0f; plan minimum %.0f (2 x %lld parameter bytes "
                "x %zu other workers); ratio %.2fx\n",
                per_step, minimum, static_cast<long long>(param_bytes), workers - 1, per_step / minimum);
  }
  // Data parallel must train exactly like one worker (same seed, same math up to rounding), and
  // the compiled step exactly like the eager one.
  if (!(std::fabs(l1 - l2) <= 1e-4f * (1.0f + std::fabs(l1)))) {
    std::fprintf(stderr, "gt-bench-dp: losses differ: 1 worker %.6f, %zu workers %.6f\n", l1,
                 workers, l2);
    return 1;
  }
  if (!bitwise) {
    std::fprintf(stderr, "gt-bench-dp: the compiled step's losses differ from eager's: %.9g vs %.9g\n",
                 l3, l2);
    return 1;
  }
  return 0;
}
