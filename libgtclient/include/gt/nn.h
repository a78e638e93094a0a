// gt::nn: modules with parameters, like torch.nn (parameters live on the workers; modules are
// client-side objects holding tensor handles).
//
//   gt::nn::Sequential model(gt::nn::Linear(2, 64), gt::nn::ReLU(), gt::nn::Linear(64, 3));
//   gt::Tensor logits = model(x);
//   model->save("model.gtsd");
//
// As in libtorch, each module class is XImpl and X its holder (gt/module_holder.h): a shared
// pointer with value syntax (`fc(x)`, `fc->weight`).
//
// State-dict files ("GTSD", version 1; every integer little-endian):
//   magic "GTSD" (4 bytes) | u32 version = 1 | u64 entry count
//   per entry: u32 name length | name (UTF-8, dotted path, e.g. "0.weight") |
//              u8 dtype (gt::DType value: 0 float32, 1 float16, 2 bfloat16, 3 int32, 4 int64,
//              5 bool) | u8 rank | rank x i64 dims | u64 byte count | the row-major bytes
// Loading checks the magic/version, every name (missing and unexpected ones are listed), shape,
// dtype and byte count, and fails with a clear message before modifying any parameter.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gt/functional.h"
#include "gt/module_holder.h"
#include "gt/tensor.h"

namespace gt::nn {

// Ordered (name, tensor) pairs: parameters then buffers, children recursively, dotted names.
using StateDict = std::vector<std::pair<std::string, Tensor>>;

// Writes / reads a state-dict file (format above). Reading uploads each tensor to GT.
void save_state_dict(const StateDict& state, const std::string& path);
StateDict load_state_dict_file(const std::string& path);

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The single-input forward used by Sequential and operator(); modules with other signatures
  // add their own forward overloads.
  virtual Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }
  virtual std::string name() const { return "Module"; }

  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const {
    return children_;
  }
  std::vector<std::shared_ptr<Module>> children() const;

  // Training mode (dropout is active), recursively. Modules start in training mode.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Moves every parameter and buffer to `device` and converts the floating ones to `dtype`, in
  // place: handles already taken (an optimizer's) follow, as torch's Module::to.
  void to(const Device& device, std::optional<DType> dtype = std::nullopt);
  void to(DType dtype) { to(Device(kAuto), dtype); }

  // Clears (set_to_none, PyTorch's default) or zeroes every parameter's .grad.
  void zero_grad(bool set_to_none = true);

  StateDict state_dict() const;
  // Copies values into the existing parameters/buffers (handles stay valid; outside the tape).
  // strict: every name must match both ways. Shapes and dtypes must always match.
  void load_state_dict(const StateDict& state, bool strict = true);
  void save(const std::string& path) const { save_state_dict(state_dict(), path); }
  void load(const std::string& path, bool strict = true) {
    load_state_dict(load_state_dict_file(path), strict);
  }

 protected:
  // Registers a leaf parameter (marked requires_grad) and returns it.
  Tensor register_parameter(const std::string& name, Tensor t, bool requires_grad = true);
  Tensor register_buffer(const std::string& name, Tensor t);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    add_child(name, m);
    return m;
  }
  template <IsModuleHolder H>
  H register_module(const std::string& name, H m) {
    add_child(name, m.ptr());
    return m;
  }
  void add_child(const std::string& name, std::shared_ptr<Module> m);

 private:
  void collect(const std::string& prefix, bool params, bool recurse,
               std::vector<std::pair<std::string, Tensor>>& out) const;

  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// y = x W^T + b, W [out, in]. PyTorch's default init: W and b ~ U(-1/sqrt(in), 1/sqrt(in))
// (kaiming_uniform with a = sqrt(5)), drawn with gt::rand (reproducible after manual_seed).
class LinearImpl : public Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Linear"; }
  Tensor weight, bias;  // bias undefined when disabled
  int64_t in_features, out_features;
};
GT_MODULE(Linear);

