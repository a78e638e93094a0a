// Composites: softmax family, split/chunk/stack/flatten, activations, dropout, linear,
// layer_norm, embedding, one_hot, clamp, masked_fill, var. Losses are in functional_losses.cpp.
// The softmax family rests on the logsumexp primitive (max-shifted on the worker; its gradient
// is softmax), embedding on index_select (gradient: index_add), and one_hot / clamp /
// masked_fill / var are the primitives themselves.
#include <cmath>
#include <string>

#include "gt/autograd.h"
#include "gt/functional.h"
#include "libgtclient/autograd_node.h"
#include "libgtclient/run_op.h"
#include "libgtclient/view.h"

namespace gt {
namespace {

int64_t dim_of(const Tensor& x, int64_t dim, const char* what) {
  return detail::normalize_dim_or_throw(dim, x.dim(), what);
}

// The shift of softmax / log_softmax: logsumexp over dim (kept), NaN where it is infinite.
// torch's softmax and log_softmax give NaN for the whole of a row holding +inf (its kernel
// subtracts the row max: inf - inf is NaN, and so is the row's sum), while x - logsumexp would
// be NaN only at the +inf and -inf / 0 elsewhere. (An all -inf row is NaN either way, as in
// torch: -inf - -inf.) lse - lse is 0 or NaN; it is made without recording, so the gradient
// reaches logsumexp unchanged.
Tensor softmax_shift(const Tensor& x, int64_t dim) {
  Tensor lse = x.logsumexp(dim, true);
  Tensor nan_where_inf;
  {
    NoGradGuard no_grad;
    nan_where_inf = lse - lse;
  }
  return lse + nan_where_inf;
}

// float16 / bfloat16 compute in float32 and round once, as PyTorch's kernels do (its opmath
// type), instead of rounding every intermediate step.
bool is_half_type(const Tensor& x) { return x.dtype() == kFloat16 || x.dtype() == kBFloat16; }

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) {
  detail::require_floating(x, "softmax");
  dim = dim_of(x, dim, "softmax");
  if (is_half_type(x)) return softmax(x.to(kFloat32), dim).to(x.dtype());
  return (x - softmax_shift(x, dim)).exp();
}

Tensor log_softmax(const Tensor& x, int64_t dim) {
  detail::require_floating(x, "log_softmax");
  dim = dim_of(x, dim, "log_softmax");
  if (is_half_type(x)) return log_softmax(x.to(kFloat32), dim).to(x.dtype());
  return x - softmax_shift(x, dim);
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  if (split_size <= 0 && !(split_size == 0 && x.dim() > 0 && x.size(dim) == 0))
    throw Error("split: split_size must be positive, got " + std::to_string(split_size));
  dim = dim_of(x, dim, "split");
  const int64_t n = x.size(dim);
  std::vector<int64_t> sizes;
  for (int64_t off = 0; off < n; off += split_size) sizes.push_back(std::min(split_size, n - off));
  if (sizes.empty()) sizes.push_back(0);
  return split(x, sizes, dim);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  dim = dim_of(x, dim, "split");
  const int64_t n = x.size(dim);
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw Error("split: sizes must be non-negative");
    total += s;
  }
  if (total != n)
    throw Error("split: sizes sum to " + std::to_string(total) + " but dim " +
                std::to_string(dim) + " has size " + std::to_string(n));
  std::vector<Tensor> out;
  int64_t off = 0;
  for (int64_t s : sizes) {
    out.push_back(x.slice(dim, off, off + s));
    detail::mark_split_part(out.back());
    off += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  if (chunks <= 0) throw Error("chunk: chunks must be positive, got " + std::to_string(chunks));
  dim = dim_of(x, dim, "chunk");
  const int64_t n = x.size(dim);
  const int64_t size = (n + chunks - 1) / chunks;
  // An empty dim gives `chunks` empty pieces (PyTorch's), not one.
  if (size == 0) {
    std::vector<Tensor> out;
    for (int64_t i = 0; i < chunks; ++i) {
      out.push_back(x.slice(dim, 0, 0));
      detail::mark_split_part(out.back());
    }
    return out;
  }
  return split(x, size, dim);
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw Error("stack: expects a non-empty list of tensors");
  const Shape& s0 = tensors[0].shape();
  dim = detail::normalize_dim_or_throw(dim, s0.rank() + 1, "stack");
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].shape() != s0)
      throw Error("stack: expects each tensor to be equal size, but got " + s0.str() +
                  " at entry 0 and " + tensors[i].shape().str() + " at entry " +
                  std::to_string(i));
    parts.push_back(tensors[i].unsqueeze(dim));
  }
  return cat(parts, dim);
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  if (x.dim() == 0) return x.reshape({1});
  const int64_t s = dim_of(x, start_dim, "flatten"), e = dim_of(x, end_dim, "flatten");
  if (s > e) throw Error("flatten: start_dim cannot come after end_dim");
  if (s == e) return x;
  std::vector<int64_t> shape;
  int64_t merged = 1;
  for (int64_t i = 0; i < x.dim(); ++i) {
    if (i < s || i > e) {
      shape.push_back(x.size(i));
    } else {
      merged *= x.size(i);
      if (i == e) shape.push_back(merged);
    }
  }
  return x.reshape(shape);
}

