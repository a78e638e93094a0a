// gt-bench-cpu-kernels: the CPU worker's kernels one by one, in-process on a CpuBackend (no
// daemons: the kernel is what is timed), on a [256, 784] float32 tensor (an MLP layer's weight:
// SGD and gradients run over it) of standard-normal values, a mask taken from the values (x <= 0,
// as a relu's gradient selects) and a row bias. Each op's median time is reported beside the
// same run's scalar multiply (one read and one write of the tensor: the memory-bound floor) as a
// ratio: an elementwise op far above 1-3x of it loses its time to something other than memory
// (a branch on the data, a libm call per element, one thread). The selections are the cases of
// 2026-12-06 (where / masked_fill / clamp branched on the data: ~40x the floor).
// Then two fused chains a hot path runs (Backend::run_fused) against their eager kernels (one
// full tensor each), results checked bitwise: issue 11's y = ((x * 1.5 + b).relu() * 0.5).exp()
// with b a bias row on 16 M float32 [16384, 1024], an SGD update w - 0.01 * g on the
// [256, 784] weight, and a mixed-precision chain from and to float16 (its casts fused).
//
// Usage: gt-bench-cpu-kernels [--reps N] [--json]     (OPENBLAS_NUM_THREADS=1 unless set)
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "libgtcore/op_attrs.h"
#include "libgtcore/shape_rules.h"
#include "workerd/cpu/cpu_backend.h"
#include "workerd/fusion.h"

namespace {

namespace w = gt::worker;
using gt::OpAttrs;
using gt::OpId;
using LT = w::Tensor;

[[noreturn]] void fail(const gt::Status& st, const char* what) {
  std::fprintf(stderr, "gt-bench-cpu-kernels: %s: %s\n", what, st.message().c_str());
  std::exit(1);
}

struct Bench {
  w::CpuBackend be;

  LT make(const gt::TensorMeta& m) {
    LT t;
    t.meta = m;
    auto st = be.alloc(static_cast<size_t>(m.nbytes()));
    if (!st.is_ok()) fail(st.status(), "alloc");
    t.storage = std::move(*st);
    return t;
  }
  LT run(OpId op, std::vector<const LT*> ins, const OpAttrs& a = {}) {
    std::vector<gt::TensorMeta> metas;
    for (const LT* t : ins) metas.push_back(t->meta);
    auto m = gt::infer_meta(op, metas, a);
    if (!m.is_ok()) fail(m.status(), gt::op_name(op));
    LT out = make(*m);
    if (auto st = be.run(w::KernelArgs{op, a, ins, out, 0}); !st.is_ok()) fail(st, gt::op_name(op));
    return out;
  }
};

}  // namespace