// Applies its modules in order. Children are named "0", "1", ...
class SequentialImpl : public Module {
 public:
  SequentialImpl() = default;
  explicit SequentialImpl(std::vector<std::shared_ptr<Module>> modules);
  // Sequential(Linear(4, 8), ReLU(), ...): holders or shared pointers of modules, in order.
  template <class... Ms>
    requires(sizeof...(Ms) > 0 && (std::is_convertible_v<Ms, std::shared_ptr<Module>> && ...))
  explicit SequentialImpl(Ms&&... modules) {
    (push_back(std::shared_ptr<Module>(std::forward<Ms>(modules))), ...);
  }
  void push_back(std::shared_ptr<Module> m);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Sequential"; }
  size_t size() const { return modules_.size(); }
  const std::shared_ptr<Module>& operator[](size_t i) const { return modules_.at(i); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};
GT_MODULE(Sequential);

class ReLUImpl : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x.relu(); }
  std::string name() const override { return "ReLU"; }
};
GT_MODULE(ReLU);
class GELUImpl : public Module {
 public:
  explicit GELUImpl(std::string approximate = "none") : approximate_(std::move(approximate)) {}
  Tensor forward(const Tensor& x) override { return functional::gelu(x, approximate_); }
  std::string name() const override { return "GELU"; }

 private:
  std::string approximate_;
};
GT_MODULE(GELU);
class TanhImpl : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x.tanh(); }
  std::string name() const override { return "Tanh"; }
};
GT_MODULE(Tanh);
class SigmoidImpl : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x.sigmoid(); }
  std::string name() const override { return "Sigmoid"; }
};
GT_MODULE(Sigmoid);
class SiLUImpl : public Module {
 public:
  Tensor forward(const Tensor& x) override { return functional::silu(x); }
  std::string name() const override { return "SiLU"; }
};
GT_MODULE(SiLU);

// Normalizes over the trailing `normalized_shape`; weight = 1, bias = 0 initially.
class LayerNormImpl : public Module {
 public:
  explicit LayerNormImpl(Dims normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "LayerNorm"; }
  Tensor weight, bias;
  std::vector<int64_t> normalized_shape;
  double eps;
};
GT_MODULE(LayerNorm);

// A lookup table [num_embeddings, dim] ~ N(0, 1); forward takes integer indices.
class EmbeddingImpl : public Module {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim);
  Tensor forward(const Tensor& indices) override;
  std::string name() const override { return "Embedding"; }
  Tensor weight;
};
GT_MODULE(Embedding);

class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Dropout"; }
  double p;
};
GT_MODULE(Dropout);

// ---- convolution, pooling, batch norm (nn_conv.cpp) -------------------------------------------
// torch::nn::Conv2dOptions-style builder: Conv2d(Conv2dOptions(1, 8, 3).padding(1).bias(false)).
struct Conv2dOptions {
  Conv2dOptions(int64_t in_channels, int64_t out_channels, Dims kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size.vec()) {}
  Conv2dOptions& stride(Dims v) { stride_ = v.vec(); return *this; }
  Conv2dOptions& padding(Dims v) { padding_ = v.vec(); padding_mode_.reset(); return *this; }
  Conv2dOptions& padding(PaddingMode mode) { padding_mode_ = mode; return *this; }  // gt::kSame
  Conv2dOptions& dilation(Dims v) { dilation_ = v.vec(); return *this; }
  Conv2dOptions& groups(int64_t v) { groups_ = v; return *this; }
  Conv2dOptions& bias(bool v) { bias_ = v; return *this; }
  int64_t in_channels_, out_channels_;
  std::vector<int64_t> kernel_size_, stride_{1}, padding_{0}, dilation_{1};
  std::optional<PaddingMode> padding_mode_;  // set: it, not padding_
  int64_t groups_ = 1;
  bool bias_ = true;
};

// 2-d convolution (functional::conv2d); weight [out, in / groups, kh, kw] and bias [out] ~
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in / groups * kh * kw (PyTorch's init).
class Conv2dImpl : public Module {
 public:
  explicit Conv2dImpl(const Conv2dOptions& options);
  Conv2dImpl(int64_t in_channels, int64_t out_channels, Dims kernel_size)
      : Conv2dImpl(Conv2dOptions(in_channels, out_channels, kernel_size)) {}
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Conv2d"; }
  Tensor weight, bias;  // bias undefined when disabled
  Conv2dOptions options;
};
GT_MODULE(Conv2d);

class MaxPool2dImpl : public Module {
 public:
  explicit MaxPool2dImpl(Dims kernel_size, Dims stride = {}, Dims padding = {0},
                         Dims dilation = {1}, bool ceil_mode = false)
      : kernel_size(kernel_size.vec()), stride(stride.vec()), padding(padding.vec()),
        dilation(dilation.vec()), ceil_mode(ceil_mode) {}
  Tensor forward(const Tensor& x) override {
    return functional::max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode);
  }
  // (values, indices), as libtorch's MaxPool2d::forward_with_indices.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x) {
    return functional::max_pool2d_with_indices(x, kernel_size, stride, padding, dilation,
                                               ceil_mode);
  }
  std::string name() const override { return "MaxPool2d"; }
  std::vector<int64_t> kernel_size, stride, padding, dilation;
  bool ceil_mode;
};
GT_MODULE(MaxPool2d);

