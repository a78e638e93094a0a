// conv2d, max_pool2d, avg_pool2d and batch_norm as composites of the op table.
//
// Windows (im2col): the padded image is viewed as [N, C, Hp * Wp] and one index_select picks
// every window element; the index is computed on the worker from aranges (no upload), as
//   idx[a, b, c, d] = (a * s_h + c * d_h) * Wp + (b * s_w + d * d_w)
// over output rows a, output columns b, kernel rows c and kernel columns d, laid out
// [kh, kw, oh, ow] for convolution (so that [N, C * kh * kw, oh * ow] is a reshape and the
// contraction with the weight one batched matmul) and [oh, ow, kh, kw] for pooling (the window
// is the last dim, reduced by max / mean). Overlapping windows are handled by index_select's
// gradient (index_add accumulates repeats): exactly col2im.
#include <cmath>
#include <limits>
#include <string>

#include "gt/autograd.h"
#include "gt/functional.h"
#include "libgtclient/run_op.h"

namespace gt::nn::functional {
namespace {

struct Pair {
  int64_t h, w;
};

Pair pair_of(const Dims& d, const char* op, const char* what) {
  if (d.size() == 1) return {d[0], d[0]};
  if (d.size() == 2) return {d[0], d[1]};
  throw Error(Code::kInvalidArgument, std::string(op) + ": " + what +
                                          " takes one or two values, got " +
                                          std::to_string(d.size()));
}

// x as [N, C, H, W]; `batched` says whether to drop the added batch dim again.
Tensor batched_input(const Tensor& x, const char* op, bool& batched) {
  if (x.dim() != 3 && x.dim() != 4)
    throw Error(Code::kInvalidArgument, std::string(op) + ": expected a 3-d [C, H, W] or 4-d " +
                                            "[N, C, H, W] input, got shape " + x.shape().str());
  batched = x.dim() == 4;
  return batched ? x : x.unsqueeze(0);
}

struct Geometry {
  Pair k, s, p, d;
  int64_t hp, wp, oh, ow;
};

Geometry geometry(const Tensor& x4, Pair k, Pair s, Pair p, Pair d, const char* op) {
  if (k.h <= 0 || k.w <= 0 || s.h <= 0 || s.w <= 0 || d.h <= 0 || d.w <= 0 || p.h < 0 || p.w < 0)
    throw Error(Code::kInvalidArgument,
                std::string(op) + ": kernel, stride and dilation must be positive and padding " +
                    "non-negative");
  Geometry g{k, s, p, d, x4.size(2) + 2 * p.h, x4.size(3) + 2 * p.w, 0, 0};
  const int64_t span_h = d.h * (k.h - 1) + 1, span_w = d.w * (k.w - 1) + 1;
  if (g.hp < span_h || g.wp < span_w)
    throw Error(Code::kInvalidArgument,
                std::string(op) + ": the kernel (" + std::to_string(span_h) + "x" +
                    std::to_string(span_w) + " with dilation) is larger than the padded input (" +
                    std::to_string(g.hp) + "x" + std::to_string(g.wp) + ")");
  g.oh = (g.hp - span_h) / s.h + 1;
  g.ow = (g.wp - span_w) / s.w + 1;
  return g;
}

// x4 with p.h rows and p.w columns of `value` on each side.
Tensor pad_image(const Tensor& x4, Pair p, double value) {
  if (p.h == 0 && p.w == 0) return x4;
  const int64_t n = x4.size(0), c = x4.size(1), h = x4.size(2), w = x4.size(3);
  Tensor r = x4;
  if (p.w > 0) {
    Tensor side = full({n, c, h, p.w}, value, x4.dtype());
    r = cat({side, r, side}, 3);
  }
  if (p.h > 0) {
    Tensor band = full({n, c, p.h, w + 2 * p.w}, value, x4.dtype());
    r = cat({band, r, band}, 2);
  }
  return r;
}

// The flat positions in the padded image of every window element, int64, one dim:
// kernel_major: [kh, kw, oh, ow], else [oh, ow, kh, kw].
Tensor window_index(const Geometry& g, bool kernel_major) {
  NoGradGuard no_grad;
  auto axis = [](int64_t n, int64_t scale, int at, int rank) {
    std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
    shape[static_cast<size_t>(at)] = n;
    return (arange(n, kInt64) * scale).reshape(shape);
  };
  const int ka = kernel_major ? 0 : 2, oa = kernel_major ? 2 : 0;
  Tensor idx = axis(g.oh, g.s.h * g.wp, oa, 4) + axis(g.ow, g.s.w, oa + 1, 4) +
               axis(g.k.h, g.d.h * g.wp, ka, 4) + axis(g.k.w, g.d.w, ka + 1, 4);
  return idx.reshape({-1});
}

// [N, C, kh*kw*oh*ow] (kernel_major) or [N, C, oh*ow*kh*kw]: the window elements.
Tensor windows(const Tensor& padded, const Geometry& g, bool kernel_major) {
  const int64_t n = padded.size(0), c = padded.size(1);
  return padded.reshape({n, c, g.hp * g.wp}).index_select(2, window_index(g, kernel_major));
}

Tensor unbatch(const Tensor& y, bool batched) { return batched ? y : y.squeeze(0); }

// [N, C, oh, ow, kh * kw]: each output position's window, last.
Tensor pool_windows(const Tensor& x4, const Geometry& g, double pad_value) {
  const int64_t n = x4.size(0), c = x4.size(1);
  return windows(pad_image(x4, g.p, pad_value), g, false)
      .reshape({n, c, g.oh, g.ow, g.k.h * g.k.w});
}

void check_pool_padding(const Geometry& g, const char* op) {
  if (2 * g.p.h > g.k.h || 2 * g.p.w > g.k.w)
    throw Error(Code::kInvalidArgument,
                std::string(op) + ": padding should be at most half of the kernel size");
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Dims stride,
              Dims padding, Dims dilation, int64_t groups) {
  bool batched = true;
  const Tensor x4 = batched_input(x, "conv2d", batched);
  detail::require_floating(x4, "conv2d");
  if (weight.dim() != 4)
    throw Error(Code::kInvalidArgument,
                "conv2d: weight must be [out, in / groups, kh, kw], got " + weight.shape().str());
  const int64_t n = x4.size(0), c = x4.size(1), oc = weight.size(0), cg = weight.size(1);
  if (groups <= 0 || c % groups != 0 || oc % groups != 0 || cg * groups != c)
    throw Error(Code::kInvalidArgument,
                "conv2d: input with " + std::to_string(c) + " channels, weight " +
                    weight.shape().str() + " and groups " + std::to_string(groups) +
                    " do not fit (in = weight.size(1) * groups, out divisible by groups)");
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != oc))
    throw Error(Code::kInvalidArgument,
                "conv2d: bias must be [" + std::to_string(oc) + "], got " + bias.shape().str());
  const Geometry g =
      geometry(x4, {weight.size(2), weight.size(3)}, pair_of(stride, "conv2d", "stride"),
               pair_of(padding, "conv2d", "padding"), pair_of(dilation, "conv2d", "dilation"),
               "conv2d");
  const int64_t kk = cg * g.k.h * g.k.w, l = g.oh * g.ow;
  // [N, G, cg*kh*kw, L] @ ... : the weight [G, oc/G, cg*kh*kw] broadcasts over the batch.
  Tensor cols = windows(pad_image(x4, g.p, 0.0), g, true).reshape({n, groups, kk, l});
  Tensor w = weight.reshape({groups, oc / groups, kk});
  Tensor y = w.matmul(cols).reshape({n, oc, g.oh, g.ow});
  if (bias.defined()) y = y + bias.reshape({1, oc, 1, 1});
  return unbatch(y, batched);
}

