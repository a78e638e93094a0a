// Composite ops built in the client from primitives (ARCHITECTURE §3): they emit ordinary ops, so
// they get gradients and every backend for free. Like torch.nn.functional:
//
//   namespace F = gt::nn::functional;
//   gt::Tensor loss = F::cross_entropy(logits, labels, {.label_smoothing = 0.1});
//
// The softmax family rests on the logsumexp primitive, embedding on index_select, nll_loss /
// cross_entropy on gather; one_hot, clamp, masked_fill and var are primitives (ops.def).
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "gt/tensor.h"

namespace gt {

// Convolution padding by name (torch::kSame / torch::kValid).
enum class PaddingMode { kValid, kSame };
inline constexpr PaddingMode kValid = PaddingMode::kValid;
inline constexpr PaddingMode kSame = PaddingMode::kSame;

// ---- torch-level composites ---------------------------------------------------------------------
// Numerically stable: x - logsumexp(x) (the worker subtracts the max).
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
// Pieces of `split_size` along dim (the last may be shorter), or of the given sizes.
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
// `chunks` pieces of ceil(n / chunks) (fewer when n is small), like torch.chunk.
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
// Joins same-shaped tensors along a new dim.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Merges dims start_dim..end_dim into one.
Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim = -1);
// Batched matrix product of two 3-d tensors [b, n, m] @ [b, m, p] (torch.bmm: no broadcasting).
Tensor bmm(const Tensor& a, const Tensor& b);
// Tiles x: sizes[i] copies along dim i (x gets leading size-1 dims when sizes is longer), as
// torch's Tensor.repeat.
Tensor repeat(const Tensor& x, Dims sizes);
// Einstein summation (torch.einsum) over any number of operands: "ij,jk->ik", "bij,bjk->bik",
// "ij->ji", "i,i->", "ij" (implicit output: "..." dims first, then the letters seen once,
// sorted), diagonals ("ii->i", "ii" is the trace), "..." for broadcast dims ("...ij,...jk"),
// size-1 dims broadcasting against the letter's size elsewhere. Letters summed away are reduced
// first; each pairwise contraction (left to right) is one batched matmul.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);

namespace nn::functional {

using gt::chunk;
using gt::flatten;
using gt::log_softmax;
using gt::softmax;
using gt::split;
using gt::stack;

enum class Reduction { kNone, kMean, kSum };

// log(sum(exp(x))) over dim, stable (max-shifted on the worker; all -inf gives -inf).
Tensor logsumexp(const Tensor& x, int64_t dim, bool keepdim = false);

// ---- activations -----------------------------------------------------------------------------
// The unary ops gt/tensor_api.def marks `functional` (relu, sigmoid, tanh, ...).
#define GT_API_UNARY(name, functional) GT_API_FUNCTIONAL_##functional(name)
#define GT_API_FUNCTIONAL_0(name)
#define GT_API_FUNCTIONAL_1(name) Tensor name(const Tensor& x);
#include "gt/tensor_api.def"
#undef GT_API_FUNCTIONAL_0
#undef GT_API_FUNCTIONAL_1
Tensor silu(const Tensor& x);  // x * sigmoid(x)
// approximate = "none": 0.5 x (1 + erf(x / sqrt 2)), erf evaluated with Abramowitz-Stegun
// 7.1.26 (|error| < 1.5e-7, below float32 resolution of the result); "tanh": the tanh form.
Tensor gelu(const Tensor& x, const std::string& approximate = "none");

// Zeroes elements with probability p (from gt::rand, so reproducible after gt::manual_seed)
// and scales the rest by 1 / (1 - p); the identity when !training or p == 0.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);

// ---- layers ----------------------------------------------------------------------------------
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
// Normalizes over the trailing dims `normalized_shape`; weight/bias optional (elementwise).
Tensor layer_norm(const Tensor& x, Dims normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// Rows of `weight` [num_embeddings, dim] picked by integer `indices` (any shape) -> [..., dim],
// with index_select (an index outside [0, num_embeddings) fails at the next sync point).
Tensor embedding(const Tensor& indices, const Tensor& weight);

// ---- convolution, pooling, batch norm (functional_conv.cpp) ------------------------------------
// Inputs are [N, C, H, W] (or unbatched [C, H, W]); a pair argument is {h, w} or {both}. The
// windows are gathered with one index_select over the padded image (im2col) and contracted with
// one batched matmul, so gradients (col2im: index_select's index_add) and every backend come from
// the primitives.
// weight [out, in / groups, kh, kw], bias [out] (optional).
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              Dims stride = {1}, Dims padding = {0}, Dims dilation = {1}, int64_t groups = 1);
// padding gt::kSame (stride 1: the output has the input's size; an odd total padding puts the
// extra row / column after, as torch's) or gt::kValid (none), as libtorch's torch::kSame.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Dims stride,
              PaddingMode padding, Dims dilation = {1}, int64_t groups = 1);
