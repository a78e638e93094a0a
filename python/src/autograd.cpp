// Autograd (grad mode, backward / grad over several tensors, tape introspection) and the
// functional composites of gt::nn::functional (activations, layers, losses), bound as-is.
#include "common.h"

namespace gtpy {
namespace {

using T = gt::Tensor;
namespace F = gt::nn::functional;

T opt_tensor(py::handle h) { return h.is_none() ? T() : h.cast<T>(); }

F::Reduction reduction(const std::string& r) {
  if (r == "mean") return F::Reduction::kMean;
  if (r == "sum") return F::Reduction::kSum;
  if (r == "none") return F::Reduction::kNone;
  throw py::value_error("reduction must be 'mean', 'sum' or 'none', got '" + r + "'");
}

std::vector<T> tensors_of(py::handle h) {
  if (py::isinstance<T>(h)) return {h.cast<T>()};
  std::vector<T> out;
  for (py::handle x : py::iter(h)) out.push_back(opt_tensor(x));
  return out;
}

}  // namespace

void init_autograd(py::module_& m) {
  m.def("is_grad_enabled", &gt::is_grad_enabled, "Whether ops are recorded for autograd (per thread).");
  m.def("set_grad_enabled", &gt::set_grad_enabled, "enabled"_a);
  m.def(
      "_backward",
      [](py::handle outputs, py::handle grad_outputs, bool retain_graph) {
        gt::autograd::backward(tensors_of(outputs),
                               grad_outputs.is_none() ? std::vector<T>{} : tensors_of(grad_outputs),
                               retain_graph);
      },
      "tensors"_a, "grad_tensors"_a = py::none(), "retain_graph"_a = false);
  m.def(
      "_grad",
      [](py::handle outputs, py::handle inputs, py::handle grad_outputs, bool retain_graph,
         bool allow_unused) {
        std::vector<T> gs = gt::autograd::grad(
            tensors_of(outputs), tensors_of(inputs),
            grad_outputs.is_none() ? std::vector<T>{} : tensors_of(grad_outputs), retain_graph,
            false);
        py::tuple out(gs.size());
        for (size_t i = 0; i < gs.size(); ++i) {
          if (gs[i].defined()) {
            out[i] = py::cast(gs[i]);
          } else if (allow_unused) {
            out[i] = py::none();
          } else {
            throw gt::Error("grad: input " + std::to_string(i) +
                            " was not used in the graph (pass allow_unused=True)");
          }
        }
        return out;
      },
      "outputs"_a, "inputs"_a, "grad_outputs"_a = py::none(), "retain_graph"_a = false,
      "allow_unused"_a = false);
  m.def("_live_nodes", &gt::autograd::live_nodes, "Autograd nodes alive in this process.");
  m.def(
      "_recorded_ops",
      [](const T& t) {
        std::vector<std::string> names;
        for (gt::OpId op : gt::autograd::recorded_ops(t)) names.emplace_back(gt::op_name(op));
        return names;
      },
      "The ops of every autograd node reachable from t (most recent first).");
}

void init_functional(py::module_& root) {
  py::module_ m = root.def_submodule("functional", "gt::nn::functional composites.");
  // The unary ops gt/tensor_api.def marks `functional` (relu, sigmoid, tanh, ...).
#define GT_API_UNARY(NAME, FUNCTIONAL) \
  if (FUNCTIONAL) m.def(#NAME, [](const T& x) { return x.NAME(); }, "input"_a);
#include "gt/tensor_api.def"
  m.def("silu", &F::silu, "input"_a);
  m.def("gelu", &F::gelu, "input"_a, "approximate"_a = "none");
  m.def("softmax", [](const T& x, int64_t dim) { return gt::softmax(x, dim); }, "input"_a, "dim"_a = -1);
  m.def("log_softmax", [](const T& x, int64_t dim) { return gt::log_softmax(x, dim); }, "input"_a,
        "dim"_a = -1);
  m.def("logsumexp", &F::logsumexp, "input"_a, "dim"_a, "keepdim"_a = false);
  m.def("dropout", &F::dropout, "input"_a, "p"_a = 0.5, "training"_a = true);
  m.def(
      "linear",
      [](const T& x, const T& w, py::handle b) { return F::linear(x, w, opt_tensor(b)); },
      "input"_a, "weight"_a, "bias"_a = py::none());
  m.def(
      "layer_norm",
      [](const T& x, py::handle shape, py::handle w, py::handle b, double eps) {
        return F::layer_norm(x, dims_from_handle(shape, "layer_norm"), opt_tensor(w), opt_tensor(b), eps);
      },
      "input"_a, "normalized_shape"_a, "weight"_a = py::none(), "bias"_a = py::none(), "eps"_a = 1e-5);
  m.def("embedding", &F::embedding, "input"_a, "weight"_a);
  // Convolution and pooling: sizes as an int or an (h, w) tuple; padding also 'same' / 'valid'.
  auto opt_dims = [](py::handle d, const char* op) {
    return d.is_none() ? std::vector<int64_t>{} : dims_from_handle(d, op);
  };
  m.def(
      "conv2d",
      [](const T& x, const T& w, py::handle b, py::handle stride, py::handle padding,
         py::handle dilation, int64_t groups) {
        if (py::isinstance<py::str>(padding)) {
          const std::string mode = padding.cast<std::string>();
          if (mode != "same" && mode != "valid")
            throw py::value_error("conv2d: padding must be 'same', 'valid', an int or a tuple, "
                                  "got '" + mode + "'");
          return F::conv2d(x, w, opt_tensor(b), dims_from_handle(stride, "conv2d"),
                           mode == "same" ? gt::kSame : gt::kValid,
                           dims_from_handle(dilation, "conv2d"), groups);
        }
        return F::conv2d(x, w, opt_tensor(b), dims_from_handle(stride, "conv2d"),
                         dims_from_handle(padding, "conv2d"), dims_from_handle(dilation, "conv2d"),
                         groups);
      },
      "input"_a, "weight"_a, "bias"_a = py::none(), "stride"_a = 1, "padding"_a = 0,
      "dilation"_a = 1, "groups"_a = 1);
  m.def(
      "max_pool2d",
      [opt_dims](const T& x, py::handle k, py::handle stride, py::handle padding,
                 py::handle dilation, bool ceil_mode, bool return_indices) -> py::object {
        const auto ks = dims_from_handle(k, "max_pool2d"), ss = opt_dims(stride, "max_pool2d"),
                   ps = dims_from_handle(padding, "max_pool2d"),
                   ds = dims_from_handle(dilation, "max_pool2d");
        if (return_indices) {
          auto [v, i] = F::max_pool2d_with_indices(x, ks, ss, ps, ds, ceil_mode);
          return py::make_tuple(v, i);
        }
        return py::cast(F::max_pool2d(x, ks, ss, ps, ds, ceil_mode));
      },
      "input"_a, "kernel_size"_a, "stride"_a = py::none(), "padding"_a = 0, "dilation"_a = 1,
      "ceil_mode"_a = false, "return_indices"_a = false);
  m.def(
      "avg_pool2d",
      [opt_dims](const T& x, py::handle k, py::handle stride, py::handle padding, bool ceil_mode,
                 bool count_include_pad, py::handle divisor_override) {
        std::optional<int64_t> divisor;
        if (!divisor_override.is_none()) divisor = divisor_override.cast<int64_t>();
        return F::avg_pool2d(x, dims_from_handle(k, "avg_pool2d"), opt_dims(stride, "avg_pool2d"),
                             dims_from_handle(padding, "avg_pool2d"), ceil_mode,
                             count_include_pad, divisor);
      },
      "input"_a, "kernel_size"_a, "stride"_a = py::none(), "padding"_a = 0, "ceil_mode"_a = false,
      "count_include_pad"_a = true, "divisor_override"_a = py::none());
  m.def(
      "batch_norm",
      [](const T& x, py::handle rm, py::handle rv, py::handle w, py::handle b, bool training,
         double momentum, double eps) {
        return F::batch_norm(x, opt_tensor(rm), opt_tensor(rv), opt_tensor(w), opt_tensor(b),
                             training, momentum, eps);
      },
      "input"_a, "running_mean"_a, "running_var"_a, "weight"_a = py::none(),
      "bias"_a = py::none(), "training"_a = false, "momentum"_a = 0.1, "eps"_a = 1e-5);
  m.def(
      "one_hot",
      [](const T& idx, int64_t n, py::handle dtype) { return F::one_hot(idx, n, to_dtype(dtype, gt::kInt64)); },
      "input"_a, "num_classes"_a = -1, "dtype"_a = py::none());
  m.def(
      "clamp",
      [](const T& x, std::optional<PyScalar> lo, std::optional<PyScalar> hi) {
        return F::clamp(x, lo ? std::optional<gt::Scalar>(lo->get()) : std::nullopt,
                        hi ? std::optional<gt::Scalar>(hi->get()) : std::nullopt);
      },
      "input"_a, "min"_a = py::none(), "max"_a = py::none());
  m.def(
      "masked_fill", [](const T& x, const T& mask, PyScalar v) { return F::masked_fill(x, mask, v.get()); },
      "input"_a, "mask"_a, "value"_a);
  m.def("var", &F::var, "input"_a, "dim"_a = py::none(), "unbiased"_a = true, "keepdim"_a = false);
  m.def("flatten", [](const T& x, int64_t s, int64_t e) { return gt::flatten(x, s, e); }, "input"_a,
        "start_dim"_a = 0, "end_dim"_a = -1);

  m.def(
      "mse_loss",
      [](const T& x, const T& y, const std::string& r) { return F::mse_loss(x, y, reduction(r)); },
      "input"_a, "target"_a, "reduction"_a = "mean");
  m.def(
      "binary_cross_entropy",
      [](const T& x, const T& y, py::handle w, const std::string& r) {
        F::BCEOptions o;
        o.weight = opt_tensor(w);
        o.reduction = reduction(r);
        return F::binary_cross_entropy(x, y, o);
      },
      "input"_a, "target"_a, "weight"_a = py::none(), "reduction"_a = "mean");
  m.def(
      "binary_cross_entropy_with_logits",
      [](const T& x, const T& y, py::handle w, py::handle pw, const std::string& r) {
        F::BCEOptions o;
        o.weight = opt_tensor(w);
        o.pos_weight = opt_tensor(pw);
        o.reduction = reduction(r);
        return F::binary_cross_entropy_with_logits(x, y, o);
      },
      "input"_a, "target"_a, "weight"_a = py::none(), "pos_weight"_a = py::none(),
      "reduction"_a = "mean");
  m.def(
      "nll_loss",
      [](const T& x, const T& y, py::handle w, int64_t ignore, const std::string& r) {
        F::NLLOptions o;
        o.weight = opt_tensor(w);
        o.ignore_index = ignore;
        o.reduction = reduction(r);
        return F::nll_loss(x, y, o);
      },
      "input"_a, "target"_a, "weight"_a = py::none(), "ignore_index"_a = -100, "reduction"_a = "mean");
  m.def(
      "cross_entropy",
      [](const T& x, const T& y, py::handle w, int64_t ignore, const std::string& r, double ls) {
        F::NLLOptions o;
        o.weight = opt_tensor(w);
        o.ignore_index = ignore;
        o.reduction = reduction(r);
        o.label_smoothing = ls;
        return F::cross_entropy(x, y, o);
      },
      "input"_a, "target"_a, "weight"_a = py::none(), "ignore_index"_a = -100, "reduction"_a = "mean",
      "label_smoothing"_a = 0.0);
}

}  // namespace gtpy
