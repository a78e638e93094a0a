// gt::nn: modules with parameters, like torch.nn (parameters live on the workers; modules are
// client-side objects holding tensor handles).
//
//   auto model = std::make_shared<gt::nn::Sequential>();
//   model->push_back(std::make_shared<gt::nn::Linear>(2, 64));
//   model->push_back(std::make_shared<gt::nn::ReLU>());
//   model->push_back(std::make_shared<gt::nn::Linear>(64, 3));
//   gt::Tensor logits = (*model)(x);
//   model->save("model.gtsd");
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
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Linear"; }
  Tensor weight, bias;  // bias undefined when disabled
  int64_t in_features, out_features;
};

// Applies its modules in order. Children are named "0", "1", ...
class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> m);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Sequential"; }
  size_t size() const { return modules_.size(); }
  const std::shared_ptr<Module>& operator[](size_t i) const { return modules_.at(i); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x.relu(); }
  std::string name() const override { return "ReLU"; }
};
class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none") : approximate_(std::move(approximate)) {}
  Tensor forward(const Tensor& x) override { return functional::gelu(x, approximate_); }
  std::string name() const override { return "GELU"; }

 private:
  std::string approximate_;
};
class Tanh : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x.tanh(); }
  std::string name() const override { return "Tanh"; }
};
class Sigmoid : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x.sigmoid(); }
  std::string name() const override { return "Sigmoid"; }
};
class SiLU : public Module {
 public:
  Tensor forward(const Tensor& x) override { return functional::silu(x); }
  std::string name() const override { return "SiLU"; }
};

// Normalizes over the trailing `normalized_shape`; weight = 1, bias = 0 initially.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(Dims normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "LayerNorm"; }
  Tensor weight, bias;
  std::vector<int64_t> normalized_shape;
  double eps;
};

// A lookup table [num_embeddings, dim] ~ N(0, 1); forward takes integer indices.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim);
  Tensor forward(const Tensor& indices) override;
  std::string name() const override { return "Embedding"; }
  Tensor weight;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Dropout"; }
  double p;
};

}  // namespace gt::nn
