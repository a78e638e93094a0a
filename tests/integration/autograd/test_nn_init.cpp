// gt::nn::init (bounds and moments of the distributions, fans, gains, constants) and
// gt::nn::utils gradient clipping (the norm and the scaled gradients against host math).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ag_test_util.h"

using namespace agt;
namespace init = gt::nn::init;

namespace {
struct Moments {
  double mean, std, max_abs;
};
Moments moments(const std::vector<double>& v) {
  double m = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double s = 0, top = 0;
  for (double x : v) s += (x - m) * (x - m), top = std::max(top, std::abs(x));
  return {m, std::sqrt(s / static_cast<double>(v.size())), top};
}
}  // namespace

TEST_CASE("nn::init: distributions, fans and gains as torch.nn.init", "[nn][init]") {
  daemons();
  gt::manual_seed(7);
  gt::Tensor w = gt::zeros({200, 50, 3, 3});  // fan_in 450, fan_out 1800
  const double xb = std::sqrt(6.0 / (450 + 1800));
  Moments m = moments(host(init::xavier_uniform_(w)));
  CHECK(m.max_abs <= xb);
  CHECK(m.max_abs > 0.99 * xb);
  CHECK(std::abs(m.std - xb / std::sqrt(3.0)) < 0.01 * xb);
  m = moments(host(init::kaiming_normal_(w, 0, init::FanMode::kFanOut, "relu")));
  CHECK(std::abs(m.std - std::sqrt(2.0 / 1800)) < 0.01 * std::sqrt(2.0 / 1800));
  CHECK(std::abs(m.mean) < 0.01 * m.std);
  const double kb = std::sqrt(3.0) * init::calculate_gain("leaky_relu", 0.0) / std::sqrt(450.0);
  m = moments(host(init::kaiming_uniform_(w, 0)));
  CHECK(m.max_abs <= kb);
  CHECK(m.max_abs > 0.99 * kb);
  m = moments(host(init::normal_(w, 3, 0.5)));
  CHECK(std::abs(m.mean - 3) < 0.01);
  CHECK(std::abs(m.std - 0.5) < 0.01);
  m = moments(host(init::xavier_normal_(w, 2.0)));
  CHECK(std::abs(m.std - 2.0 * std::sqrt(2.0 / 2250)) < 0.02 * m.std);
  CHECK(host(init::constant_(gt::zeros({3}), 2.5)) == std::vector<double>{2.5, 2.5, 2.5});
  CHECK(host(init::eye_(gt::zeros({2, 3}))) == std::vector<double>{1, 0, 0, 0, 1, 0});
  CHECK(init::calculate_gain("tanh") == Approx(5.0 / 3));
  CHECK(init::calculate_gain("leaky_relu") == Approx(std::sqrt(2.0 / (1 + 1e-4))));
  // Parameters stay leaves, and initialization is not recorded.
  gt::Tensor p = gt::zeros({4, 4}).requires_grad_(true);
  init::uniform_(p, -1, 1);
  CHECK(p.is_leaf());
  CHECK_THROWS_WITH(init::xavier_uniform_(gt::zeros({5})), Catch::Contains("fewer than 2"));
  CHECK_THROWS_WITH(init::calculate_gain("swish"), Catch::Contains("unsupported"));
  CHECK_THROWS_WITH(init::eye_(gt::zeros({2, 2, 2})), Catch::Contains("2-d"));
}

TEST_CASE("nn::utils::clip_grad_norm_ and clip_grad_value_", "[nn][clip]") {
  daemons();
  gt::Tensor a = leaf({3, -4}, {2});
  gt::Tensor b = leaf({1, 2, 2}, {3});
  gt::Tensor unused = leaf({1}, {1});
  ((a * tensor({1, 1}, {2})).sum() + (b * b).sum()).backward();  // grads: a 1, 1; b 2, 4, 4
  const double norm = std::sqrt(1 + 1 + 4 + 16 + 16.0);
  gt::Tensor total = gt::nn::utils::clip_grad_norm_({a, b, unused}, 1.0);
  CHECK(host(total)[0] == Approx(norm));
  const double s = 1.0 / (norm + 1e-6);
  const std::vector<double> ga = host(a.grad()), gb = host(b.grad());
  CHECK(ga[0] == Approx(s));
  CHECK(gb[2] == Approx(4 * s));
  // A large max_norm leaves them alone; the inf norm is the largest element.
  CHECK(host(gt::nn::utils::clip_grad_norm_({a, b}, 100.0))[0] == Approx(1.0).epsilon(1e-5));
  CHECK(host(gt::nn::utils::clip_grad_norm_({a, b}, 100.0, std::numeric_limits<double>::infinity()))[0] ==
        Approx(4 * s));
  gt::nn::utils::clip_grad_value_({a, b}, 0.1);
  const std::vector<double> clipped = host(b.grad());
  CHECK(clipped[0] == Approx(std::min(2 * s, 0.1)));  // 0.18 > 0.1: clamped
  CHECK(clipped[1] == Approx(0.1));
  CHECK(host(a.grad())[0] == Approx(std::min(s, 0.1)));
  CHECK(host(gt::nn::utils::clip_grad_norm_({unused}, 1.0)) == std::vector<double>{0});
}
