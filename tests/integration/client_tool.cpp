// gt-test-client: a client program the multi-client tests run as separate processes
// (GT_ADDRESS tells it where the dispatcher is).
//
//   gt-test-client verify SEED ITERS   computes with GT and checks every result on the host
//   gt-test-client hold N              holds N tensors, prints "ready", then streams ops forever
//   gt-test-client temps N             N iterations of `t = zeros(1024²) + 1` (4 MiB temporaries)
//   gt-test-client dp STEPS [--no-leak-check]
//                                      data-parallel MLP steps under a "data" signal sharding the
//                                      batch over every worker; exits 1 if worker tensors/bytes
//                                      grow after warm-up (prints them per step block)
//   gt-test-client gather_quota        a 16 MiB batch sharded over the workers, then used
//                                      replicated (gathered on every worker): prints "refused:
//                                      <why>" or "accepted"
//   gt-test-client errors              one failure of each kind; prints "<case> <code> <call|sync>"
//                                      per case from gt::Error::code() / deferred() (run it with
//                                      a worker capped at a few MiB)
//   gt-test-client connect_error       the same for the first op when GT_ADDRESS is unreachable
//   gt-test-client quota_error         the same for 4 MiB of zeros (run as a user with less quota)
#include <gt/gt.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

int verify(uint64_t seed, int iters) {
  gt::manual_seed(seed);
  for (int it = 0; it < iters; ++it) {
    // Data unique to this process and iteration: mixing up sessions would show.
    std::vector<float> xs(64 * 32), ws(32 * 16);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.01f * i + seed + it);
    for (size_t i = 0; i < ws.size(); ++i) ws[i] = std::cos(0.02f * i - seed * 0.5f + it);
    gt::Tensor x = gt::from_vector(xs, {64, 32}), w = gt::from_vector(ws, {32, 16});
    gt::Tensor y = (x.matmul(w)).relu() + 1.0;
    gt::Tensor s = y.sum(1);
    std::vector<float> got = s.to_vector<float>();
    for (int r = 0; r < 64; ++r) {
      double acc = 0;
      for (int c = 0; c < 16; ++c) {
        double v = 0;
        for (int k = 0; k < 32; ++k) v += double(xs[r * 32 + k]) * ws[k * 16 + c];
        acc += (v > 0 ? v : 0) + 1.0;
      }
      if (std::fabs(acc - got[r]) > 1e-3 * (1 + std::fabs(acc))) {
        std::fprintf(stderr, "seed %llu iter %d row %d: got %f want %f\n",
                     static_cast<unsigned long long>(seed), it, r, got[r], acc);
        return 1;
      }
    }
    // Random tensors depend only on (seed, counter, index): same seed, same numbers.
    gt::manual_seed(seed + it);
    std::vector<float> r1 = gt::randn({16}).to_vector<float>();
    gt::manual_seed(seed + it);
    std::vector<float> r2 = gt::randn({16}).to_vector<float>();
    if (r1 != r2) {
      std::fprintf(stderr, "randn is not deterministic for seed %llu\n",
                   static_cast<unsigned long long>(seed));
      return 1;
    }
  }
  gt::synchronize();
  std::printf("ok\n");
  return 0;
}

int hold(int n) {
  std::vector<gt::Tensor> held;
  for (int i = 0; i < n; ++i) held.push_back(gt::ones({1000}));
  gt::synchronize();
  std::printf("ready\n");
  std::fflush(stdout);
  gt::Tensor a = gt::ones({4, 4}), b = gt::ones({4, 4}), c;
  for (;;) {  // mid-stream until killed
    for (int i = 0; i < 1000; ++i) c = a + b;
    gt::synchronize();
  }
}

int temps(int n) {
  // A plain loop of temporaries: a few tensors live at a time however fast the client runs.
  for (int i = 0; i < n; ++i) {
    auto t = gt::zeros({1024, 1024}) + 1.0f;
    if (i % 500 == 499 || i == n - 1) {
      float s = t.sum().item<float>();
      if (s != 1024.0f * 1024.0f) {
        std::fprintf(stderr, "iteration %d: sum %f, want %f\n", i, s, 1024.0 * 1024.0);
        return 1;
      }
    }
  }
  gt::synchronize();
  std::printf("ok\n");
  return 0;
}

std::pair<uint64_t, uint64_t> worker_totals() {
  uint64_t tensors = 0, bytes = 0;
  for (const auto& w : gt::worker_stats()) {
    tensors += w.tensors;
    bytes += w.bytes;
  }
  return {tensors, bytes};
}

