// gt::nn modules: the Module tree (parameters, buffers, children, train/eval, zero_grad,
// state dicts) and the standard layers. State-dict files: nn_state_dict.cpp.
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "gt/autograd.h"
#include "gt/nn.h"

namespace gt::nn {

// ---- Module -----------------------------------------------------------------------------------
Tensor Module::forward(const Tensor&) {
  throw Error(name() + ": forward(const Tensor&) is not implemented by this module");
}

namespace {
void check_name(const std::string& name, const char* what) {
  if (name.empty() || name.find('.') != std::string::npos)
    throw Error(std::string(what) + ": name \"" + name + "\" must be non-empty and have no '.'");
}
}  // namespace

Tensor Module::register_parameter(const std::string& name, Tensor t, bool requires_grad) {
  check_name(name, "register_parameter");
  for (const auto& [n, _] : params_)
    if (n == name) throw Error("register_parameter: parameter \"" + name + "\" already exists");
  if (!t.defined()) throw Error("register_parameter: \"" + name + "\" is undefined");
  if (!t.is_leaf()) t = t.detach();
  if (requires_grad) t.requires_grad_(true);
  params_.emplace_back(name, t);
  return t;
}

Tensor Module::register_buffer(const std::string& name, Tensor t) {
  check_name(name, "register_buffer");
  if (!t.defined()) throw Error("register_buffer: \"" + name + "\" is undefined");
  buffers_.emplace_back(name, t);
  return t;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> m) {
  check_name(name, "register_module");
  if (!m) throw Error("register_module: \"" + name + "\" is null");
  for (const auto& [n, _] : children_)
    if (n == name) throw Error("register_module: module \"" + name + "\" already exists");
  children_.emplace_back(name, std::move(m));
}

void Module::collect(const std::string& prefix, bool params, bool recurse,
                     std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [n, t] : params ? params_ : buffers_) out.emplace_back(prefix + n, t);
  if (!recurse) return;
  for (const auto& [n, m] : children_) m->collect(prefix + n + ".", params, true, out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", true, recurse, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [_, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", false, recurse, out);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [_, m] : children_) out.push_back(m);
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& [_, m] : children_) m->train(on);
}

void Module::to(const Device& device, std::optional<DType> dtype) {
  auto move = [&](const Tensor& t) {
    detail::move_in_place(t, device, is_floating(t.dtype()) ? dtype : std::nullopt);
  };
  for (const Tensor& p : parameters()) move(p);
  for (const auto& [name, b] : named_buffers()) move(b);
}

void Module::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (const Tensor& p : parameters()) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      p.grad().zero_();
    }
  }
}

StateDict Module::state_dict() const {
  StateDict sd = named_parameters();
  for (auto& b : named_buffers()) sd.push_back(std::move(b));
  return sd;
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  StateDict own = state_dict();
  std::map<std::string, const Tensor*> given;
  for (const auto& [n, t] : state) {
    if (!given.emplace(n, &t).second)
      throw Error("load_state_dict: the state dict has \"" + n + "\" twice");
  }
  std::set<std::string> own_names;
  std::string missing, shape_errors;
  for (const auto& [n, t] : own) {
    own_names.insert(n);
    auto it = given.find(n);
    if (it == given.end()) {
      missing += (missing.empty() ? "\"" : ", \"") + n + "\"";
      continue;
    }
    const Tensor& src = *it->second;
    if (!src.defined()) {
      shape_errors += "\n  \"" + n + "\" is undefined";
    } else if (src.shape() != t.shape() || src.dtype() != t.dtype()) {
      shape_errors += "\n  \"" + n + "\": the file has " + std::string(dtype_name(src.dtype())) +
                      " " + src.shape().str() + ", the module has " +
                      dtype_name(t.dtype()) + " " + t.shape().str();
    }
  }
  std::string unexpected;
  for (const auto& [n, _] : state)
    if (!own_names.count(n)) unexpected += (unexpected.empty() ? "\"" : ", \"") + n + "\"";
  std::string err;
  if (strict && !missing.empty()) err += "\n  missing keys: " + missing;
  if (strict && !unexpected.empty()) err += "\n  unexpected keys: " + unexpected;
  if (!shape_errors.empty()) err += "\n  size/dtype mismatches:" + shape_errors;
  if (!err.empty()) throw Error("load_state_dict: error(s) loading the state dict for " + name() + ":" + err);

  NoGradGuard no_grad;
  for (const auto& [n, t] : own) {
    auto it = given.find(n);
    if (it != given.end()) t.copy_(*it->second);
  }
}

// ---- layers -----------------------------------------------------------------------------------
namespace {

// U(-bound, bound) of `shape`, computed on the workers, outside the tape.
Tensor uniform(Dims shape, double bound) {
  NoGradGuard no_grad;
  return (rand(shape) * 2.0 - 1.0) * bound;
}

}  // namespace

LinearImpl::LinearImpl(int64_t in, int64_t out, bool with_bias) : in_features(in), out_features(out) {
  if (in <= 0 || out <= 0)
    throw Error("Linear: in_features and out_features must be positive, got " +
                std::to_string(in) + " and " + std::to_string(out));
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  weight = register_parameter("weight", uniform({out, in}, bound));
  if (with_bias) bias = register_parameter("bias", uniform({out}, bound));
}

Tensor LinearImpl::forward(const Tensor& x) { return functional::linear(x, weight, bias); }

SequentialImpl::SequentialImpl(std::vector<std::shared_ptr<Module>> modules) {
  for (auto& m : modules) push_back(std::move(m));
}

void SequentialImpl::push_back(std::shared_ptr<Module> m) {
  add_child(std::to_string(modules_.size()), m);
  modules_.push_back(std::move(m));
}

Tensor SequentialImpl::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& m : modules_) y = m->forward(y);
  return y;
}

LayerNormImpl::LayerNormImpl(Dims shape, double eps_, bool affine)
    : normalized_shape(shape.vec()), eps(eps_) {
  if (shape.size() == 0) throw Error("LayerNorm: normalized_shape must not be empty");
  if (affine) {
    weight = register_parameter("weight", ones(shape));
    bias = register_parameter("bias", zeros(shape));
  }
}

Tensor LayerNormImpl::forward(const Tensor& x) {
  return functional::layer_norm(x, normalized_shape, weight, bias, eps);
}

EmbeddingImpl::EmbeddingImpl(int64_t num, int64_t dim) {
  if (num <= 0 || dim <= 0)
    throw Error("Embedding: num_embeddings and embedding_dim must be positive");
  weight = register_parameter("weight", randn({num, dim}));
}

Tensor EmbeddingImpl::forward(const Tensor& indices) { return functional::embedding(indices, weight); }

DropoutImpl::DropoutImpl(double p_) : p(p_) {
  if (p < 0 || p > 1)
    throw Error("Dropout: probability has to be between 0 and 1, but got " + std::to_string(p));
}

Tensor DropoutImpl::forward(const Tensor& x) { return functional::dropout(x, p, is_training()); }

}  // namespace gt::nn
