// Optimizers against closed-form host references (3 steps each, gradients from a real backward
// pass of L = 0.5 * sum((p - t)^2), so dL/dp = p - t changes every step), and LR schedules.
#include <cmath>

#include "ag_test_util.h"

using gt::Tensor;

namespace {

const std::vector<double> kP0{0.5, -1.0, 2.0, 0.25};
const std::vector<double> kTarget{1.0, 0.0, -1.0, 0.5};

// Runs `steps` optimizer steps through GT, returning the parameter after each step.
template <typename Opt, typename Options>
std::vector<std::vector<double>> run_gt(Options o, int steps = 3) {
  agt::daemons();
  Tensor p = agt::leaf(kP0, {4});
  Tensor t = agt::tensor(kTarget, {4});
  Opt opt({p}, o);
  std::vector<std::vector<double>> out;
  const int64_t nodes0 = gt::autograd::live_nodes();
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    Tensor d = p - t;
    ((d * d).sum() * 0.5).backward();
    opt.step();
    out.push_back(agt::host(p));
    CHECK(p.is_leaf());  // the update was not recorded on the tape
    CHECK(p.requires_grad());
  }
  CHECK(gt::autograd::live_nodes() == nodes0);
  return out;
}

void check_close(const std::vector<std::vector<double>>& got,
                 const std::vector<std::vector<double>>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t s = 0; s < got.size(); ++s)
    for (size_t i = 0; i < got[s].size(); ++i) {
      INFO("step " << s + 1 << " element " << i << ": got " << got[s][i] << " want "
                   << want[s][i]);
      CHECK(std::abs(got[s][i] - want[s][i]) <= 2e-6 + 2e-6 * std::abs(want[s][i]));
    }
}

std::vector<std::vector<double>> ref_sgd(const gt::optim::SGDOptions& o, int steps = 3) {
  std::vector<double> p = kP0, buf;
  std::vector<std::vector<double>> out;
  for (int s = 0; s < steps; ++s) {
    std::vector<double> d(p.size());
    for (size_t i = 0; i < p.size(); ++i) d[i] = (p[i] - kTarget[i]) + o.weight_decay() * p[i];
    if (o.momentum() != 0) {
      if (buf.empty()) {
        buf = d;
      } else {
        for (size_t i = 0; i < p.size(); ++i)
          buf[i] = o.momentum() * buf[i] + (1 - o.dampening()) * d[i];
      }
      for (size_t i = 0; i < p.size(); ++i) d[i] = o.nesterov() ? d[i] + o.momentum() * buf[i] : buf[i];
    }
    for (size_t i = 0; i < p.size(); ++i) p[i] -= o.lr() * d[i];
    out.push_back(p);
  }
  return out;
}