int data_parallel(int steps, bool leak_check) {
  gt::register_config("data", gt::SignalConfig{gt::ShardConfig{0, {}, false}, "", false});
  gt::manual_seed(5);
  gt::nn::Linear l1(32, 64), l2(64, 8);
  std::vector<gt::Tensor> params = l1->parameters();
  for (auto& p : l2->parameters()) params.push_back(p);
  gt::optim::SGD opt(params, gt::optim::SGDOptions(0.05));
  std::vector<int64_t> lv(64);
  for (int i = 0; i < 64; ++i) lv[i] = i % 8;
  gt::Tensor labels = gt::from_vector(lv, {64});
  gt::Tensor x;
  {
    gt::signal::Scope s("data");
    x = gt::randn({64, 32});  // the batch, sharded over the workers
  }
  std::pair<uint64_t, uint64_t> warm{0, 0};
  float first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    opt.zero_grad();
    gt::Tensor loss;
    {
      gt::signal::Scope s("data");
      loss = gt::nn::functional::cross_entropy(l2(l1(x).relu()), labels);
      loss.backward();
    }
    opt.step();
    last = loss.item<float>();
    if (step == 0) first = last;
    if (leak_check && step == 9) warm = worker_totals();
    if (leak_check && step > 9 && step % 50 == 49) {
      auto now = worker_totals();
      std::printf("step %d: %llu tensors, %llu bytes on the workers (after warm-up: %llu, %llu)\n",
                  step + 1, static_cast<unsigned long long>(now.first),
                  static_cast<unsigned long long>(now.second),
                  static_cast<unsigned long long>(warm.first),
                  static_cast<unsigned long long>(warm.second));
      std::fflush(stdout);
      if (now != warm) return 1;
    }
  }
  if (!(last < first)) {
    std::fprintf(stderr, "loss did not fall: %f -> %f\n", first, last);
    return 1;
  }
  std::printf("ok\n");
  return 0;
}

int gather_quota() {
  gt::register_config("data", gt::SignalConfig{gt::ShardConfig{0, {}, false}, "", false});
  gt::register_config("everywhere", gt::SignalConfig{gt::ShardConfig{0, {}, true}, "", false});
  gt::Tensor x;
  {
    gt::signal::Scope s("data");
    x = gt::ones({2048, 2048});
  }
  gt::synchronize();
  try {
    gt::signal::Scope s("everywhere");
    gt::Tensor y = x * 2.0;  // every worker gathers x and holds a whole copy of y
    gt::synchronize();
    std::printf("accepted\n");
  } catch (const gt::Error& e) {
    std::printf("refused: %s\n", e.what());
  }
  std::fflush(stdout);
  return 0;
}

// Runs `f`, which must throw gt::Error, and prints how it was classified.
template <class F>
void classify(const char* name, F&& f) {
  try {
    f();
    std::printf("%s none -\n", name);
  } catch (const gt::Error& e) {
    std::printf("%s %s %s\n", name, gt::code_name(e.code()), e.deferred() ? "sync" : "call");
  }
}

int errors() {
  gt::Tensor a = gt::ones({2, 3}), b = gt::ones({4, 5});
  classify("shape", [&] { (void)a.matmul(b); });
  classify("undefined", [] { (void)gt::Tensor().sum(); });
  classify("oom", [] { gt::zeros({1 << 20, 64}).sum().item<float>(); });  // 256 MiB
  classify("index", [&] {
    gt::Tensor idx = gt::from_vector(std::vector<int64_t>{0, 7});
    a.index_select(1, idx).sum().item<float>();
  });
  classify("index_sync", [&] {
    gt::Tensor idx = gt::from_vector(std::vector<int64_t>{9});
    (void)a.index_select(0, idx);
    gt::synchronize();
  });
  classify("after", [&] { a.sum().item<float>(); });  // the session still works
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "errors") return errors();
  if (argc >= 2 && std::string(argv[1]) == "quota_error") {
    classify("quota", [] { gt::zeros({1024, 1024}).sum().item<float>(); });  // 4 MiB
    return 0;
  }
  if (argc >= 2 && std::string(argv[1]) == "connect_error") {
    classify("connect", [] { gt::zeros({1}).sum().item<float>(); });
    return 0;
  }
  if (argc >= 2 && std::string(argv[1]) == "gather_quota") return gather_quota();
  if (argc >= 3 && std::string(argv[1]) == "temps") return temps(std::atoi(argv[2]));
  if (argc >= 3 && std::string(argv[1]) == "dp")
    return data_parallel(std::atoi(argv[2]), !(argc >= 4 && std::string(argv[3]) == "--no-leak-check"));
  if (argc >= 4 && std::string(argv[1]) == "verify")
    return verify(std::strtoull(argv[2], nullptr, 10), std::atoi(argv[3]));
  if (argc >= 3 && std::string(argv[1]) == "hold") return hold(std::atoi(argv[2]));
  std::fprintf(stderr, "usage: gt-test-client verify SEED ITERS | hold N | temps N | dp STEPS | gather_quota | errors\n");
  return 2;
}
