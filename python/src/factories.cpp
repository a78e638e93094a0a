// Tensor creation: randn / rand / zeros / ones / full / arange (+ *_like), gt.tensor /
// gt.from_numpy uploads, and the multi-tensor free functions (cat, stack, where).
#include "common.h"

namespace gtpy {
namespace {

using T = gt::Tensor;

T finish(T t, bool requires_grad) {
  if (requires_grad) t.requires_grad_(true);
  return t;
}

int64_t axis_or_dim(int64_t axis, py::handle dim) { return dim.is_none() ? axis : dim.cast<int64_t>(); }

}  // namespace

std::vector<T> tensor_list(py::handle seq, const char* what) {
  std::vector<T> out;
  for (py::handle h : py::iter(seq)) {
    if (!py::isinstance<T>(h))
      throw py::type_error(std::string(what) + ": expected a sequence of gt.Tensor, got an item of type " +
                           std::string(py::str(py::type::handle_of(h))));
    out.push_back(h.cast<T>());
  }
  return out;
}

void init_factories(py::module_& m) {
#define GT_PY_FACTORY(NAME, DOC)                                                             \
  m.def(                                                                                     \
      #NAME,                                                                                 \
      [](py::args shape, py::handle dtype, bool requires_grad, py::handle device) {          \
        DevicePin pin(device);                                                               \
        return finish(gt::NAME(dims_from_args(shape, #NAME), to_dtype(dtype)), requires_grad); \
      },                                                                                     \
      py::kw_only(), "dtype"_a = py::none(), "requires_grad"_a = false,                      \
      "device"_a = py::none(), DOC);                                                         \
  m.def(                                                                                     \
      #NAME "_like",                                                                         \
      [](const T& like, py::handle dtype, bool requires_grad, py::handle device) {           \
        DevicePin pin(like, device);                                                         \
        return finish(gt::NAME(like.shape(), to_dtype(dtype, like.dtype())), requires_grad); \
      },                                                                                     \
      "input"_a, py::kw_only(), "dtype"_a = py::none(), "requires_grad"_a = false,           \
      "device"_a = py::none());
  GT_PY_FACTORY(randn, "gt.randn(*shape, dtype=None, requires_grad=False): standard normal values "
                       "(reproducible after gt.manual_seed).")
  GT_PY_FACTORY(rand, "gt.rand(*shape, dtype=None, requires_grad=False): uniform values in [0, 1).")
  GT_PY_FACTORY(zeros, "gt.zeros(*shape, dtype=None, requires_grad=False)")
  GT_PY_FACTORY(ones, "gt.ones(*shape, dtype=None, requires_grad=False)")
  GT_PY_FACTORY(empty, "gt.empty(*shape, dtype=None, requires_grad=False): zeros (a worker never "
                       "hands out bytes another session left behind).")
#undef GT_PY_FACTORY

  m.def(
      "full",
      [](py::handle shape, PyScalar value, py::handle dtype, bool requires_grad, py::handle device) {
        DevicePin pin(device);
        return finish(gt::full(dims_from_handle(shape, "full"), value.get(), to_optional_dtype(dtype)),
                      requires_grad);
      },
      "shape"_a, "fill_value"_a, py::kw_only(), "dtype"_a = py::none(), "requires_grad"_a = false,
      "device"_a = py::none());
  m.def(
      "full_like",
      [](const T& like, PyScalar value, py::handle dtype, bool requires_grad, py::handle device) {
        DevicePin pin(like, device);
        return finish(gt::full(like.shape(), value.get(), to_dtype(dtype, like.dtype())), requires_grad);
      },
      "input"_a, "fill_value"_a, py::kw_only(), "dtype"_a = py::none(), "requires_grad"_a = false,
      "device"_a = py::none());
  m.def(
      "arange",
      [](PyScalar start, std::optional<PyScalar> end, PyScalar step, py::handle dtype,
         bool requires_grad, py::handle device) {
        DevicePin pin(device);
        std::optional<gt::DType> dt = to_optional_dtype(dtype);
        if (!end) return finish(gt::arange(gt::Scalar(int64_t{0}), start.get(), step.get(), dt), requires_grad);
        return finish(gt::arange(start.get(), end->get(), step.get(), dt), requires_grad);
      },
      "start"_a, "end"_a = py::none(), "step"_a = PyScalar{1, true, false}, py::kw_only(),
      "dtype"_a = py::none(), "requires_grad"_a = false, "device"_a = py::none(),
      "gt.arange(end) or gt.arange(start, end, step=1): int64 for integer arguments, else float32.");

  m.def(
      "eye",
      [](int64_t n, std::optional<int64_t> cols, py::handle dtype, bool requires_grad, py::handle device) {
        DevicePin pin(device);
        return finish(gt::eye(n, cols, to_dtype(dtype)), requires_grad);
      },
      "n"_a, "m"_a = py::none(), py::kw_only(), "dtype"_a = py::none(), "requires_grad"_a = false,
      "device"_a = py::none(),
      "gt.eye(n, m=None): the n x m identity (float32 by default).");
  m.def(
      "linspace",
      [](double start, double end, int64_t steps, py::handle dtype, bool requires_grad,
         py::handle device) {
        DevicePin pin(device);
        return finish(gt::linspace(start, end, steps, to_dtype(dtype)), requires_grad);
      },
      "start"_a, "end"_a, "steps"_a, py::kw_only(), "dtype"_a = py::none(),
      "requires_grad"_a = false, "device"_a = py::none(),
      "gt.linspace(start, end, steps): evenly spaced, both ends included (torch.linspace).");
  m.def(
      "randint",
      [](py::args args, py::handle size, py::handle dtype, py::handle device) {
        DevicePin pin(device);
        // torch.randint(high, size) or randint(low, high, size); size also by keyword.
        std::vector<py::handle> pos(args.begin(), args.end());
        if (!size.is_none()) pos.push_back(size);
        if (pos.size() != 2 && pos.size() != 3)
          throw py::type_error("randint: expected randint(high, size) or randint(low, high, size)");
        const int64_t low = pos.size() == 3 ? pos[0].cast<int64_t>() : 0;
        const int64_t high = pos[pos.size() - 2].cast<int64_t>();
        return gt::randint(low, high, dims_from_handle(pos.back(), "randint"),
                           to_dtype(dtype, gt::kInt64));
      },
      py::kw_only(), "size"_a = py::none(), "dtype"_a = py::none(), "device"_a = py::none(),
      "gt.randint(low=0, high, size, dtype=gt.int64): uniform integers in [low, high) "
      "(reproducible after gt.manual_seed).");

  m.def(
      "tensor",
      [](py::handle data, py::handle dtype, bool requires_grad, py::handle device) {
        DevicePin pin(device);
        if (py::isinstance<T>(data)) {
          const T& src = data.cast<const T&>();
          // A copy, always (torch.tensor(t) copies): on `device`'s worker when one is given.
          const gt::DType dt = to_dtype(dtype, src.dtype());
          std::optional<gt::Device> d = device_from(device);
          const bool moves = d && d->worker() >= 0 && d->worker() != src.get_device();
          return finish(moves ? src.detach().to(*d, dt) : src.detach().cast(dt), requires_grad);
        }
        if (!dtype.is_none()) return finish(from_numpy_as(data, to_dtype(dtype)), requires_grad);
        // torch's inference: Python ints -> int64, floats -> float32, bools -> bool, an array
        // keeps its dtype. Integer data that must require grad becomes
        // float32, as the original GT's gt.tensor([1, 2], requires_grad=True) did (torch raises:
        // only floating tensors require grad).
        const bool is_array = py::isinstance<py::array>(data);
        py::object arr = py::module_::import("numpy").attr("asarray")(data);
        gt::DType dt = numpy_upload_dtype(arr);
        // Python floats (numpy reads them as float64) give torch's default dtype, float32.
        if (!is_array && dt == gt::kFloat64) dt = gt::kFloat32;
        if (requires_grad && !gt::is_floating(dt)) dt = gt::kFloat32;
        return finish(from_numpy_as(arr, dt), requires_grad);
      },
      "data"_a, "dtype"_a = py::none(), "requires_grad"_a = false, "device"_a = py::none(),
      "gt.tensor(data, dtype=None, requires_grad=False): uploads the values; the dtype is "
      "inferred as torch.tensor's (ints -> int64, floats -> float32, bools -> bool).");
  m.def(
      "from_numpy",
      [](const py::array& array, bool requires_grad) {
        return finish(from_numpy_as(array, numpy_upload_dtype(array)), requires_grad);
      },
      "array"_a, "requires_grad"_a = false,
      "Uploads a numpy array keeping its dtype (int16 / uint16 -> int32, uint32 / uint64 -> int64).");

  m.def(
      "cat",
      [](py::handle tensors, int64_t axis, py::handle dim) {
        return gt::cat(tensor_list(tensors, "cat"), axis_or_dim(axis, dim));
      },
      "tensors"_a, "axis"_a = 0, py::kw_only(), "dim"_a = py::none());
  m.def(
      "stack",
      [](py::handle tensors, int64_t axis, py::handle dim) {
        return gt::stack(tensor_list(tensors, "stack"), axis_or_dim(axis, dim));
      },
      "tensors"_a, "axis"_a = 0, py::kw_only(), "dim"_a = py::none());

  m.def("bmm", &gt::bmm, "input"_a, "mat2"_a, "Batched matrix product of two 3-d tensors.");
  m.def(
      "einsum",
      [](const std::string& equation, py::args operands) {
        // torch.einsum(eq, a, b) or torch.einsum(eq, [a, b])
        if (operands.size() == 1 && !py::isinstance<T>(operands[0]))
          return gt::einsum(equation, tensor_list(operands[0], "einsum"));
        return gt::einsum(equation, tensor_list(operands, "einsum"));
      },
      "equation"_a,
      "gt.einsum('ij,jk->ik', a, b): Einstein summation over one or two operands.");
  m.def("where", [](const T& c, const T& a, const T& b) { return gt::where(c, a, b); });
  m.def("where", [](const T& c, PyScalar a, const T& b) { return gt::where(c, a.get(), b); });
  m.def("where", [](const T& c, const T& a, PyScalar b) { return gt::where(c, a, b.get()); });
  m.def("where", [](const T& c, PyScalar a, PyScalar b) { return gt::where(c, a.get(), b.get()); });
}

}  // namespace gtpy