namespace nn::functional {

Tensor logsumexp(const Tensor& x, int64_t dim, bool keepdim) { return x.logsumexp(dim, keepdim); }

#define GT_API_UNARY(name, functional) GT_API_FUNCTIONAL_##functional(name)
#define GT_API_FUNCTIONAL_0(name)
#define GT_API_FUNCTIONAL_1(name) \
  Tensor name(const Tensor& x) { return x.name(); }
#include "gt/tensor_api.def"
#undef GT_API_FUNCTIONAL_0
#undef GT_API_FUNCTIONAL_1
// One op each (ops.def): torch's kernels, computed in float32 for the half types and rounded
// once, with gradients in torch's operation order (autograd_rules.cpp). Torch refuses integer
// inputs to both.
Tensor silu(const Tensor& x) {
  detail::require_floating(x, "silu");
  return detail::run_op(OpId::k_silu, OpAttrs{}, {&x});
}

Tensor gelu(const Tensor& x, const std::string& approximate) {
  detail::require_floating(x, "gelu");
  if (approximate != "none" && approximate != "tanh")
    throw Error("gelu: approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  return detail::run_op(approximate == "tanh" ? OpId::k_gelu_tanh : OpId::k_gelu, OpAttrs{}, {&x});
}

Tensor dropout(const Tensor& x, double p, bool training) {
  if (p < 0 || p > 1)
    throw Error("dropout: probability has to be between 0 and 1, but got " + std::to_string(p));
  if (!training || p == 0) return x;
  if (p == 1) return x * 0.0;
  Tensor keep = rand(x.shape(), is_floating(x.dtype()) ? x.dtype() : kFloat32) >= p;
  return (x * keep) * (1.0 / (1.0 - p));
}

// x W^T (+ b), with torch's gradient for it: dW = G^T X (G and X over the flattened leading
// dims) and dX = G W, one matmul each. As the plain composite (matmul of x and W.t()), dW would
// come out as (X^T G)^T: a transpose of an [in, out] product, the size of the weight (often the
// largest tensor of a step), on every backward pass; this form transposes only G.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (weight.dim() != 2 || x.dim() == 0) {  // matmul's own errors, or a vector weight
    Tensor y = x.matmul(weight.t());
    return bias.defined() ? y + bias : y;
  }
  Tensor y;
  {
    NoGradGuard no_grad;
    y = x.matmul(weight.t());
  }
  namespace ad = autograd::detail;
  const bool x_needs = ad::requires_grad(*x.impl());
  const bool w_needs = ad::requires_grad(*weight.impl());
  const Tensor* ins[] = {&x, &weight};
  const uint32_t save = (w_needs ? 0b01u : 0u) | (x_needs ? 0b10u : 0u);
  y = ad::record_function("MmBackward", y, ins, save, [](ad::GradCtx& c) {
    if (c.node.needs(0)) c.in_grads[0] = c.grad.matmul(c.node.saved_input(1));
    if (c.node.needs(1)) {
      const Tensor xs = c.node.saved_input(0);
      int64_t rows = 1;  // the leading dims, flattened
      for (int64_t d = 0; d + 1 < xs.dim(); ++d) rows *= xs.size(d);
      const int64_t in = xs.size(-1);
      const bool flat = xs.dim() == 2;
      const Tensor g2 = flat ? c.grad : c.grad.reshape({rows, c.grad.size(-1)});
      c.in_grads[1] = g2.t().matmul(flat ? xs : xs.reshape({rows, in}));
    }
  });
  return bias.defined() ? y + bias : y;
}

