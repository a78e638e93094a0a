// Shared helpers of the autograd suite: one process-wide pair of real daemons, host <-> tensor
// helpers, and the finite-difference gradient checker (numeric gradients are computed by
// evaluating the forward through GT at perturbed inputs; the host only builds inputs and does
// the final subtraction/division).
#pragma once

#include <catch2/catch.hpp>
#include <gt/gt.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "daemons.h"

namespace agt {

inline gt::testing::Daemons& daemons() {
  static gt::testing::Daemons d(gt::testing::DaemonOptions{1, {}, {}, {}});
  static bool connected = [] {
    gt::connect(d.address());
    return true;
  }();
  (void)connected;
  return d;
}

inline std::vector<double> host(const gt::Tensor& t) { return t.to_vector<double>(); }

inline gt::Tensor tensor(const std::vector<double>& v, std::vector<int64_t> shape,
                         gt::DType dt = gt::kFloat32) {
  return gt::from_vector(v, gt::Dims(shape), dt);
}

inline gt::Tensor leaf(const std::vector<double>& v, std::vector<int64_t> shape) {
  gt::Tensor t = tensor(v, std::move(shape));
  t.requires_grad_();
  return t;
}

inline int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Values in (-2, -0.3] U [0.3, 2) with every pair at least `gap` apart (so max/min/abs/relu
// stay away from kinks and ties under a perturbation of eps < gap / 2).
inline std::vector<double> spread_values(int64_t n, uint32_t seed, double lo = -2, double hi = 2,
                                         bool avoid_zero = true, double gap = 0.06) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v;
  int guard = 0;
  while (static_cast<int64_t>(v.size()) < n && guard++ < 100000) {
    double x = std::round(u(rng) * 64) / 64;  // exact in float32
    if (avoid_zero && std::abs(x) < 0.3) continue;
    bool ok = true;
    for (double y : v)
      if (std::abs(x - y) < gap) ok = false;
    if (ok) v.push_back(x);
  }
  REQUIRE(static_cast<int64_t>(v.size()) == n);
  return v;
}

inline std::vector<double> positive_values(int64_t n, uint32_t seed, double lo = 0.5,
                                           double hi = 2.0) {
  return spread_values(n, seed, lo, hi, false, (hi - lo) / (4.0 * n));
}

struct GradInput {
  std::vector<int64_t> shape;
  std::vector<double> values;
  bool grad = true;  // perturbed and checked
  gt::DType dtype = gt::kFloat32;
};

using GradFn = std::function<gt::Tensor(const std::vector<gt::Tensor>&)>;

struct GradCase {
  std::string name;
  std::vector<GradInput> inputs;
  GradFn fn;
  double eps = 1e-2;
  double atol = 5e-3;
  double rtol = 1e-2;
};

inline std::string fmt(const std::vector<double>& v) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << v[i];
  return o.str() + "]";
}

// Checks the analytic gradient of L = sum(fn(inputs) * R) (R fixed pseudo-random weights)
// against central differences of L evaluated through GT. Returns the output of the analytic run.
inline gt::Tensor gradcheck(const GradCase& c) {
  daemons();
  INFO("case: " << c.name);
  std::vector<gt::Tensor> ins;
  for (const GradInput& g : c.inputs) {
    gt::Tensor t = tensor(g.values, g.shape, g.dtype);
    if (g.grad) t.requires_grad_();
    ins.push_back(t);
  }
  gt::Tensor y = c.fn(ins);
  REQUIRE(y.requires_grad());
  std::vector<double> r(static_cast<size_t>(y.numel()));
  {
    std::mt19937 rng(12345);
    std::uniform_real_distribution<double> u(0.5, 1.5);
    for (size_t i = 0; i < r.size(); ++i) r[i] = (i % 2 ? -1 : 1) * std::round(u(rng) * 64) / 64;
  }
  gt::Tensor rt = tensor(r, y.sizes());
  (y * rt).sum().backward();

  // Numeric: every element of every checked input, + and - eps, all queued before one fetch.
  std::vector<gt::Tensor> losses;
  std::vector<double> steps;
  {
    gt::NoGradGuard no_grad;
    std::vector<gt::Tensor> base;
    for (const GradInput& g : c.inputs) base.push_back(tensor(g.values, g.shape, g.dtype));
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (!c.inputs[i].grad) continue;
      for (size_t j = 0; j < c.inputs[i].values.size(); ++j) {
        float lohi[2];
        for (int s = 0; s < 2; ++s) {
          std::vector<double> v = c.inputs[i].values;
          float p = static_cast<float>(v[j] + (s == 0 ? c.eps : -c.eps));
          lohi[s] = p;
          v[j] = p;
          std::vector<gt::Tensor> args = base;
          args[i] = tensor(v, c.inputs[i].shape, c.inputs[i].dtype);
          losses.push_back((c.fn(args) * rt).sum().reshape({1}));
        }
        steps.push_back(static_cast<double>(lohi[0]) - static_cast<double>(lohi[1]));
      }
    }
  }
  std::vector<double> lv;
  for (size_t off = 0; off < losses.size(); off += 512) {
    std::vector<gt::Tensor> part(losses.begin() + static_cast<long>(off),
                                 losses.begin() + static_cast<long>(std::min(off + 512, losses.size())));
    std::vector<double> got = host(gt::cat(part, 0));
    lv.insert(lv.end(), got.begin(), got.end());
  }

  size_t k = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i].grad) continue;
    gt::Tensor g = ins[i].grad();
    INFO("input " << i << " " << fmt(c.inputs[i].values));
    REQUIRE(g.defined());
    CHECK(g.sizes() == c.inputs[i].shape);
    CHECK(g.dtype() == c.inputs[i].dtype);
    std::vector<double> analytic = host(g);
    std::vector<double> numeric;
    for (size_t j = 0; j < c.inputs[i].values.size(); ++j, ++k)
      numeric.push_back((lv[2 * k] - lv[2 * k + 1]) / steps[k]);
    INFO("analytic " << fmt(analytic));
    INFO("numeric  " << fmt(numeric));
    bool ok = analytic.size() == numeric.size();
    for (size_t j = 0; ok && j < numeric.size(); ++j)
      if (!(std::abs(analytic[j] - numeric[j]) <= c.atol + c.rtol * std::abs(numeric[j])))
        ok = false;
    CHECK(ok);
  }
  return y;
}

}  // namespace agt
