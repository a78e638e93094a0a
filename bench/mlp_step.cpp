// gt-bench-mlp: one MLP training step (64x784 -> 256 -> 10, ReLU, cross entropy, SGD, loss.item()
// every step) through GT (client autograd + daemons) -- eager (no hot-path detection), as a plain
// loop (its hot path found and replayed) and under gt::compile -- against the same computation
// in-process:
// the same ops, in the same order, on the CPU backend's kernels (a CpuBackend called directly,
// reshapes as views like the worker's executor). Reports medians and their ratio from one run,
// and checks that both give the same losses. Uses GT_ADDRESS when set, else the embedded default.
//
// Also reports the CPU time per GT step of the client, the dispatcher and the worker(s) (every
// thread, /proc schedstat): the daemons are found as this process's descendants (the embedded
// default) or given with --daemon-pids P,P,... (daemons started by hand).
//
// --profile eager|loop|compiled runs that variant's steps alone (after the warm-up) and prints
// their median: for a profiler (perf record -p, valgrind --tool=callgrind on this process or a
// daemon started by hand; two step counts' difference is a step's cost).
//
// Usage: gt-bench-mlp [--steps N] [--warmup W] [--lr LR] [--daemon-pids P,P,...]
//                     [--profile eager|loop|compiled]
#include <gt/gt.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "proc_cpu.h"
#include "libgtcore/shape_rules.h"
#include "workerd/cpu/cpu_backend.h"

using gt::bench::median;
using gt::bench::now_s;

namespace {

constexpr int64_t kBatch = 64, kIn = 784, kHidden = 256, kClasses = 10;

struct Args {
  int steps = 30;
  int warmup = 5;
  double lr = 0.01;
  std::vector<pid_t> daemon_pids;
  std::string profile;  // eager | loop | compiled: that variant's steps alone (no reference)
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--steps" && i + 1 < argc) a.steps = std::atoi(argv[++i]);
    else if (s == "--warmup" && i + 1 < argc) a.warmup = std::atoi(argv[++i]);
    else if (s == "--lr" && i + 1 < argc) a.lr = std::atof(argv[++i]);
    else if (s == "--daemon-pids" && i + 1 < argc) {
      for (const char* p = argv[++i]; *p;) {
        a.daemon_pids.push_back(static_cast<pid_t>(std::strtol(p, const_cast<char**>(&p), 10)));
        if (*p == ',') ++p;
        else if (*p) break;
      }
    } else if (s == "--profile" && i + 1 < argc) {
      a.profile = argv[++i];
      if (a.profile != "eager" && a.profile != "loop" && a.profile != "compiled") {
        std::fprintf(stderr, "gt-bench-mlp: --profile takes eager, loop or compiled\n");
        std::exit(2);
      }
    } else {
      std::fprintf(stderr,
                   "usage: gt-bench-mlp [--steps N] [--warmup W] [--lr LR] [--daemon-pids P,...]\n"
                   "                    [--profile eager|loop|compiled]\n");
      std::exit(2);
    }
  }
  return a;
}

// ---- the in-process reference: ops on a CpuBackend, the way the worker's executor runs them ----
namespace w = gt::worker;
using gt::OpAttrs;
using gt::OpId;
using LT = w::Tensor;

class Local {
 public:
  LT run(OpId op, std::vector<const LT*> ins, const OpAttrs& a = {}) {
    std::vector<gt::TensorMeta> metas;
    for (const LT* t : ins) metas.push_back(t->meta);
    auto m = gt::infer_meta(op, metas, a);
    check(m.status(), op);
    LT out;
    out.meta = *m;
    if (op == OpId::k_reshape) {
      out.storage = ins[0]->storage;  // a view, like the executor
    } else {
      auto st = be_.alloc(static_cast<size_t>(out.meta.nbytes()));
      check(st.status(), op);
      out.storage = std::move(*st);
      check(be_.run(w::KernelArgs{op, a, ins, out, 0}), op);
    }
    ++ops;
    return out;
  }
  void copy_into(LT& dst, const LT& src) {
    std::vector<const LT*> ins{&dst, &src};
    check(be_.run(w::KernelArgs{OpId::k_copy_, OpAttrs{}, ins, dst, 0}), OpId::k_copy_);
    ++ops;
  }
  LT upload(const std::vector<float>& v, const gt::Shape& s, gt::DType dt = gt::DType::kFloat32) {
    LT t;
    t.meta = gt::TensorMeta{s, dt};
    auto st = be_.alloc(static_cast<size_t>(t.meta.nbytes()));
    check(st.status(), OpId::k_from_host);
    t.storage = std::move(*st);
    if (dt == gt::DType::kFloat32) {
      std::memcpy(t.storage->data(), v.data(), v.size() * sizeof(float));
    } else {  // int64 labels
      auto* p = static_cast<int64_t*>(t.storage->data());
      for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<int64_t>(v[i]);
    }
    return t;
  }
  float item(const LT& t) {
    float v = 0;
    check(be_.copy_to_host(t, 0, &v, sizeof(float), 0), OpId::k_sum);
    return v;
  }
  int64_t ops = 0;