// The window maximum (padding counts as -inf, at most half the kernel); stride defaults to the
// kernel size. ceil_mode: the output size rounds up (windows that start inside the input or
// its leading padding may run past its end), as torch's.
Tensor max_pool2d(const Tensor& x, Dims kernel_size, Dims stride = {}, Dims padding = {0},
                  Dims dilation = {1}, bool ceil_mode = false);
// (values, indices): torch's return_indices; each index is the maximum's position in its input
// plane (h * W + w), int64.
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, Dims kernel_size,
                                                   Dims stride = {}, Dims padding = {0},
                                                   Dims dilation = {1}, bool ceil_mode = false);
// The window mean, torch.nn.functional.avg_pool2d's arguments in its order: count_include_pad
// = false divides by the real elements only; divisor_override replaces the divisor.
Tensor avg_pool2d(const Tensor& x, Dims kernel_size, Dims stride = {}, Dims padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
// Normalizes each channel (dim 1 of [N, C, ...]) over the other dims. training: with the batch's
// statistics (biased variance), and updates running_mean / running_var in place (when given)
// with momentum and the unbiased variance, as torch; else with the running statistics.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  bool training = false, double momentum = 0.1, double eps = 1e-5);

// ---- elementwise helpers -------------------------------------------------------------------------
// [..., num_classes] with 1 at each index (int64 / int32 indices). An index outside
// [0, num_classes) is an error on the worker, raised at the next sync point (like PyTorch).
// num_classes = -1 infers max(indices) + 1 (a sync point).
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1, DType dtype = kInt64);
// Integer bounds keep an integer x's dtype (torch.clamp); a floating bound gives float32.
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);
// Variance over all elements (no dim) or one dim (unbiased: divide by n - 1); Tensor::var
// takes any correction.
Tensor var(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool unbiased = true,
           bool keepdim = false);

// ---- losses ----------------------------------------------------------------------------------
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::kMean);

struct BCEOptions {
  Tensor weight{};      // broadcast against the elementwise loss
  Tensor pos_weight{};  // with_logits only: weight of the positive term, broadcast per class
  Reduction reduction = Reduction::kMean;
};
// input: probabilities in [0, 1]; log terms are clamped at -100 like PyTorch.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BCEOptions& o = {});
// input: logits (stable for any magnitude).
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BCEOptions& o = {});

struct NLLOptions {
  Tensor weight{};  // [C] class weights
  int64_t ignore_index = -100;
  Reduction reduction = Reduction::kMean;
  double label_smoothing = 0.0;  // cross_entropy only
};
// input: log-probabilities [N, C] (or [C], or [N, C, d1, ...]); target: class indices (int64 /
// int32) [N] (or [], or [N, d1, ...]). Mean reduction divides by the summed weights of the
// non-ignored targets, like PyTorch. A target outside [0, C) that is not ignore_index fails at
// the next sync point (gather's out-of-range error).
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLOptions& o = {});
// log_softmax over the class dim + nll_loss, with optional label smoothing. A floating `target`
// of the input's shape is read as class probabilities instead.
Tensor cross_entropy(const Tensor& input, const Tensor& target, const NLLOptions& o = {});

}  // namespace nn::functional
}  // namespace gt
