// gt::nn parameter initialization and state-dict files, and gt::optim (SGD, Adam, AdamW, LR
// schedules), bound for the Python gt.nn / gt.optim modules. The Python Module classes hold the
// parameter tensors; the C++ modules are used to create them (PyTorch's initializations), the
// C++ optimizers update them in place on the workers.
#include "common.h"

namespace gtpy {
namespace {

using T = gt::Tensor;
namespace optim = gt::optim;

py::object opt_tensor_object(const T& t) {
  if (!t.defined()) return py::none();
  return py::cast(t);
}

std::vector<T> param_list(py::handle params) {
  std::vector<T> ps = tensor_list(params, "optimizer");
  if (ps.empty()) throw gt::Error("optimizer: got an empty parameter list");
  return ps;
}

}  // namespace

void init_nn(py::module_& root) {
  py::module_ m = root.def_submodule("nn", "Parameter initialization and state-dict files of gt::nn.");
  m.def(
      "linear_init",
      [](int64_t in, int64_t out, bool bias) {
        gt::nn::Linear l(in, out, bias);
        return py::make_tuple(l.weight, opt_tensor_object(l.bias));
      },
      "in_features"_a, "out_features"_a, "bias"_a = true,
      "(weight [out, in], bias [out] or None) with PyTorch's Linear initialization.");
  m.def(
      "layer_norm_init",
      [](py::handle shape, double eps, bool affine) {
        gt::nn::LayerNorm l(dims_from_handle(shape, "LayerNorm"), eps, affine);
        return py::make_tuple(opt_tensor_object(l.weight), opt_tensor_object(l.bias));
      },
      "normalized_shape"_a, "eps"_a = 1e-5, "elementwise_affine"_a = true);
  m.def(
      "embedding_init",
      [](int64_t n, int64_t d) { return gt::nn::Embedding(n, d).weight; }, "num_embeddings"_a,
      "embedding_dim"_a);
  m.def(
      "save_state_dict",
      [](const std::vector<std::pair<std::string, T>>& state, const std::string& path) {
        gt::nn::StateDict sd(state.begin(), state.end());
        sync_point([&] { gt::nn::save_state_dict(sd, path); });
      },
      "state"_a, "path"_a, "Writes (name, tensor) pairs to a GTSD file (a sync point).");
  m.def(
      "load_state_dict_file",
      [](const std::string& path) {
        gt::nn::StateDict sd = gt::nn::load_state_dict_file(path);
        return std::vector<std::pair<std::string, T>>(sd.begin(), sd.end());
      },
      "path"_a, "Reads a GTSD file as a list of (name, tensor) pairs.");
}

void init_optim(py::module_& root) {
  py::module_ m = root.def_submodule("optim", "gt::optim optimizers and schedules.");
  py::class_<optim::Optimizer>(m, "Optimizer")
      .def("step", &optim::Optimizer::step, "One update of every parameter that has a .grad.")
      .def("zero_grad", &optim::Optimizer::zero_grad, "set_to_none"_a = true)
      .def_property("lr", &optim::Optimizer::lr, &optim::Optimizer::set_lr)
      .def_property_readonly("params", [](const optim::Optimizer& o) { return o.params(); });

  py::class_<optim::SGD, optim::Optimizer>(m, "SGD")
      .def(py::init([](py::handle params, double lr, double momentum, double dampening,
                       double weight_decay, bool nesterov) {
             optim::SGDOptions o;
             o.lr = lr;
             o.momentum = momentum;
             o.dampening = dampening;
             o.weight_decay = weight_decay;
             o.nesterov = nesterov;
             return std::make_unique<optim::SGD>(param_list(params), o);
           }),
           "params"_a, "lr"_a = 0.01, "momentum"_a = 0.0, "dampening"_a = 0.0,
           "weight_decay"_a = 0.0, "nesterov"_a = false)
      .def_property_readonly("momentum", [](const optim::SGD& s) { return s.options().momentum; });

  auto adam_options = [](double lr, std::pair<double, double> betas, double eps, double wd,
                         bool amsgrad) {
    optim::AdamOptions o;
    o.lr = lr;
    o.beta1 = betas.first;
    o.beta2 = betas.second;
    o.eps = eps;
    o.weight_decay = wd;
    o.amsgrad = amsgrad;
    return o;
  };
  py::class_<optim::Adam, optim::Optimizer>(m, "Adam")
      .def(py::init([adam_options](py::handle params, double lr, std::pair<double, double> betas,
                                   double eps, double wd, bool amsgrad) {
             return std::make_unique<optim::Adam>(param_list(params),
                                                  adam_options(lr, betas, eps, wd, amsgrad));
           }),
           "params"_a, "lr"_a = 1e-3, "betas"_a = std::make_pair(0.9, 0.999), "eps"_a = 1e-8,
           "weight_decay"_a = 0.0, "amsgrad"_a = false);
  py::class_<optim::AdamW, optim::Adam>(m, "AdamW")
      .def(py::init([](py::handle params, double lr, std::pair<double, double> betas, double eps,
                       double wd, bool amsgrad) {
             optim::AdamWOptions o;
             o.lr = lr;
             o.beta1 = betas.first;
             o.beta2 = betas.second;
             o.eps = eps;
             o.weight_decay = wd;
             o.amsgrad = amsgrad;
             return std::make_unique<optim::AdamW>(param_list(params), o);
           }),
           "params"_a, "lr"_a = 1e-3, "betas"_a = std::make_pair(0.9, 0.999), "eps"_a = 1e-8,
           "weight_decay"_a = 1e-2, "amsgrad"_a = false);

  py::class_<optim::LRScheduler>(m, "LRScheduler")
      .def("step", &optim::LRScheduler::step)
      .def_property_readonly("last_epoch", &optim::LRScheduler::last_epoch)
      .def("get_last_lr", [](const optim::LRScheduler& s) { return std::vector<double>{s.get_last_lr()}; });
  py::class_<optim::StepLR, optim::LRScheduler>(m, "StepLR")
      .def(py::init<optim::Optimizer&, int64_t, double>(), "optimizer"_a, "step_size"_a,
           "gamma"_a = 0.1, py::keep_alive<1, 2>());
  py::class_<optim::CosineAnnealingLR, optim::LRScheduler>(m, "CosineAnnealingLR")
      .def(py::init<optim::Optimizer&, int64_t, double>(), "optimizer"_a, "T_max"_a,
           "eta_min"_a = 0.0, py::keep_alive<1, 2>());
}

}  // namespace gtpy
