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
#include <functional>
#include <limits>
#include <string>
#include <tuple>

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

// Padding before (top, left) and after (bottom, right): symmetric as given, except that
// padding='same' with an even span and ceil_mode add to the end only.
struct Padding2d {
  Pair before, after;
  bool symmetric() const { return before.h == after.h && before.w == after.w; }
};

struct Geometry {
  Pair k, s, d;
  Padding2d pad;
  int64_t hp, wp, oh, ow;  // the padded image, the output
};

// ceil_mode (pooling): the output rounds up, keeping only windows that start inside the input
// or its leading padding (torch's rule); the last ones reach into extra trailing padding.
Geometry geometry(const Tensor& x4, Pair k, Pair s, Padding2d pad, Pair d, const char* op,
                  bool ceil_mode = false) {
  const Pair& p = pad.before;
  if (k.h <= 0 || k.w <= 0 || s.h <= 0 || s.w <= 0 || d.h <= 0 || d.w <= 0 || p.h < 0 || p.w < 0 ||
      pad.after.h < 0 || pad.after.w < 0)
    throw Error(Code::kInvalidArgument,
                std::string(op) + ": kernel, stride and dilation must be positive and padding " +
                    "non-negative");
  const int64_t h = x4.size(2), w = x4.size(3);
  Geometry g{k, s, d, pad, h + p.h + pad.after.h, w + p.w + pad.after.w, 0, 0};
  const int64_t span_h = d.h * (k.h - 1) + 1, span_w = d.w * (k.w - 1) + 1;
  if (g.hp < span_h || g.wp < span_w)
    throw Error(Code::kInvalidArgument,
                std::string(op) + ": the kernel (" + std::to_string(span_h) + "x" +
                    std::to_string(span_w) + " with dilation) is larger than the padded input (" +
                    std::to_string(g.hp) + "x" + std::to_string(g.wp) + ")");
  auto out = [&](int64_t padded, int64_t span, int64_t stride, int64_t size, int64_t lead) {
    if (!ceil_mode) return (padded - span) / stride + 1;
    int64_t o = (padded - span + stride - 1) / stride + 1;
    if ((o - 1) * stride >= size + lead) --o;
    return o;
  };
  g.oh = out(g.hp, span_h, s.h, h, p.h);
  g.ow = out(g.wp, span_w, s.w, w, p.w);
  const int64_t extra_h = std::max<int64_t>(0, (g.oh - 1) * s.h + span_h - g.hp);
  const int64_t extra_w = std::max<int64_t>(0, (g.ow - 1) * s.w + span_w - g.wp);
  g.pad.after.h += extra_h;
  g.pad.after.w += extra_w;
  g.hp += extra_h;
  g.wp += extra_w;
  return g;
}

Padding2d symmetric(Pair p) { return {p, p}; }

// x4 with `pad` rows and columns of `value` around it.
Tensor pad_image(const Tensor& x4, const Padding2d& pad, double value) {
  const Pair& b = pad.before;
  const Pair& a = pad.after;
  if (b.h == 0 && b.w == 0 && a.h == 0 && a.w == 0) return x4;
  const int64_t n = x4.size(0), c = x4.size(1), h = x4.size(2), w = x4.size(3);
  Tensor r = x4;
  if (b.w > 0 || a.w > 0) {
    std::vector<Tensor> parts;
    if (b.w > 0) parts.push_back(full({n, c, h, b.w}, value, x4.dtype()));
    parts.push_back(r);
    if (a.w > 0) parts.push_back(full({n, c, h, a.w}, value, x4.dtype()));
    r = cat(parts, 3);
  }
  if (b.h > 0 || a.h > 0) {
    const int64_t wide = w + b.w + a.w;
    std::vector<Tensor> parts;
    if (b.h > 0) parts.push_back(full({n, c, b.h, wide}, value, x4.dtype()));
    parts.push_back(r);
    if (a.h > 0) parts.push_back(full({n, c, a.h, wide}, value, x4.dtype()));
    r = cat(parts, 2);
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
  return windows(pad_image(x4, g.pad, pad_value), g, false)
      .reshape({n, c, g.oh, g.ow, g.k.h * g.k.w});
}

void check_pool_padding(const Geometry& g, const char* op) {
  if (2 * g.pad.before.h > g.k.h || 2 * g.pad.before.w > g.k.w)
    throw Error(Code::kInvalidArgument,
                std::string(op) + ": padding should be at most half of the kernel size");
}

}  // namespace

namespace {

Tensor conv2d_padded(const Tensor& x, const Tensor& weight, const Tensor& bias, Dims stride,
                     const std::function<Padding2d(Pair kernel, Pair dilation)>& padding,
                     Dims dilation, int64_t groups) {
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
  const Pair k{weight.size(2), weight.size(3)}, d = pair_of(dilation, "conv2d", "dilation");
  const Geometry g = geometry(x4, k, pair_of(stride, "conv2d", "stride"), padding(k, d), d, "conv2d");
  const int64_t kk = cg * g.k.h * g.k.w, l = g.oh * g.ow;
  // [N, G, cg*kh*kw, L] @ ... : the weight [G, oc/G, cg*kh*kw] broadcasts over the batch.
  Tensor cols = windows(pad_image(x4, g.pad, 0.0), g, true).reshape({n, groups, kk, l});
  Tensor w = weight.reshape({groups, oc / groups, kk});
  Tensor y = w.matmul(cols).reshape({n, oc, g.oh, g.ow});
  if (bias.defined()) y = y + bias.reshape({1, oc, 1, 1});
  return unbatch(y, batched);
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Dims stride,
              Dims padding, Dims dilation, int64_t groups) {
  const Pair p = pair_of(padding, "conv2d", "padding");
  return conv2d_padded(x, weight, bias, stride, [&](Pair, Pair) { return symmetric(p); },
                       dilation, groups);
}

// kSame: the output keeps the input's size (stride 1); the total padding d (k - 1) is split
// with the odd one after, as torch's. kValid: none.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Dims stride,
              PaddingMode padding, Dims dilation, int64_t groups) {
  if (padding == kValid) return conv2d(x, weight, bias, stride, Dims{0}, dilation, groups);
  const Pair s = pair_of(stride, "conv2d", "stride");
  if (s.h != 1 || s.w != 1)
    throw Error(Code::kInvalidArgument,
                "conv2d: padding='same' is not supported for strided convolutions");
  return conv2d_padded(
      x, weight, bias, stride,
      [](Pair k, Pair d) {
        const Pair total{d.h * (k.h - 1), d.w * (k.w - 1)};
        const Pair before{total.h / 2, total.w / 2};
        return Padding2d{before, {total.h - before.h, total.w - before.w}};
      },
      dilation, groups);
}