Tensor layer_norm(const Tensor& x, Dims normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  detail::require_floating(x, "layer_norm");
  if (is_half_type(x)) {  // in float32, rounded once (is_half_type); weight and bias too
    const Tensor w = weight.defined() ? weight.to(kFloat32) : weight;
    const Tensor b = bias.defined() ? bias.to(kFloat32) : bias;
    return layer_norm(x.to(kFloat32), std::move(normalized_shape), w, b, eps).to(x.dtype());
  }
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  if (k == 0 || k > x.dim())
    throw Error("layer_norm: normalized_shape has " + std::to_string(k) +
                " dims for an input of rank " + std::to_string(x.dim()));
  int64_t n = 1;
  for (int64_t i = 0; i < k; ++i) {
    if (x.size(x.dim() - k + i) != normalized_shape[static_cast<size_t>(i)])
      throw Error("layer_norm: input shape " + x.shape().str() +
                  " does not end with normalized_shape");
    n *= normalized_shape[static_cast<size_t>(i)];
  }
  Tensor xr = x;
  if (k > 1) {
    std::vector<int64_t> s(x.shape().begin(), x.shape().end() - k);
    s.push_back(n);
    xr = x.reshape(s);
  }
  Tensor xc = xr - xr.mean(-1, true);
  Tensor var = (xc * xc).mean(-1, true);
  Tensor y = xc / (var + eps).sqrt();
  if (k > 1) y = y.reshape(x.shape());
  if (weight.defined()) y = y * weight;
  if (bias.defined()) y = y + bias;
  return y;
}

Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype) {
  if (indices.dtype() != kInt64 && indices.dtype() != kInt32)
    throw Error("one_hot: indices must be an integer tensor (int64 or int32), got " +
                std::string(dtype_name(indices.dtype())));
  if (num_classes < 0) {
    if (num_classes != -1) throw Error("one_hot: num_classes must be positive or -1");
    // As PyTorch: there is no max to infer the class count from.
    if (indices.numel() == 0)
      throw Error("one_hot: can not infer the total number of classes from an empty tensor");
    num_classes = indices.max().item<int64_t>() + 1;
  }
  Tensor hot = detail::run_op(OpId::k_one_hot, make_num_classes(num_classes), {&indices});
  return dtype == kInt64 ? hot : hot.cast(dtype);
}

Tensor embedding(const Tensor& indices, const Tensor& weight) {
  if (weight.dim() != 2)
    throw Error("embedding: weight must be 2-D [num_embeddings, dim], got " +
                weight.shape().str());
  if (indices.dim() == 1) return weight.index_select(0, indices);
  std::vector<int64_t> shape = indices.sizes();
  shape.push_back(weight.size(1));
  return weight.index_select(0, indices.flatten()).reshape(shape);
}

Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  return x.clamp(min, max);
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value) {
  return x.masked_fill(mask, value);
}

Tensor var(const Tensor& x, std::optional<int64_t> dim, bool unbiased, bool keepdim) {
  return x.var(dim, unbiased ? 1.0 : 0.0, keepdim);
}

}  // namespace nn::functional
}  // namespace gt