 private:
  static void check(const gt::Status& s, OpId op) {
    if (!s.is_ok()) {
      std::fprintf(stderr, "reference: %s failed: %s\n", gt::op_name(op), s.to_string().c_str());
      std::exit(1);
    }
  }
  w::CpuBackend be_;
};

OpAttrs perm2() {
  int64_t p[2] = {1, 0};
  return gt::make_permute(p);
}
OpAttrs scalar(double v) { return gt::make_binary_scalar(gt::ScalarSide::kRight, v, false); }
OpAttrs iscalar(int64_t v) {
  return gt::make_binary_scalar(gt::ScalarSide::kRight, static_cast<double>(v), true);
}

// One step, op for op what GT's client emits for the same program (forward, the autograd
// engine's gradient ops in its order, SGD's p.sub_(g, lr) = mul + sub + copy_), then loss.item().
struct RefModel {
  LT w1, b1, w2, b2, x, y;
  double lr;

  float step(Local& L) {
    // forward: logits = relu(x W1^T + b1) W2^T + b2
    LT w1t = L.run(OpId::k_permute, {&w1}, perm2());
    LT h1 = L.run(OpId::k_matmul, {&x, &w1t});
    LT h1b = L.run(OpId::k_add, {&h1, &b1});
    LT a1 = L.run(OpId::k_relu, {&h1b});
    LT w2t = L.run(OpId::k_permute, {&w2}, perm2());
    LT h2 = L.run(OpId::k_matmul, {&a1, &w2t});
    LT logits = L.run(OpId::k_add, {&h2, &b2});
    // cross_entropy = nll_loss(log_softmax(logits, 1), y): log_softmax = logits - logsumexp;
    // nll picks each row's target with gather (ignore_index -100 masked out), mean over the
    // rows that count: sum / (ignored - rows) = -sum / count.
    LT lse = L.run(OpId::k_logsumexp, {&logits}, gt::make_reduce(1, true));
    LT logp = L.run(OpId::k_sub, {&logits, &lse});
    LT ign = L.run(OpId::k_eq, {&y}, iscalar(-100));
    LT safe = L.run(OpId::k_masked_fill, {&y, &ign}, gt::make_fill_value(0));
    LT safe2 = L.run(OpId::k_reshape, {&safe}, gt::make_reshape(gt::Shape{kBatch, 1}));
    LT g = L.run(OpId::k_gather, {&logp, &safe2}, gt::make_axis(1));
    LT picked = L.run(OpId::k_reshape, {&g}, gt::make_reshape(gt::Shape{kBatch}));
    LT pm = L.run(OpId::k_masked_fill, {&picked, &ign}, gt::make_fill_value(0));
    LT cnt = L.run(OpId::k_sum, {&ign}, gt::make_reduce(gt::kAllDims, false));
    LT den = L.run(OpId::k_sub, {&cnt}, iscalar(kBatch));
    LT tot = L.run(OpId::k_sum, {&pm}, gt::make_reduce(gt::kAllDims, false));
    LT loss = L.run(OpId::k_div, {&tot, &den});

    // backward
    LT seed = L.run(OpId::k_full, {}, gt::make_full(gt::Shape{}, gt::DType::kFloat32, 1.0));
    LT g_tot = L.run(OpId::k_div, {&seed, &den});
    LT g_pm = L.run(OpId::k_expand, {&g_tot}, gt::make_reshape(gt::Shape{kBatch}));
    LT g_picked = L.run(OpId::k_masked_fill, {&g_pm, &ign}, gt::make_fill_value(0));
    LT g_g = L.run(OpId::k_reshape, {&g_picked}, gt::make_reshape(gt::Shape{kBatch, 1}));
    LT z6410 = L.run(OpId::k_zeros, {}, gt::make_shape_dtype(gt::Shape{kBatch, kClasses}, gt::DType::kFloat32));
    LT g_logp = L.run(OpId::k_scatter_add, {&z6410, &safe2, &g_g}, gt::make_axis(1));
    LT g_lse_full = L.run(OpId::k_neg, {&g_logp});
    LT g_lse = L.run(OpId::k_sum, {&g_lse_full}, gt::make_reduce(1, true));
    LT shifted = L.run(OpId::k_sub, {&logits, &lse});
    LT soft = L.run(OpId::k_exp, {&shifted});
    LT g_z2 = L.run(OpId::k_mul, {&g_lse, &soft});
    LT g_z = L.run(OpId::k_add, {&g_logp, &g_z2});
    LT g_b2 = L.run(OpId::k_sum, {&g_z}, gt::make_reduce(0, false));
    // linear's gradient (torch's): dX = G W, dW = G^T X
    LT g_a1 = L.run(OpId::k_matmul, {&g_z, &w2});
    LT g_zt = L.run(OpId::k_permute, {&g_z}, perm2());
    LT g_w2 = L.run(OpId::k_matmul, {&g_zt, &a1});
    LT pos = L.run(OpId::k_gt, {&a1}, scalar(0.0));
    LT g_h1b = L.run(OpId::k_mul, {&g_a1, &pos});
    LT g_b1 = L.run(OpId::k_sum, {&g_h1b}, gt::make_reduce(0, false));
    LT g_h1bt = L.run(OpId::k_permute, {&g_h1b}, perm2());
    LT g_w1 = L.run(OpId::k_matmul, {&g_h1bt, &x});

    // SGD: p.sub_(g, lr)
    std::pair<LT*, LT*> upd[] = {{&w1, &g_w1}, {&b1, &g_b1}, {&w2, &g_w2}, {&b2, &g_b2}};
    for (auto& [p, g] : upd) {
      LT scaled = L.run(OpId::k_mul, {g}, scalar(lr));
      LT next = L.run(OpId::k_sub, {p, &scaled});
      L.copy_into(*p, next);
    }
    return L.item(loss);
  }
};