namespace {

Geometry pool_geometry(const Tensor& x4, Dims kernel_size, Dims stride, Dims padding,
                       Pair dilation, bool ceil_mode, const char* op) {
  detail::require_floating(x4, op);
  const Pair k = pair_of(kernel_size, op, "kernel_size");
  const Geometry g = geometry(x4, k, stride.size() == 0 ? k : pair_of(stride, op, "stride"),
                              symmetric(pair_of(padding, op, "padding")), dilation, op, ceil_mode);
  check_pool_padding(g, op);
  return g;
}

// Where each window's maximum sits in its input plane (h * W + w), from its place in the
// window (kh * kw positions, row-major): torch's return_indices.
Tensor input_positions(const Tensor& in_window, const Geometry& g, int64_t width) {
  NoGradGuard no_grad;
  const Tensor row0 = (arange(g.oh, kInt64) * g.s.h - g.pad.before.h).reshape({g.oh, 1});
  const Tensor col0 = (arange(g.ow, kInt64) * g.s.w - g.pad.before.w).reshape({1, g.ow});
  const Tensor row = row0 + in_window.floor_divide(g.k.w) * g.d.h;
  const Tensor col = col0 + in_window.remainder(g.k.w) * g.d.w;
  return row * width + col;
}

// The window maxima of x ([N, C, oh, ow]) and each one's place in its window. -inf padding
// never wins (every window holds a real element: padding <= kernel / 2, and a ceil_mode window
// starts inside the input or its leading padding).
struct MaxPool {
  Tensor x4, values, in_window;
  Geometry g;
  bool batched = true;
};
MaxPool max_pool(const Tensor& x, Dims kernel_size, Dims stride, Dims padding, Dims dilation,
                 bool ceil_mode) {
  MaxPool p;
  p.x4 = batched_input(x, "max_pool2d", p.batched);
  p.g = pool_geometry(p.x4, kernel_size, stride, padding,
                      pair_of(dilation, "max_pool2d", "dilation"), ceil_mode, "max_pool2d");
  const double lowest = -std::numeric_limits<double>::infinity();
  std::tie(p.values, p.in_window) = pool_windows(p.x4, p.g, lowest).max(4);
  return p;
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, Dims kernel_size, Dims stride,
                                                   Dims padding, Dims dilation, bool ceil_mode) {
  const MaxPool p = max_pool(x, kernel_size, stride, padding, dilation, ceil_mode);
  return {unbatch(p.values, p.batched),
          unbatch(input_positions(p.in_window, p.g, p.x4.size(3)), p.batched)};
}

Tensor max_pool2d(const Tensor& x, Dims kernel_size, Dims stride, Dims padding, Dims dilation,
                  bool ceil_mode) {
  const MaxPool p = max_pool(x, kernel_size, stride, padding, dilation, ceil_mode);
  return unbatch(p.values, p.batched);
}

// The divisor as torch's: divisor_override; else each window's extent within the padded input
// (count_include_pad: padding counts, ceil_mode's extra does not) or within the input itself.
Tensor avg_pool2d(const Tensor& x, Dims kernel_size, Dims stride, Dims padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  bool batched = true;
  const Tensor x4 = batched_input(x, "avg_pool2d", batched);
  const Geometry g =
      pool_geometry(x4, kernel_size, stride, padding, {1, 1}, ceil_mode, "avg_pool2d");
  if (divisor_override && *divisor_override == 0)
    throw Error(Code::kInvalidArgument, "avg_pool2d: divisor_override must not be zero");
  const Tensor sums = pool_windows(x4, g, 0.0).sum(4);
  if (divisor_override) return unbatch(sums / static_cast<double>(*divisor_override), batched);
  const Pair& p = g.pad.before;
  const bool padded = p.h > 0 || p.w > 0;
  if (g.pad.symmetric() && (count_include_pad || !padded))
    return unbatch(sums / static_cast<double>(g.k.h * g.k.w), batched);
  Tensor counts;
  {
    NoGradGuard no_grad;  // how many counted elements each window holds
    const int64_t h = x4.size(2), w = x4.size(3);
    Tensor counted = count_include_pad ? ones({1, 1, h + 2 * p.h, w + 2 * p.w}, x4.dtype())
                                       : pad_image(ones({1, 1, h, w}, x4.dtype()), symmetric(p), 0.0);
    const Padding2d extra{{0, 0}, {g.pad.after.h - p.h, g.pad.after.w - p.w}};
    counts = windows(pad_image(counted, extra, 0.0), g, false)
                 .reshape({1, 1, g.oh, g.ow, g.k.h * g.k.w})
                 .sum(4);
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
