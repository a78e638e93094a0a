// Optimizers (SGD, Adam, AdamW) and LR schedules (StepLR, CosineAnnealingLR). Updates are GT ops
// run under NoGradGuard; parameters are written in place (copy_) so module handles stay valid.
#include <cmath>
#include <string>

#include "gt/autograd.h"
#include "gt/optim.h"

namespace gt::optim {

Optimizer::Optimizer(std::vector<Tensor> params, double lr) : params_(std::move(params)), lr_(lr) {
  if (lr < 0) throw Error("optimizer: invalid learning rate " + std::to_string(lr));
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].defined()) throw Error("optimizer: parameter " + std::to_string(i) + " is undefined");
    if (!params_[i].is_leaf())
      throw Error("optimizer: can't optimize a non-leaf tensor (parameter " + std::to_string(i) + ")");
  }
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (const Tensor& p : params_) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      p.grad().zero_();
    }
  }
}

// ---- SGD --------------------------------------------------------------------------------------
SGD::SGD(std::vector<Tensor> params, SGDOptions o) : Optimizer(std::move(params), o.lr()), opts_(o) {
  if (o.momentum() < 0) throw Error("SGD: invalid momentum " + std::to_string(o.momentum()));
  if (o.weight_decay() < 0) throw Error("SGD: invalid weight_decay " + std::to_string(o.weight_decay()));
  if (o.nesterov() && (o.momentum() <= 0 || o.dampening() != 0))
    throw Error("SGD: nesterov momentum requires a momentum and zero dampening");
  momentum_.resize(params_.size());
}

void SGD::step() {
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    Tensor d = p.grad();
    if (!d.defined()) continue;
    if (opts_.weight_decay() != 0) d = d + p * opts_.weight_decay();
    if (opts_.momentum() != 0) {
      Tensor& buf = momentum_[i];
      if (!buf.defined()) {
        buf = opts_.weight_decay() != 0 ? d : d.clone();  // never alias the .grad tensor
      } else {
        Tensor scaled = opts_.dampening() == 0 ? d : d * (1.0 - opts_.dampening());
        buf = buf * opts_.momentum() + scaled;
      }
      d = opts_.nesterov() ? d + buf * opts_.momentum() : buf;
    }
    p.sub_(d, lr_);
  }
}

// ---- Adam / AdamW -----------------------------------------------------------------------------
Adam::Adam(std::vector<Tensor> params, AdamOptions o) : Adam(std::move(params), o, false) {}

Adam::Adam(std::vector<Tensor> params, AdamOptions o, bool decoupled)
    : Optimizer(std::move(params), o.lr()), opts_(o), decoupled_(decoupled) {
  if (o.eps() < 0) throw Error("Adam: invalid epsilon " + std::to_string(o.eps()));
  const auto [beta1, beta2] = o.betas();
  if (beta1 < 0 || beta1 >= 1) throw Error("Adam: invalid beta1 " + std::to_string(beta1));
  if (beta2 < 0 || beta2 >= 1) throw Error("Adam: invalid beta2 " + std::to_string(beta2));
  if (o.weight_decay() < 0) throw Error("Adam: invalid weight_decay " + std::to_string(o.weight_decay()));
  m_.resize(params_.size());
  v_.resize(params_.size());
  vmax_.resize(params_.size());
  steps_.assign(params_.size(), 0);
}

void Adam::step() {
  NoGradGuard no_grad;
  const auto [b1, b2] = opts_.betas();
  const double wd = opts_.weight_decay();
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    const int64_t t = ++steps_[i];
    if (wd != 0 && !decoupled_) g = g + p * wd;
    // The moments start at zero: the first step needs no read of them.
    m_[i] = m_[i].defined() ? m_[i] * b1 + g * (1.0 - b1) : g * (1.0 - b1);
    Tensor g2 = g * g;
    v_[i] = v_[i].defined() ? v_[i] * b2 + g2 * (1.0 - b2) : g2 * (1.0 - b2);
    Tensor v = v_[i];
    if (opts_.amsgrad()) {
      vmax_[i] = vmax_[i].defined() ? maximum(vmax_[i], v) : v;
      v = vmax_[i];
    }
    const double bc1 = 1.0 - std::pow(b1, static_cast<double>(t));
    const double bc2 = 1.0 - std::pow(b2, static_cast<double>(t));
    Tensor denom = v.sqrt() * (1.0 / std::sqrt(bc2)) + opts_.eps();
    Tensor update = (m_[i] / denom) * (lr_ / bc1);
    Tensor base = (decoupled_ && wd != 0) ? p * (1.0 - lr_ * wd) : p;
    p.copy_(base - update);
  }
}

namespace {
AdamOptions as_adam(const AdamWOptions& o) {
  return AdamOptions(o.lr()).betas(o.betas()).eps(o.eps()).weight_decay(o.weight_decay()).amsgrad(o.amsgrad());
}
}  // namespace

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions o)
    : Adam(std::move(params), as_adam(o), true) {}

// ---- schedules --------------------------------------------------------------------------------
LRScheduler::LRScheduler(Optimizer& optimizer) : opt_(optimizer), base_lr_(optimizer.lr()) {}

void LRScheduler::step() {
  ++epoch_;
  opt_.set_lr(lr_at(epoch_, opt_.lr()));
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  if (step_size <= 0) throw Error("StepLR: step_size must be positive");
}

double StepLR::lr_at(int64_t epoch, double current) const {
  return epoch % step_size_ == 0 ? current * gamma_ : current;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min)
    : LRScheduler(optimizer), t_max_(t_max), eta_min_(eta_min) {
  if (t_max <= 0) throw Error("CosineAnnealingLR: t_max must be positive");
}

double CosineAnnealingLR::lr_at(int64_t epoch, double current) const {
  const double t = static_cast<double>(t_max_), e = static_cast<double>(epoch);
  if ((epoch - 1 - t_max_) % (2 * t_max_) == 0)  // restarting from the bottom of the cosine
    return current + (base_lr_ - eta_min_) * (1.0 - std::cos(M_PI / t)) / 2.0;
  return (1.0 + std::cos(M_PI * e / t)) / (1.0 + std::cos(M_PI * (e - 1) / t)) *
             (current - eta_min_) +
         eta_min_;
}

}  // namespace gt::optim