int main(int argc, char** argv) {
  // OpenBLAS starts its thread pool when it loads, and its idle threads yield-spin beside the
  // kernels timed here (none of which calls BLAS): with 2 cores that made the threaded kernels'
  // times swing 2x from run to run. One BLAS thread, set before it loads: the process starts
  // itself again with the variable set (an operator's own setting is kept).
  if (!std::getenv("OPENBLAS_NUM_THREADS")) {
    ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
    ::execv("/proc/self/exe", argv);  // (on failure: on as we are)
  }
  int reps = 21;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--json")) json = true;
    else {
      std::fprintf(stderr, "usage: gt-bench-cpu-kernels [--reps N] [--json]\n");
      return 2;
    }
  }
  Bench b;
  const gt::Shape shape{256, 784};
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  auto filled = [&](const gt::Shape& s) {
    LT t = b.make(gt::TensorMeta{s, gt::DType::kFloat32});
    auto* p = static_cast<float*>(t.storage->data());
    for (int64_t i = 0; i < s.numel(); ++i) p[i] = normal(rng);
    return t;
  };
  const LT x = filled(shape), y = filled(shape), bias = filled(gt::Shape{784});
  const LT zero = b.run(OpId::k_zeros, {}, gt::make_shape_dtype(gt::Shape{}, gt::DType::kFloat32));
  const LT mask = b.run(OpId::k_le, {&x, &zero});
  const LT ax = b.run(OpId::k_abs, {&x});
  const LT hx = b.run(OpId::k_cast, {&x}, gt::make_cast(gt::DType::kFloat16));
  struct Row {
    const char* name;
    OpId op;
    std::vector<const LT*> ins;
    OpAttrs attrs;
  };
  const std::vector<Row> rows = {
      {"mul scalar (the floor)", OpId::k_mul, {&x}, gt::make_binary_scalar(gt::ScalarSide::kRight, 1.5, false)},
      {"add same shape", OpId::k_add, {&x, &y}, {}},
      {"add row bias", OpId::k_add, {&x, &bias}, {}},
      {"relu", OpId::k_relu, {&x}, {}},
      {"le 0 (a mask)", OpId::k_le, {&x, &zero}, {}},
      {"where(mask, x, y)", OpId::k_where, {&mask, &x, &y}, {}},
      {"where(mask, 0, y)", OpId::k_where, {&mask, &zero, &y}, {}},
      {"masked_fill(mask, 0)", OpId::k_masked_fill, {&x, &mask}, gt::make_fill_value(0.0)},
      {"clamp(-0.5, 0.5)", OpId::k_clamp, {&x}, gt::make_clamp(-0.5, 0.5, false)},
      {"maximum", OpId::k_maximum, {&x, &y}, {}},
      {"exp", OpId::k_exp, {&x}, {}},
      {"tanh", OpId::k_tanh, {&x}, {}},
      {"sigmoid", OpId::k_sigmoid, {&x}, {}},
      {"gelu", OpId::k_gelu, {&x}, {}},
      {"silu", OpId::k_silu, {&x}, {}},
      {"erf", OpId::k_erf, {&x}, {}},
      {"abs", OpId::k_abs, {&x}, {}},
      {"log of |x|", OpId::k_log, {&ax}, {}},
      {"sqrt of |x|", OpId::k_sqrt, {&ax}, {}},
      {"pow 2", OpId::k_pow, {&x}, gt::make_binary_scalar(gt::ScalarSide::kRight, 2.0, false)},
      {"cast to bfloat16", OpId::k_cast, {&x}, gt::make_cast(gt::DType::kBFloat16)},
      {"cast to int64", OpId::k_cast, {&x}, gt::make_cast(gt::DType::kInt64)},
      {"cast to float16", OpId::k_cast, {&x}, gt::make_cast(gt::DType::kFloat16)},
      {"float16 to float32", OpId::k_cast, {&hx}, gt::make_cast(gt::DType::kFloat32)},
      {"sum dim 0", OpId::k_sum, {&x}, gt::make_reduce(0, false)},
      {"argmax dim 1", OpId::k_argmax, {&x}, gt::make_reduce(1, false)},
      {"cumsum dim 1", OpId::k_cumsum, {&x}, gt::make_axis(1)},
      {"sum dim 1", OpId::k_sum, {&x}, gt::make_reduce(1, false)},
      {"max dim 1", OpId::k_max, {&x}, gt::make_reduce(1, false)},
      {"logsumexp dim 1", OpId::k_logsumexp, {&x}, gt::make_reduce(1, true)},
  };
  std::vector<double> med;
  for (const Row& r : rows) {
    for (int i = 0; i < 3; ++i) b.run(r.op, r.ins, r.attrs);  // warm: pages, caches
    med.push_back(gt::bench::median(gt::bench::time_runs(reps, [&] { b.run(r.op, r.ins, r.attrs); })));
  }
  const double floor_s = med[0];

  // Fused chains against their eager kernels (each temporary released after its reader, as the
  // executor frees it), alternating, each result checked bitwise against eager's.
  auto scalar = [](double v) { return gt::make_binary_scalar(gt::ScalarSide::kRight, v, false); };
  struct Chain {
    const char* name;  // also the JSON key's prefix
    const LT* head;
    std::vector<w::FusedStep> steps;
    std::function<LT()> eager;
    gt::DType out_dtype = gt::DType::kFloat32;
    double eager_ms = 0, fused_ms = 0;
    bool equal = false;
  };
  // issue 11's chain on 16 M float32 (b a bias row), and an SGD update w - lr * g of an MLP
  // layer's weight (a hot training step's two-op chain).
  const LT cx = filled(gt::Shape{16384, 1024}), cb = filled(gt::Shape{1024});
  const LT& g = y;
  std::vector<Chain> chains;
  chains.push_back(Chain{"chain", &cx,
                         {{OpId::k_mul, w::FusedArg::kScalar, false, 1.5f},
                          {OpId::k_add, w::FusedArg::kTensor, false, 0.0f, &cb},
                          {OpId::k_relu},
                          {OpId::k_mul, w::FusedArg::kScalar, false, 0.5f},
                          {OpId::k_exp}},
                         [&] {
                           LT t = b.run(OpId::k_mul, {&cx}, scalar(1.5));
                           t = b.run(OpId::k_add, {&t, &cb});
                           t = b.run(OpId::k_relu, {&t});
                           t = b.run(OpId::k_mul, {&t}, scalar(0.5));
                           return b.run(OpId::k_exp, {&t});
                         }});
  chains.push_back(Chain{"sgd_update", &g,
                         {{OpId::k_mul, w::FusedArg::kScalar, false, 0.01f},
                          {OpId::k_sub, w::FusedArg::kTensor, true, 0.0f, &x}},
                         [&] {
                           LT t = b.run(OpId::k_mul, {&g}, scalar(0.01));
                           return b.run(OpId::k_sub, {&x, &t});
                         }});
  // Mixed precision: a float16 tensor computed in float32, stored back as float16 (the casts
  // fused: the head converted as it is read, the value as it is written).
  const LT hcx = b.run(OpId::k_cast, {&cx}, gt::make_cast(gt::DType::kFloat16));
  chains.push_back(Chain{"cast_chain", &hcx,
                         {{OpId::k_mul, w::FusedArg::kScalar, false, 1.5f},
                          {OpId::k_add, w::FusedArg::kTensor, false, 0.0f, &cb},
                          {OpId::k_relu}},
                         [&] {
                           LT t = b.run(OpId::k_cast, {&hcx}, gt::make_cast(gt::DType::kFloat32));
                           t = b.run(OpId::k_mul, {&t}, scalar(1.5));
                           t = b.run(OpId::k_add, {&t, &cb});
                           t = b.run(OpId::k_relu, {&t});
                           return b.run(OpId::k_cast, {&t}, gt::make_cast(gt::DType::kFloat16));
                         },
                         gt::DType::kFloat16});
  for (Chain& c : chains) {
    auto fused = [&] {
      LT out = b.make(gt::TensorMeta{c.head->meta.shape, c.out_dtype});
      if (auto st = b.be.run_fused(w::FusedArgs{*c.head, c.steps, out, 0}); !st.is_ok())
        fail(st, c.name);
      return out;
    };
    {
      const LT e = c.eager(), f = fused();
      c.equal = std::memcmp(e.storage->data(), f.storage->data(),
                            static_cast<size_t>(e.meta.nbytes())) == 0;
    }
    // The big chain's passes take milliseconds: fewer of them.
    const int n = c.head->numel() > (int64_t{1} << 22) ? std::max(3, reps / 4) : reps;
    std::vector<double> et, ft;
    for (int i = 0; i < n; ++i) {
      et.push_back(gt::bench::time_runs(1, [&] { c.eager(); })[0]);
      ft.push_back(gt::bench::time_runs(1, [&] { fused(); })[0]);
    }
    c.eager_ms = gt::bench::median(et) * 1e3;
    c.fused_ms = gt::bench::median(ft) * 1e3;
  }
  bool chains_equal = true;
  for (const Chain& c : chains) chains_equal = chains_equal && c.equal;

  if (json) {
    std::printf("{\"shape\": \"[256, 784] float32\", \"reps\": %d", reps);
    for (size_t i = 0; i < rows.size(); ++i) {
      std::string key = rows[i].name;
      for (char& c : key)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      std::printf(", \"%s_us\": %.1f, \"%s_over_floor\": %.2f", key.c_str(), med[i] * 1e6, key.c_str(),
                  med[i] / floor_s);
    }
    for (const Chain& c : chains)
      std::printf(", \"%s_eager_ms\": %.4f, \"%s_fused_ms\": %.4f, \"%s_eager_over_fused\": %.2f, "
                  "\"%s_bitwise_equal\": %s",
                  c.name, c.eager_ms, c.name, c.fused_ms, c.name, c.eager_ms / c.fused_ms, c.name,
                  c.equal ? "true" : "false");
    std::printf("}\n");
    return chains_equal ? 0 : 1;
  }
  std::printf("gt-bench-cpu-kernels: [256, 784] float32, median of %d, in-process CpuBackend\n", reps);
  std::printf("| %-24s | %10s | %10s |\n", "op", "us", "/ floor");
  for (size_t i = 0; i < rows.size(); ++i)
    std::printf("| %-24s | %10.1f | %10.2f |\n", rows[i].name, med[i] * 1e6, med[i] / floor_s);
  std::printf("\nfused chains (median of alternating runs, ms):\n");
  std::printf("| %-62s | %8s | %8s | %7s |\n", "chain", "eager", "fused", "e / f");
  const char* what[] = {"((x * 1.5 + b).relu() * 0.5).exp(), [16384, 1024] (5 ops)",
                        "w - 0.01 * g, [256, 784] (an SGD update, 2 ops)",
                        "(h.float() * 1.5 + b).relu().half(), h float16 [16384, 1024]"};
  for (size_t i = 0; i < chains.size(); ++i)
    std::printf("| %-62s | %8.3f | %8.3f | %6.2fx |%s\n", what[i], chains[i].eager_ms,
                chains[i].fused_ms, chains[i].eager_ms / chains[i].fused_ms,
                chains[i].equal ? "" : " RESULTS DIFFER");
  return chains_equal ? 0 : 1;
}