Tensor max_pool2d(const Tensor& x, Dims kernel_size, Dims stride, Dims padding, Dims dilation) {
  bool batched = true;
  const Tensor x4 = batched_input(x, "max_pool2d", batched);
  detail::require_floating(x4, "max_pool2d");
  const Pair k = pair_of(kernel_size, "max_pool2d", "kernel_size");
  const Geometry g = geometry(x4, k, stride.size() == 0 ? k : pair_of(stride, "max_pool2d", "stride"),
                              pair_of(padding, "max_pool2d", "padding"),
                              pair_of(dilation, "max_pool2d", "dilation"), "max_pool2d");
  check_pool_padding(g, "max_pool2d");
  // -inf padding never wins (every window holds a real element: padding <= kernel / 2).
  const double lowest = -std::numeric_limits<double>::infinity();
  return unbatch(std::get<0>(pool_windows(x4, g, lowest).max(4)), batched);
}

Tensor avg_pool2d(const Tensor& x, Dims kernel_size, Dims stride, Dims padding,
                  bool count_include_pad) {
  bool batched = true;
  const Tensor x4 = batched_input(x, "avg_pool2d", batched);
  detail::require_floating(x4, "avg_pool2d");
  const Pair k = pair_of(kernel_size, "avg_pool2d", "kernel_size");
  const Geometry g = geometry(x4, k, stride.size() == 0 ? k : pair_of(stride, "avg_pool2d", "stride"),
                              pair_of(padding, "avg_pool2d", "padding"), {1, 1}, "avg_pool2d");
  check_pool_padding(g, "avg_pool2d");
  Tensor sums = pool_windows(x4, g, 0.0).sum(4);
  if (count_include_pad || (g.p.h == 0 && g.p.w == 0))
    return unbatch(sums / static_cast<double>(g.k.h * g.k.w), batched);
  Tensor counts;
  {
    NoGradGuard no_grad;  // how many real elements each window holds
    counts = pool_windows(ones({1, 1, x4.size(2), x4.size(3)}, x4.dtype()), g, 0.0).sum(4);
  }
  return unbatch(sums / counts, batched);
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  if (x.dim() < 2)
    throw Error(Code::kInvalidArgument,
                "batch_norm: expected an input [N, C, ...], got shape " + x.shape().str());
  detail::require_floating(x, "batch_norm");
  if (x.dtype() == kFloat16 || x.dtype() == kBFloat16)  // statistics in float32, as torch's
    return batch_norm(x.to(kFloat32), running_mean, running_var, weight, bias, training,
                      momentum, eps)
        .to(x.dtype());
  const int64_t c = x.size(1);
  std::vector<int64_t> bshape(static_cast<size_t>(x.dim()), 1);
  bshape[1] = c;  // per-channel statistics broadcast as [1, C, 1, ...]
  auto per_channel = [&](const Tensor& t, const char* what) {
    if (t.defined() && (t.dim() != 1 || t.size(0) != c))
      throw Error(Code::kInvalidArgument, std::string("batch_norm: ") + what + " must be [" +
                                              std::to_string(c) + "], got " + t.shape().str());
    return t.defined() ? t.reshape(bshape) : t;
  };
  const Tensor w = per_channel(weight, "weight"), b = per_channel(bias, "bias");
  const Tensor rm = per_channel(running_mean, "running_mean");
  const Tensor rv = per_channel(running_var, "running_var");
  Tensor mean, var;
  if (training) {
    const int64_t count = x.numel() / std::max<int64_t>(c, 1);
    if (count <= 1)
      throw Error(Code::kInvalidArgument,
                  "batch_norm: expected more than 1 value per channel when training, got input "
                  "shape " + x.shape().str());
    const Tensor rows = x.transpose(0, 1).reshape({c, -1});  // [C, everything else]
    mean = rows.mean(1).reshape(bshape);
    var = rows.var(1, /*correction=*/0).reshape(bshape);
    if (running_mean.defined() || running_var.defined()) {
      NoGradGuard no_grad;
      const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
      if (running_mean.defined())
        running_mean.mul_(1 - momentum).add_(mean.reshape({c}).to(running_mean.dtype()) * momentum);
      if (running_var.defined())
        running_var.mul_(1 - momentum)
            .add_(var.reshape({c}).to(running_var.dtype()) * (momentum * unbias));
    }
  } else {
    if (!running_mean.defined() || !running_var.defined())
      throw Error(Code::kInvalidArgument,
                  "batch_norm: evaluation needs running_mean and running_var");
    mean = rm;
    var = rv;
  }
  Tensor y = (x - mean) / (var + eps).sqrt();
  if (w.defined()) y = y * w;
  if (b.defined()) y = y + b;
  return y;
}

}  // namespace gt::nn::functional
