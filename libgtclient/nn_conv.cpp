// Conv2d, BatchNorm1d/2d (pooling and Flatten are header-only): parameters and buffers with
// PyTorch's initial values; the math is gt::nn::functional's (functional_conv.cpp).
#include <cmath>
#include <string>

#include "gt/autograd.h"
#include "gt/nn.h"

namespace gt::nn {

Conv2dImpl::Conv2dImpl(const Conv2dOptions& o) : options(o) {
  if (o.in_channels_ <= 0 || o.out_channels_ <= 0 || o.groups_ <= 0 ||
      o.in_channels_ % o.groups_ != 0 || o.out_channels_ % o.groups_ != 0)
    throw Error(Code::kInvalidArgument,
                "Conv2d: in_channels (" + std::to_string(o.in_channels_) + ") and out_channels (" +
                    std::to_string(o.out_channels_) + ") must be positive and divisible by groups (" +
                    std::to_string(o.groups_) + ")");
  const size_t nk = o.kernel_size_.size();
  if (nk != 1 && nk != 2)
    throw Error(Code::kInvalidArgument, "Conv2d: kernel_size takes one or two values");
  const int64_t kh = o.kernel_size_[0], kw = o.kernel_size_[nk - 1];
  if (kh <= 0 || kw <= 0) throw Error(Code::kInvalidArgument, "Conv2d: kernel_size must be positive");
  const int64_t fan_in = o.in_channels_ / o.groups_ * kh * kw;
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  auto uniform = [bound](Dims shape) { return (rand(shape) * 2.0 - 1.0) * bound; };
  weight = register_parameter("weight",
                              uniform({o.out_channels_, o.in_channels_ / o.groups_, kh, kw}));
  if (o.bias_) bias = register_parameter("bias", uniform({o.out_channels_}));
}

Tensor Conv2dImpl::forward(const Tensor& x) {
  if (options.padding_mode_)
    return functional::conv2d(x, weight, bias, options.stride_, *options.padding_mode_,
                              options.dilation_, options.groups_);
  return functional::conv2d(x, weight, bias, options.stride_, options.padding_, options.dilation_,
                            options.groups_);
}

BatchNorm::BatchNorm(int64_t n, double eps_, double momentum_, bool affine, bool track)
    : num_features(n), eps(eps_), momentum(momentum_), track_running_stats(track) {
  if (n <= 0) throw Error(Code::kInvalidArgument, "BatchNorm: num_features must be positive");
  if (affine) {
    weight = register_parameter("weight", ones({n}));
    bias = register_parameter("bias", zeros({n}));
  }
  if (track) {
    running_mean = register_buffer("running_mean", zeros({n}));
    running_var = register_buffer("running_var", ones({n}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
}

Tensor BatchNorm::forward(const Tensor& x) {
  check_rank(x);
  if (x.size(1) != num_features)
    throw Error(Code::kInvalidArgument, name() + ": expected " + std::to_string(num_features) +
                                            " channels, got input shape " + x.shape().str());
  const bool use_batch = is_training() || !track_running_stats;
  if (is_training() && track_running_stats) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
  }
  const bool pass_running = track_running_stats;  // updated in training, used in eval
  return functional::batch_norm(x, pass_running ? running_mean : Tensor(),
                                pass_running ? running_var : Tensor(), weight, bias, use_batch,
                                momentum, eps);
}

void BatchNorm1dImpl::check_rank(const Tensor& x) const {
  if (x.dim() != 2 && x.dim() != 3)
    throw Error(Code::kInvalidArgument,
                "BatchNorm1d: expected a 2-d or 3-d input, got shape " + x.shape().str());
}

void BatchNorm2dImpl::check_rank(const Tensor& x) const {
  if (x.dim() != 4)
    throw Error(Code::kInvalidArgument,
                "BatchNorm2d: expected a 4-d input, got shape " + x.shape().str());
}

}  // namespace gt::nn