class AvgPool2dImpl : public Module {
 public:
  explicit AvgPool2dImpl(Dims kernel_size, Dims stride = {}, Dims padding = {0},
                         bool ceil_mode = false, bool count_include_pad = true,
                         std::optional<int64_t> divisor_override = std::nullopt)
      : kernel_size(kernel_size.vec()), stride(stride.vec()), padding(padding.vec()),
        ceil_mode(ceil_mode), count_include_pad(count_include_pad),
        divisor_override(divisor_override) {}
  Tensor forward(const Tensor& x) override {
    return functional::avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                  divisor_override);
  }
  std::string name() const override { return "AvgPool2d"; }
  std::vector<int64_t> kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
  std::optional<int64_t> divisor_override;
};
GT_MODULE(AvgPool2d);

// Merges dims start_dim..end_dim (torch.nn.Flatten: from dim 1, keeping the batch).
class FlattenImpl : public Module {
 public:
  explicit FlattenImpl(int64_t start_dim = 1, int64_t end_dim = -1)
      : start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) override { return gt::flatten(x, start_dim, end_dim); }
  std::string name() const override { return "Flatten"; }
  int64_t start_dim, end_dim;
};
GT_MODULE(Flatten);

// Per-channel normalization (functional::batch_norm): weight = 1, bias = 0 (affine); buffers
// running_mean = 0, running_var = 1 and num_batches_tracked (int64, 0-d) when tracking. Training
// uses the batch's statistics and updates the running ones; eval() uses the running ones.
class BatchNorm : public Module {
 public:
  BatchNorm(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = true,
            bool track_running_stats = true);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  int64_t num_features;
  double eps, momentum;
  bool track_running_stats;

 protected:
  virtual void check_rank(const Tensor& x) const = 0;
};
class BatchNorm1dImpl : public BatchNorm {  // [N, C] or [N, C, L]
 public:
  using BatchNorm::BatchNorm;
  std::string name() const override { return "BatchNorm1d"; }

 protected:
  void check_rank(const Tensor& x) const override;
};
GT_MODULE(BatchNorm1d);
class BatchNorm2dImpl : public BatchNorm {  // [N, C, H, W]
 public:
  using BatchNorm::BatchNorm;
  std::string name() const override { return "BatchNorm2d"; }

 protected:
  void check_rank(const Tensor& x) const override;
};
GT_MODULE(BatchNorm2d);

// ---- initialization and gradient clipping (nn_init.cpp), as torch.nn.init / torch.nn.utils ----
// Each init writes new values into the tensor outside the tape (NoGradGuard + copy_/fill_) and
// returns it; random values come from gt::rand / gt::randn (reproducible after manual_seed).
namespace init {
// torch.nn.init.calculate_gain's table; `param` is leaky_relu's negative slope (0.01 default).
double calculate_gain(const std::string& nonlinearity, std::optional<double> param = std::nullopt);
const Tensor& uniform_(const Tensor& t, double a = 0, double b = 1);
const Tensor& normal_(const Tensor& t, double mean = 0, double std = 1);
const Tensor& constant_(const Tensor& t, Scalar value);
const Tensor& zeros_(const Tensor& t);
const Tensor& ones_(const Tensor& t);
const Tensor& eye_(const Tensor& t);  // 2-d only
// Fans: fan_in = size(1) * receptive field, fan_out = size(0) * receptive field (rank >= 2).
const Tensor& xavier_uniform_(const Tensor& t, double gain = 1);
const Tensor& xavier_normal_(const Tensor& t, double gain = 1);
enum class FanMode { kFanIn, kFanOut };
const Tensor& kaiming_uniform_(const Tensor& t, double a = 0, FanMode mode = FanMode::kFanIn,
                               const std::string& nonlinearity = "leaky_relu");
const Tensor& kaiming_normal_(const Tensor& t, double a = 0, FanMode mode = FanMode::kFanIn,
                              const std::string& nonlinearity = "leaky_relu");
}  // namespace init

namespace utils {
// Scales the defined .grad of `parameters` in place so their joint norm_type-norm is at most
// max_norm; returns the norm before clipping (0-d, computed on the workers: no round trip).
// norm_type may be infinity.
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2);
// Clamps every gradient element into [-clip_value, clip_value], in place.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
}  // namespace utils

}  // namespace gt::nn
