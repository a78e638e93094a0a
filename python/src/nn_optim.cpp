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

// gt.nn.init and gt.nn.utils' clipping: gt::nn::init / gt::nn::utils (one implementation).
static void init_nn_init(py::module_& nn) {
  namespace I = gt::nn::init;
  py::module_ m = nn.def_submodule("init", "gt::nn::init");
  m.def("calculate_gain", &I::calculate_gain, "nonlinearity"_a, "param"_a = py::none());
  m.def("uniform_", &I::uniform_, "tensor"_a, "a"_a = 0.0, "b"_a = 1.0);
  m.def("normal_", &I::normal_, "tensor"_a, "mean"_a = 0.0, "std"_a = 1.0);
  m.def("constant_", [](const T& t, PyScalar v) { return I::constant_(t, v.get()); }, "tensor"_a, "val"_a);
  m.def("zeros_", &I::zeros_, "tensor"_a);
  m.def("ones_", &I::ones_, "tensor"_a);
  m.def("eye_", &I::eye_, "tensor"_a);
  m.def("xavier_uniform_", &I::xavier_uniform_, "tensor"_a, "gain"_a = 1.0);
  m.def("xavier_normal_", &I::xavier_normal_, "tensor"_a, "gain"_a = 1.0);
  auto mode_of = [](const std::string& mode) {
    if (mode == "fan_in") return I::FanMode::kFanIn;
    if (mode == "fan_out") return I::FanMode::kFanOut;
    throw py::value_error("mode must be 'fan_in' or 'fan_out', got '" + mode + "'");
  };
  m.def(
      "kaiming_uniform_",
      [mode_of](const T& t, double a, const std::string& mode, const std::string& nl) {
        return I::kaiming_uniform_(t, a, mode_of(mode), nl);
      },
      "tensor"_a, "a"_a = 0.0, "mode"_a = "fan_in", "nonlinearity"_a = "leaky_relu");
  m.def(
      "kaiming_normal_",
      [mode_of](const T& t, double a, const std::string& mode, const std::string& nl) {
        return I::kaiming_normal_(t, a, mode_of(mode), nl);
      },
      "tensor"_a, "a"_a = 0.0, "mode"_a = "fan_in", "nonlinearity"_a = "leaky_relu");
  py::module_ u = nn.def_submodule("utils", "gt::nn::utils");
  auto params = [](py::handle p) {
    return py::isinstance<T>(p) ? std::vector<T>{p.cast<T>()} : tensor_list(p, "clip_grad");
  };
  u.def(
      "clip_grad_norm_",
      [params](py::handle p, double max_norm, double norm_type) {
        return gt::nn::utils::clip_grad_norm_(params(p), max_norm, norm_type);
      },
      "parameters"_a, "max_norm"_a, "norm_type"_a = 2.0);
  u.def(
      "clip_grad_value_",
      [params](py::handle p, double clip) { gt::nn::utils::clip_grad_value_(params(p), clip); },
      "parameters"_a, "clip_value"_a);
}

void init_nn(py::module_& root) {
  py::module_ m = root.def_submodule("nn", "Parameter initialization and state-dict files of gt::nn.");
  m.def(
      "linear_init",
      [](int64_t in, int64_t out, bool bias) {
        gt::nn::Linear l(in, out, bias);
        return py::make_tuple(l->weight, opt_tensor_object(l->bias));
      },
      "in_features"_a, "out_features"_a, "bias"_a = true,
      "(weight [out, in], bias [out] or None) with PyTorch's Linear initialization.");
  m.def(
      "layer_norm_init",
      [](py::handle shape, double eps, bool affine) {
        gt::nn::LayerNorm l(dims_from_handle(shape, "LayerNorm"), eps, affine);
        return py::make_tuple(opt_tensor_object(l->weight), opt_tensor_object(l->bias));
      },
      "normalized_shape"_a, "eps"_a = 1e-5, "elementwise_affine"_a = true);
  m.def(
      "conv2d_init",
      [](int64_t in, int64_t out, py::handle kernel, int64_t groups, bool bias) {
        gt::nn::Conv2d c(gt::nn::Conv2dOptions(in, out, dims_from_handle(kernel, "Conv2d"))
                             .groups(groups)
                             .bias(bias));
        return py::make_tuple(c->weight, opt_tensor_object(c->bias));
      },
      "in_channels"_a, "out_channels"_a, "kernel_size"_a, "groups"_a = 1, "bias"_a = true,
      "(weight [out, in / groups, kh, kw], bias [out] or None) with PyTorch's Conv2d init.");
  init_nn_init(m);
  m.def(
      "embedding_init",
      [](int64_t n, int64_t d) { return gt::nn::Embedding(n, d)->weight; }, "num_embeddings"_a,
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
             return std::make_unique<optim::SGD>(
                 param_list(params), optim::SGDOptions(lr).momentum(momentum).dampening(dampening)
                                         .weight_decay(weight_decay).nesterov(nesterov));
           }),
           "params"_a, "lr"_a = 0.01, "momentum"_a = 0.0, "dampening"_a = 0.0,
           "weight_decay"_a = 0.0, "nesterov"_a = false)
      .def_property_readonly("momentum", [](const optim::SGD& s) { return s.options().momentum(); });

  auto adam_options = [](double lr, std::pair<double, double> betas, double eps, double wd,
                         bool amsgrad) {
    return optim::AdamOptions(lr).betas({betas.first, betas.second}).eps(eps).weight_decay(wd).amsgrad(amsgrad);
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
             return std::make_unique<optim::AdamW>(
                 param_list(params), optim::AdamWOptions(lr).betas({betas.first, betas.second})
                                         .eps(eps).weight_decay(wd).amsgrad(amsgrad));
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