std::vector<float> as_floats(const gt::Tensor& t) { return t.to_vector<float>(); }

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  const char* addr = std::getenv("GT_ADDRESS");
  std::printf("gt-bench-mlp: %s\n", addr ? addr : "embedded default (private dispatcher + 1 CPU worker)");

  // Data and the initial model, shared by both runs.
  gt::manual_seed(1);
  gt::Tensor x = gt::randn({kBatch, kIn});
  std::mt19937 rng(1);
  std::vector<int64_t> labels(kBatch);
  for (auto& l : labels) l = static_cast<int64_t>(rng() % kClasses);
  gt::Tensor y = gt::from_vector(labels, {kBatch}, gt::kInt64);
  gt::nn::Sequential model(gt::nn::Linear(kIn, kHidden), gt::nn::ReLU(),
                           gt::nn::Linear(kHidden, kClasses));
  std::vector<gt::Tensor> params = model->parameters();
  std::vector<std::vector<float>> init;
  for (const auto& p : params) init.push_back(as_floats(p));

  Local local;
  RefModel ref;
  ref.lr = args.lr;
  ref.w1 = local.upload(init[0], gt::Shape{kHidden, kIn});
  ref.b1 = local.upload(init[1], gt::Shape{kHidden});
  ref.w2 = local.upload(init[2], gt::Shape{kClasses, kHidden});
  ref.b2 = local.upload(init[3], gt::Shape{kClasses});
  ref.x = local.upload(as_floats(x), gt::Shape{kBatch, kIn});
  std::vector<float> lf(labels.begin(), labels.end());
  ref.y = local.upload(lf, gt::Shape{kBatch}, gt::DType::kInt64);

  // GT: the user's program, three ways (issue 11): eager (in a `compile: false` scope: no
  // hot-path detection), a plain loop (the dispatcher finds the hot path and replays it by
  // reference, the worker fuses its elementwise chains) and under gt::compile (a hot path from
  // its first call). All update the same model, so each step's loss continues the one sequence
  // the in-process reference computes.
  gt::optim::SGD opt(params, args.lr);
  auto body = [&] {
    opt.zero_grad();
    gt::Tensor loss = gt::nn::functional::cross_entropy(model(x), y);
    loss.backward();
    opt.step();
    return loss;
  };
  const std::string eager_scope = "gt-bench-mlp.eager";
  gt::SignalConfig no_hot_paths;
  no_hot_paths.compile = false;
  gt::register_config(eager_scope, no_hot_paths);
  auto compiled = gt::compile(body);
  enum Mode { kEager, kAuto, kCompiled };
  Mode mode = kEager;
  auto gt_step = [&] {
    if (mode == kCompiled) return compiled().item<float>();
    if (mode == kAuto) return body().item<float>();
    gt::Tensor loss;
    {
      gt::signal::Scope scope(eager_scope);
      loss = body();
    }
    return loss.item<float>();
  };
  std::vector<float> gt_losses, ref_losses;
  std::vector<double> gt_t, auto_t, hot_t, ref_t;
  auto ops_now = [] {
    uint64_t n = 0;
    for (const auto& s : gt::worker_stats()) n += s.ops_executed;
    return n;
  };
  if (!args.profile.empty()) {
    // One variant alone, for a profiler attached to this process or the daemons (perf,
    // callgrind: the difference of two step counts is what a step costs).
    mode = args.profile == "compiled" ? kCompiled : args.profile == "loop" ? kAuto : kEager;
    for (int i = 0; i < args.warmup; ++i) gt_step();
    for (int i = 0; i < args.steps; ++i) {
      const double t0 = now_s();
      gt_step();
      gt_t.push_back(now_s() - t0);
    }
    std::printf("gt-bench-mlp --profile %s: median %.3f ms/step over %d steps\n",
                args.profile.c_str(), median(gt_t) * 1e3, args.steps);
    return 0;
  }
  for (int i = 0; i < args.warmup; ++i) {
    gt_losses.push_back(gt_step());
    ref_losses.push_back(ref.step(local));
  }
  // Where GT's CPU time goes: this process, the dispatcher, the worker(s).
  std::vector<pid_t> daemons = args.daemon_pids;
  if (daemons.empty() && !addr) daemons = gt::bench::descendants(::getpid());
  pid_t dispatcher_pid = 0;
  std::vector<pid_t> worker_pids;
  for (pid_t p : daemons) {
    const std::string name = gt::bench::process_name(p);
    if (name == "gt-dispatcherd") dispatcher_pid = p;
    else if (name == "gt-workerd") worker_pids.push_back(p);
  }
  // CPU time of the client, the dispatcher and the workers over the GT blocks of one variant.
  struct CpuSplit {
    uint64_t client = 0, dispatcher = 0, workers = 0;
  };
  auto cpu_now = [&] {
    CpuSplit c{gt::bench::process_cpu_ns(::getpid()),
               dispatcher_pid ? gt::bench::process_cpu_ns(dispatcher_pid) : 0, 0};
    for (pid_t p : worker_pids) c.workers += gt::bench::process_cpu_ns(p);
    return c;
  };
  CpuSplit cpu_eager, cpu_auto, cpu_hot;
  // n GT steps in mode `m`: their times into `times`, their CPU into `into`.
  // Between blocks a short pause: the compute pools' helpers (the worker's and the in-process
  // reference's, workerd/cpu/compute_pool.h) give their cores away within ~2 ms of their last
  // job, so neither side runs beside the other's. (It was 150 ms while OpenBLAS's own threads
  // spun ~0.1 s after every GEMM; then every block started cold -- daemons asleep, caches
  // cold -- and its first steps, ~1.4x a warm step here, weighed on 25-step blocks.)
  auto blas_quiet = [] { std::this_thread::sleep_for(std::chrono::milliseconds(10)); };
  auto gt_block = [&](int n, Mode m, std::vector<double>& times, CpuSplit& into) {
    mode = m;
    blas_quiet();
    const CpuSplit before = cpu_now();
    for (int i = 0; i < n; ++i) {
      double t0 = now_s();
      gt_losses.push_back(gt_step());
      times.push_back(now_s() - t0);
    }
    const CpuSplit after = cpu_now();
    into.client += after.client - before.client;
    into.dispatcher += after.dispatcher - before.dispatcher;
    into.workers += after.workers - before.workers;
  };
  // Alternating blocks of steps, so both see the same load on a shared machine (blocks rather
  // than single steps, each after a pause: one side's helper threads still spinning would slow
  // the other's). A block is long enough to reach the steady state of a training loop.
  const int block = 100;
  uint64_t gt_ops_total = 0;
  int64_t ref_ops_total = 0;
  for (int done = 0; done < args.steps; done += block) {
    const int n = std::min(block, args.steps - done);
    const uint64_t ops0 = ops_now();
    gt_block(n, kEager, gt_t, cpu_eager);
    gt_ops_total += ops_now() - ops0;
    const int64_t lops0 = local.ops;
    blas_quiet();
    for (int i = 0; i < n; ++i) {
      double t0 = now_s();
      ref_losses.push_back(ref.step(local));
      ref_t.push_back(now_s() - t0);
    }
    ref_ops_total += local.ops - lops0;
    gt_block(n, kAuto, auto_t, cpu_auto);
    gt_block(n, kCompiled, hot_t, cpu_hot);
    // (untimed: the reference keeps up with the model's steps, for the loss check)
    for (int i = 0; i < 2 * n; ++i) ref_losses.push_back(ref.step(local));
  }
  const double gt_ops = static_cast<double>(gt_ops_total) / args.steps;
  const double ref_ops = static_cast<double>(ref_ops_total) / args.steps;

  double max_diff = 0;
  for (size_t i = 0; i < gt_losses.size(); ++i)
    max_diff = std::max(max_diff, static_cast<double>(std::abs(gt_losses[i] - ref_losses[i])));
  const double g = median(gt_t), l = median(ref_t), a = median(auto_t), h = median(hot_t);
  std::printf("MLP step 64x784 -> 256 -> 10, SGD, loss.item() every step (%d steps each, in alternating blocks, after %d warm-up):\n",
              args.steps, args.warmup);
  std::printf("  GT (client autograd + daemons): median %.3f ms/step, %.1f ops/step\n", g * 1e3, gt_ops);
  std::printf("  in-process CpuBackend, same ops: median %.3f ms/step, %.1f ops/step\n", l * 1e3, ref_ops);
  std::printf("  GT plain loop (hot path found):   median %.3f ms/step\n", a * 1e3);
  std::printf("  GT under gt::compile (hot path):  median %.3f ms/step\n", h * 1e3);
  std::printf("  ratio GT/in-process %.2fx (target <= 1.3x), hot/eager %.2fx (target <= 0.75x); "
              "loss %.4f -> %.4f, max |GT - in-process| loss diff %.2e\n",
              g / l, h / g, gt_losses.front(), gt_losses.back(), max_diff);
  const double per_step_us = 1e-3 / args.steps;
  auto print_cpu = [&](const char* what, const CpuSplit& c) {
    std::printf("  CPU per %s step (mean, all threads): client %.0f us, dispatcher %.0f us, "
                "worker%s %.0f us\n",
                what, static_cast<double>(c.client) * per_step_us,
                static_cast<double>(c.dispatcher) * per_step_us, worker_pids.size() > 1 ? "s" : "",
                static_cast<double>(c.workers) * per_step_us);
  };
  if (dispatcher_pid || !worker_pids.empty()) {
    print_cpu("GT", cpu_eager);
    print_cpu("plain-loop GT", cpu_auto);
    print_cpu("hot GT", cpu_hot);
  } else {
    std::printf("  CPU per GT step: client %.0f us (daemons unknown: pass --daemon-pids)\n",
                static_cast<double>(cpu_eager.client) * per_step_us);
  }
  return max_diff < 1e-3 ? 0 : 1;
}
