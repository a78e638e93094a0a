// One pre-norm transformer block (2-head causal self-attention + GELU MLP) learning the next
// character of a repeated string, trained with AdamW through GT.
//
//   tiny_transformer [--steps N]   (GT_ADDRESS selects a dispatcher; else the embedded default)
//
// Prints progress lines and, last, "loss ratio: final/initial" (exit status 0 when <= 0.5).
#include <gt/gt.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace F = gt::nn::functional;
namespace nn = gt::nn;
using gt::Tensor;

// Causal multi-head self-attention over [B, T, D].
class CausalSelfAttention : public nn::Module {
 public:
  CausalSelfAttention(int64_t d_model, int64_t heads, int64_t context)
      : d_(d_model), h_(heads), hd_(d_model / heads) {
    qkv_ = register_module("qkv", nn::Linear(d_model, 3 * d_model));
    proj_ = register_module("proj", nn::Linear(d_model, d_model));
    std::vector<bool> future(static_cast<size_t>(context * context));
    for (int64_t i = 0; i < context; ++i)
      for (int64_t j = 0; j < context; ++j) future[static_cast<size_t>(i * context + j)] = j > i;
    mask_ = register_buffer("mask", gt::from_vector(future, {context, context}));
  }

  Tensor forward(const Tensor& x) override {
    const int64_t b = x.size(0), t = x.size(1);
    std::vector<Tensor> qkv = gt::split(qkv_(x), d_, 2);  // 3 x [B, T, D]
    auto heads = [&](const Tensor& z) { return z.reshape({b, t, h_, hd_}).permute({0, 2, 1, 3}); };
    Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);  // [B, H, T, hd]
    Tensor att = q.matmul(k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hd_)));
    Tensor causal = mask_.slice(0, 0, t).slice(1, 0, t);
    att = gt::softmax(F::masked_fill(att, causal, -std::numeric_limits<double>::infinity()), -1);
    Tensor y = att.matmul(v).permute({0, 2, 1, 3}).reshape({b, t, d_});
    return proj_(y);
  }

 private:
  int64_t d_, h_, hd_;
  nn::Linear qkv_{nullptr}, proj_{nullptr};
  Tensor mask_;
};

class TinyTransformer : public nn::Module {
 public:
  TinyTransformer(int64_t vocab, int64_t context, int64_t d_model, int64_t heads) {
    tok_ = register_module("tok", nn::Embedding(vocab, d_model));
    pos_ = register_parameter("pos", gt::randn({context, d_model}) * 0.1);
    ln1_ = register_module("ln1", nn::LayerNorm(gt::Dims{d_model}));
    attn_ = register_module("attn", std::make_shared<CausalSelfAttention>(d_model, heads, context));
    ln2_ = register_module("ln2", nn::LayerNorm(gt::Dims{d_model}));
    mlp_ = register_module("mlp", nn::Sequential(nn::Linear(d_model, 4 * d_model),
                                                  nn::GELU("tanh"),
                                                  nn::Linear(4 * d_model, d_model)));
    lnf_ = register_module("lnf", nn::LayerNorm(gt::Dims{d_model}));
    head_ = register_module("head", nn::Linear(d_model, vocab));
  }

  // idx: [B, T] int64 -> logits [B, T, vocab]
  Tensor forward(const Tensor& idx) override {
    const int64_t t = idx.size(1);
    Tensor x = tok_(idx) + pos_.slice(0, 0, t);
    x = x + (*attn_)(ln1_(x));
    x = x + mlp_(ln2_(x));
    return head_(lnf_(x));
  }

 private:
  nn::Embedding tok_{nullptr};
  Tensor pos_;
  nn::LayerNorm ln1_{nullptr}, ln2_{nullptr}, lnf_{nullptr};
  std::shared_ptr<CausalSelfAttention> attn_;
  nn::Sequential mlp_{nullptr};
  nn::Linear head_{nullptr};
};

int main(int argc, char** argv) {
  int steps = 120;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--steps" && i + 1 < argc) steps = std::atoi(argv[++i]);

  const std::string pattern = "hello gt! ";
  std::map<char, int64_t> vocab;
  for (char c : pattern) vocab.emplace(c, 0);
  int64_t next = 0;
  for (auto& [c, id] : vocab) id = next++;
  const int64_t v = next, context = 16, batch = static_cast<int64_t>(pattern.size());

  // Every rotation of the pattern as one sequence; targets are the inputs shifted by one.
  std::vector<int64_t> inputs, targets;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < context; ++t) {
      inputs.push_back(vocab[pattern[(b + t) % pattern.size()]]);
      targets.push_back(vocab[pattern[(b + t + 1) % pattern.size()]]);
    }
  Tensor x = gt::from_vector(inputs, {batch, context}, gt::kInt64);
  Tensor y = gt::from_vector(targets, {batch * context}, gt::kInt64);

  gt::manual_seed(0);
  TinyTransformer model(v, context, /*d_model=*/32, /*heads=*/2);
  gt::optim::AdamW opt(model.parameters(), gt::optim::AdamWOptions(1e-2).weight_decay(1e-2));
  std::printf("vocab %lld, context %lld, batch %lld, %zu parameter tensors\n",
              static_cast<long long>(v), static_cast<long long>(context),
              static_cast<long long>(batch), model.parameters().size());

  double first = 0, last = 0;
  for (int step = 1; step <= steps; ++step) {
    opt.zero_grad();
    Tensor logits = model(x).reshape({batch * context, v});
    Tensor loss = F::cross_entropy(logits, y);
    loss.backward();
    opt.step();
    if (step == 1 || step % 20 == 0 || step == steps) {
      last = loss.item<double>();
      if (step == 1) first = last;
      std::printf("step %4d  loss %.4f\n", step, last);
      std::fflush(stdout);
    }
  }
  const double ratio = last / first;
  std::printf("loss ratio: %.4f\n", ratio);
  return ratio <= 0.5 ? 0 : 1;
}
