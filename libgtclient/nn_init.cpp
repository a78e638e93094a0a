// gt::nn::init and gt::nn::utils (gradient clipping): torch.nn.init's and torch.nn.utils'
// formulas over the op table, outside the tape. The Python package binds these.
#include <cmath>
#include <limits>
#include <string>

#include "gt/autograd.h"
#include "gt/nn.h"

namespace gt::nn {
namespace init {
namespace {

const Tensor& write(const Tensor& t, const Tensor& values) {
  NoGradGuard no_grad;
  t.copy_(values);
  return t;
}

struct Fans {
  double in, out;
};

Fans fans(const Tensor& t) {
  if (t.dim() < 2)
    throw Error(Code::kInvalidArgument,
                "fan in and fan out can not be computed for a tensor with fewer than 2 "
                "dimensions (shape " + t.shape().str() + ")");
  double receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= static_cast<double>(t.size(d));
  return {static_cast<double>(t.size(1)) * receptive, static_cast<double>(t.size(0)) * receptive};
}

double kaiming_std(const Tensor& t, double a, FanMode mode, const std::string& nonlinearity) {
  const Fans f = fans(t);
  return calculate_gain(nonlinearity, a) / std::sqrt(mode == FanMode::kFanIn ? f.in : f.out);
}

}  // namespace

double calculate_gain(const std::string& nl, std::optional<double> param) {
  if (nl == "linear" || nl == "conv1d" || nl == "conv2d" || nl == "conv3d" ||
      nl == "conv_transpose1d" || nl == "conv_transpose2d" || nl == "conv_transpose3d" ||
      nl == "sigmoid")
    return 1.0;
  if (nl == "tanh") return 5.0 / 3;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") {
    const double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1 + slope * slope));
  }
  if (nl == "selu") return 3.0 / 4;
  throw Error(Code::kInvalidArgument, "calculate_gain: unsupported nonlinearity '" + nl + "'");
}

const Tensor& uniform_(const Tensor& t, double a, double b) {
  return write(t, rand_like(t, kFloat32) * (b - a) + a);
}

const Tensor& normal_(const Tensor& t, double mean, double std) {
  return write(t, randn_like(t, kFloat32) * std + mean);
}

const Tensor& constant_(const Tensor& t, Scalar value) {
  NoGradGuard no_grad;
  t.fill_(value);
  return t;
}

const Tensor& zeros_(const Tensor& t) { return constant_(t, 0); }
const Tensor& ones_(const Tensor& t) { return constant_(t, 1); }

const Tensor& eye_(const Tensor& t) {
  if (t.dim() != 2)
    throw Error(Code::kInvalidArgument, "eye_: only 2-d tensors are supported, got shape " +
                                            t.shape().str());
  return write(t, eye(t.size(0), t.size(1), t.dtype()));
}

const Tensor& xavier_uniform_(const Tensor& t, double gain) {
  const Fans f = fans(t);
  const double bound = gain * std::sqrt(6.0 / (f.in + f.out));
  return uniform_(t, -bound, bound);
}

const Tensor& xavier_normal_(const Tensor& t, double gain) {
  const Fans f = fans(t);
  return normal_(t, 0.0, gain * std::sqrt(2.0 / (f.in + f.out)));
}

const Tensor& kaiming_uniform_(const Tensor& t, double a, FanMode mode,
                               const std::string& nonlinearity) {
  const double bound = std::sqrt(3.0) * kaiming_std(t, a, mode, nonlinearity);
  return uniform_(t, -bound, bound);
}

const Tensor& kaiming_normal_(const Tensor& t, double a, FanMode mode,
                              const std::string& nonlinearity) {
  return normal_(t, 0.0, kaiming_std(t, a, mode, nonlinearity));
}

}  // namespace init

namespace utils {
namespace {
std::vector<Tensor> grads_of(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> out;
  for (const Tensor& p : parameters) {
    Tensor g = p.grad();
    if (g.defined()) out.push_back(g);
  }
  return out;
}
}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type) {
  const std::vector<Tensor> grads = grads_of(parameters);
  if (grads.empty()) return zeros({});
  NoGradGuard no_grad;
  std::vector<Tensor> parts;
  const bool inf = std::isinf(norm_type) && norm_type > 0;
  for (const Tensor& g : grads)
    parts.push_back(inf ? g.abs().max().to(kFloat32) : g.to(kFloat32).abs().pow(norm_type).sum());
  const Tensor total = inf ? stack(parts).max() : stack(parts).sum().pow(1.0 / norm_type);
  const Tensor scale = (max_norm / (total + 1e-6)).clamp_max(1.0);
  for (const Tensor& g : grads) g.mul_(scale.to(g.dtype()));
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard no_grad;
  for (const Tensor& g : grads_of(parameters)) g.clamp_(-clip_value, clip_value);
}

}  // namespace utils
}  // namespace gt::nn
