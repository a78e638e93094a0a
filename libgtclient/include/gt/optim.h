// gt::optim: optimizers and learning-rate schedules, like torch.optim. step() runs the update on
// the workers as ops under NoGradGuard (never recorded on the tape) and writes each parameter in
// place with copy_, so handles held by modules stay valid. Optimizer state (momentum, Adam
// moments) lives on the workers too.
//
//   gt::optim::Adam opt(model->parameters(), {.lr = 1e-3});
//   gt::optim::CosineAnnealingLR sched(opt, /*t_max=*/100);
//   for (...) { opt.zero_grad(); loss.backward(); opt.step(); sched.step(); }
#pragma once

#include <cstdint>
#include <tuple>
#include <vector>

#include "gt/arg.h"
#include "gt/tensor.h"

namespace gt::optim {

class Optimizer {
 public:
  Optimizer(std::vector<Tensor> params, double lr);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter with a defined .grad (others are skipped).
  virtual void step() = 0;
  // Clears (set_to_none, PyTorch's default) or zeroes every parameter's .grad.
  void zero_grad(bool set_to_none = true);

  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  const std::vector<Tensor>& params() const { return params_; }

 protected:
  std::vector<Tensor> params_;
  double lr_;
};

// PyTorch's SGD: d = g + wd p; with momentum: buf = m buf + (1 - dampening) d (buf = d on the
// first step), d = nesterov ? d + m buf : buf; p -= lr d.
// Options in torch::optim's builder style: SGDOptions(0.1).momentum(0.9).nesterov(true); each
// setter returns the options, each getter of the same name reads them (o.momentum()).
class SGDOptions {
 public:
  SGDOptions(double lr = 0.01) : lr_(lr) {}  // NOLINT: implicit as torch's (SGD(p, 0.1))
  GT_ARG(double, lr, 0.01);
  GT_ARG(double, momentum, 0);
  GT_ARG(double, dampening, 0);
  GT_ARG(double, weight_decay, 0);
  GT_ARG(bool, nesterov, false);
};
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  void step() override;
  const SGDOptions& options() const { return opts_; }

 private:
  SGDOptions opts_;
  std::vector<Tensor> momentum_;
};

// Adam's (beta1, beta2), torch's betas tuple.
using Betas = std::tuple<double, double>;

// PyTorch's Adam / AdamW (amsgrad optional), with bias correction:
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2   (t = the step count, from 1)
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// Adam adds weight_decay * p to g; AdamW multiplies p by (1 - lr * weight_decay) first.
// Adam's and AdamW's options differ only in weight_decay's default (0; AdamW: 1e-2).
template <bool kDecoupled>
class AdamFamilyOptions {
 public:
  AdamFamilyOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT: implicit as torch's
  GT_ARG(double, lr, 1e-3);
  GT_ARG(Betas, betas, (Betas{0.9, 0.999}));
  GT_ARG(double, eps, 1e-8);
  GT_ARG(double, weight_decay, kDecoupled ? 1e-2 : 0.0);
  GT_ARG(bool, amsgrad, false);
};
using AdamOptions = AdamFamilyOptions<false>;
using AdamWOptions = AdamFamilyOptions<true>;
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options);
  void step() override;
  const AdamOptions& options() const { return opts_; }

 protected:
  Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled);

 private:
  AdamOptions opts_;
  bool decoupled_ = false;
  std::vector<Tensor> m_, v_, vmax_;
  std::vector<int64_t> steps_;
};
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamWOptions options);
};

// Learning-rate schedules: step() advances one epoch and sets the optimizer's lr (closed forms
// of PyTorch's schedules, from the lr the optimizer had when the scheduler was made). Like
// torch's, each step derives the new lr from the current one (chainable), so an lr set by hand
// in between (opt.set_lr / param_groups) carries on through the schedule.
class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  void step();
  int64_t last_epoch() const { return epoch_; }
  double get_last_lr() const { return opt_.lr(); }

 protected:
  // The lr of `epoch` (>= 1) given the current one.
  virtual double lr_at(int64_t epoch, double current) const = 0;
  Optimizer& opt_;
  double base_lr_;

 private:
  int64_t epoch_ = 0;
};

// lr *= gamma every step_size epochs: base * gamma^(floor(epoch / step_size)) when untouched
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  double lr_at(int64_t epoch, double current) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = eta_min + (base - eta_min) (1 + cos(pi epoch / t_max)) / 2 when untouched, by torch's
// recursive form (the ratio of consecutive cosine factors applied to the current lr)
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min = 0);

 protected:
  double lr_at(int64_t epoch, double current) const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

}  // namespace gt::optim