std::vector<std::vector<double>> ref_adam(double lr, double b1, double b2, double eps, double wd,
                                          bool amsgrad, bool decoupled, int steps = 3) {
  std::vector<double> p = kP0, m(4, 0), v(4, 0), vmax(4, 0);
  std::vector<std::vector<double>> out;
  for (int t = 1; t <= steps; ++t) {
    for (size_t i = 0; i < p.size(); ++i) {
      double g = p[i] - kTarget[i];
      if (wd != 0 && !decoupled) g += wd * p[i];
      if (decoupled) p[i] *= 1 - lr * wd;
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      vmax[i] = std::max(vmax[i], v[i]);
      const double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
      const double denom = std::sqrt(amsgrad ? vmax[i] : v[i]) / std::sqrt(bc2) + eps;
      p[i] -= lr / bc1 * m[i] / denom;
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace

TEST_CASE("SGD matches PyTorch's update (plain, momentum, dampening, nesterov, weight decay)",
          "[optim]") {
  using gt::optim::SGD;
  using gt::optim::SGDOptions;
  SECTION("plain") {
    SGDOptions o = SGDOptions(0.1);
    check_close(run_gt<SGD>(o), ref_sgd(o));
  }
  SECTION("momentum") {
    SGDOptions o = SGDOptions(0.1).momentum(0.9);
    check_close(run_gt<SGD>(o), ref_sgd(o));
  }
  SECTION("momentum + dampening + weight decay") {
    SGDOptions o = SGDOptions(0.05).momentum(0.8).dampening(0.3).weight_decay(0.1);
    check_close(run_gt<SGD>(o), ref_sgd(o));
  }
  SECTION("nesterov + weight decay") {
    SGDOptions o = SGDOptions(0.1).momentum(0.9).weight_decay(0.01).nesterov(true);
    check_close(run_gt<SGD>(o), ref_sgd(o));
  }
  CHECK_THROWS_WITH(SGD({agt::leaf({1}, {1})}, SGDOptions(0.1).nesterov(true)),
                    Catch::Contains("nesterov"));
}

TEST_CASE("Adam and AdamW match PyTorch's update with bias correction", "[optim]") {
  using gt::optim::Adam;
  using gt::optim::AdamW;
  SECTION("Adam") {
    check_close(run_gt<Adam>(gt::optim::AdamOptions(0.1)),
                ref_adam(0.1, 0.9, 0.999, 1e-8, 0, false, false));
  }
  SECTION("Adam + weight decay + amsgrad, other betas") {
    auto o = gt::optim::AdamOptions(0.05).betas({0.8, 0.9}).eps(1e-6).weight_decay(0.1).amsgrad(true);
    check_close(run_gt<Adam>(o), ref_adam(0.05, 0.8, 0.9, 1e-6, 0.1, true, false));
  }
  SECTION("AdamW (decoupled weight decay, default 1e-2)") {
    check_close(run_gt<AdamW>(gt::optim::AdamWOptions(0.1)),
                ref_adam(0.1, 0.9, 0.999, 1e-8, 1e-2, false, true));
  }
  SECTION("AdamW, strong decay") {
    check_close(run_gt<AdamW>(gt::optim::AdamWOptions(0.05).weight_decay(0.5)),
                ref_adam(0.05, 0.9, 0.999, 1e-8, 0.5, false, true));
  }
}

TEST_CASE("optimizers skip parameters without gradients, zero_grad modes", "[optim]") {
  agt::daemons();
  Tensor a = agt::leaf({1, 2}, {2}), b = agt::leaf({3, 4}, {2});
  gt::optim::SGD opt({a, b}, 0.5);
  (a * a).sum().backward();
  opt.step();
  CHECK(agt::host(a) == std::vector<double>{0, 0});
  CHECK(agt::host(b) == std::vector<double>{3, 4});
  opt.zero_grad(false);
  CHECK(agt::host(a.grad()) == std::vector<double>{0, 0});
  opt.zero_grad();
  CHECK_FALSE(a.grad().defined());
  CHECK_THROWS_WITH(gt::optim::SGD({a * 2.0}, 0.1), Catch::Contains("non-leaf"));
}

TEST_CASE("StepLR and CosineAnnealingLR follow PyTorch's schedules", "[optim]") {
  agt::daemons();
  Tensor p = agt::leaf({1}, {1});
  gt::optim::SGD opt({p}, 1.0);
  gt::optim::StepLR step(opt, 2, 0.5);
  std::vector<double> lrs;
  for (int e = 0; e < 5; ++e) {
    step.step();
    lrs.push_back(opt.lr());
  }
  CHECK(lrs == std::vector<double>{1.0, 0.5, 0.5, 0.25, 0.25});

  gt::optim::Adam adam({p}, 0.1);
  gt::optim::CosineAnnealingLR cos(adam, 4, 0.01);
  for (int e = 1; e <= 4; ++e) {
    cos.step();
    CHECK(adam.lr() == Approx(0.01 + 0.09 * (1 + std::cos(M_PI * e / 4)) / 2));
  }
  CHECK(cos.get_last_lr() == Approx(0.01));

  // The optimizer uses the scheduled lr.
  gt::optim::SGD sgd({p}, 1.0);
  gt::optim::StepLR halve(sgd, 1, 0.5);
  halve.step();
  p.sum().backward();
  sgd.step();
  CHECK(agt::host(p) == std::vector<double>{0.5});
}
