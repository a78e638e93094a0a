// Trains a small MLP on a synthetic 3-class spiral (fixed seed) through GT: the model, the
// gradients and the Adam updates all run on the GT workers; the client only builds the data and
// reads the loss/accuracy every few steps.
//
//   train_mlp [--steps N]      (GT_ADDRESS selects a dispatcher; else the embedded default)
//
// Prints progress lines and, last, "final accuracy: A" (exit status 0 when A >= 0.95).
#include <gt/gt.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace F = gt::nn::functional;

int main(int argc, char** argv) {
  int steps = 400;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--steps" && i + 1 < argc) steps = std::atoi(argv[++i]);

  // The data: 3 arms of 100 points each, with a little noise.
  const int classes = 3, per_class = 100, n = classes * per_class;
  std::mt19937 rng(0);
  std::normal_distribution<float> noise(0.0f, 0.12f);
  std::vector<float> xs;
  std::vector<int64_t> ys;
  for (int c = 0; c < classes; ++c)
    for (int i = 0; i < per_class; ++i) {
      float r = static_cast<float>(i) / per_class;
      float t = static_cast<float>(c) * 4.0f + 4.0f * r + noise(rng);
      xs.push_back(r * std::sin(t));
      xs.push_back(r * std::cos(t));
      ys.push_back(c);
    }
  gt::Tensor x = gt::from_vector(xs, {n, 2});
  gt::Tensor y = gt::from_vector(ys, {n}, gt::kInt64);

  gt::manual_seed(0);
  gt::nn::Sequential model(gt::nn::Linear(2, 64), gt::nn::ReLU(), gt::nn::Linear(64, 64),
                           gt::nn::ReLU(), gt::nn::Linear(64, classes));
  gt::optim::Adam opt(model->parameters(), gt::optim::AdamOptions(0.02));

  auto accuracy = [&](const gt::Tensor& logits) {
    gt::NoGradGuard no_grad;
    return (logits.argmax(1) == y).cast(gt::kFloat32).mean().item<double>();
  };

  double acc = 0;
  for (int step = 1; step <= steps; ++step) {
    opt.zero_grad();
    gt::Tensor logits = model(x);
    gt::Tensor loss = F::cross_entropy(logits, y);
    loss.backward();
    opt.step();
    if (step % 50 == 0 || step == 1 || step == steps) {
      acc = accuracy(logits);
      std::printf("step %4d  loss %.4f  accuracy %.3f\n", step, loss.item<double>(), acc);
      std::fflush(stdout);
    }
  }
  model->eval();
  acc = accuracy(model(x));
  std::printf("final accuracy: %.4f\n", acc);
  return acc >= 0.95 ? 0 : 1;
}
