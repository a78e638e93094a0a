// gt-test-client: a client program the multi-client tests run as separate processes
// (GT_ADDRESS tells it where the dispatcher is).
//
//   gt-test-client verify SEED ITERS   computes with GT and checks every result on the host
//   gt-test-client hold N              holds N tensors, prints "ready", then streams ops forever
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

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 4 && std::string(argv[1]) == "verify")
    return verify(std::strtoull(argv[2], nullptr, 10), std::atoi(argv[3]));
  if (argc >= 3 && std::string(argv[1]) == "hold") return hold(std::atoi(argv[2]));
  std::fprintf(stderr, "usage: gt-test-client verify SEED ITERS | hold N\n");
  return 2;
}
