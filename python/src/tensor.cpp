// gt.Tensor: accessors, sync points (item, numpy, printing), autograd and in-place methods.
// Arithmetic / layout methods are in tensor_ops.cpp, indexing in indexing.cpp.
#include <sstream>

#include "common.h"

namespace gtpy {
namespace {

py::object item_of(const gt::Tensor& t) {
  if (t.numel() != 1)
    throw gt::Error("item: a tensor with " + std::to_string(t.numel()) +
                    " elements cannot be converted to a Python number");
  gt::Tensor h = t;
  gt::DType dt = t.dtype();
  if (gt::is_floating(dt)) return py::float_(sync_point([&] { return h.item<double>(); }));
  if (dt == gt::DType::kBool) return py::bool_(sync_point([&] { return h.item<bool>(); }));
  return py::int_(sync_point([&] { return h.item<int64_t>(); }));
}

std::string repr_of(const gt::Tensor& t) {
  gt::Tensor h = t;
  gt::TensorMeta meta = t.meta();
  std::string bytes = sync_point([&] { return h.to_bytes(); });
  std::string s = gt::format_tensor(meta, bytes, t.is_cuda() ? t.device().str() : "");
  std::string suffix;
  std::string fn = t.grad_fn_name();
  if (!fn.empty()) suffix = ", grad_fn=<" + fn + ">";
  else if (t.requires_grad()) suffix = ", requires_grad=True";
  if (!suffix.empty() && !s.empty() && s.back() == ')') s.insert(s.size() - 1, suffix);
  return s;
}

gt::Tensor gradient_arg(py::handle g, const gt::Tensor& like) {
  if (g.is_none()) return gt::Tensor();
  if (py::isinstance<gt::Tensor>(g)) return g.cast<gt::Tensor>();
  return from_numpy_as(g, like.dtype());
}

// In-place methods return the same Python object (so `a += b` keeps `a`'s identity).
template <typename F>
py::object in_place(py::object self, F&& f) {
  f(self.cast<const gt::Tensor&>());
  return self;
}

}  // namespace

void init_tensor(py::module_& m) {
  py::class_<gt::Tensor> cls(m, "Tensor", R"doc(
A handle to a tensor that lives on the GT workers.

Ops return at once (the instruction is queued and pipelined); sync points -- item(), numpy(),
numpy.asarray(t), print(t), gt.synchronize() -- wait for the values and raise gt.WorkerError for
any failure reported by the workers. Shape/dtype errors raise gt.ShapeError (a ValueError) where
the op is called.)doc");

  cls.def_property_readonly("shape", [](const gt::Tensor& t) { return shape_tuple(t.shape()); },
                            "The sizes, as a tuple.")
      .def_property_readonly("dtype", [](const gt::Tensor& t) { return dtype_object(t.dtype()); })
      .def_property_readonly("ndim", &gt::Tensor::dim)
      .def("dim", &gt::Tensor::dim)
      .def("numel", &gt::Tensor::numel)
      .def(
          "size",
          [](const gt::Tensor& t, py::object d) -> py::object {
            if (d.is_none()) return shape_tuple(t.shape());
            return py::int_(t.size(d.cast<int64_t>()));
          },
          "dim"_a = py::none())
      .def_property_readonly("id", &gt::Tensor::id,
                             "The tensor's id, unique in this session (the original GT's t.id).")
      .def_property_readonly("_id", &gt::Tensor::id, "The tensor's id in this session.")
      .def("__len__",
           [](const gt::Tensor& t) {
             if (t.dim() == 0) throw py::type_error("len() of a 0-d tensor");
             return t.shape()[0];
           })
      .def("__hash__", [](py::handle self) { return reinterpret_cast<intptr_t>(self.ptr()); })
      // ---- sync points ------------------------------------------------------------------------
      .def("item", &item_of, "The value of a one-element tensor as a Python number (a sync point).")
      .def("numpy", &to_numpy, "The values as a new numpy array (a sync point).")
      .def(
          "__array__",
          [](const gt::Tensor& t, py::object dtype, py::object) -> py::object {
            py::array a = to_numpy(t);
            if (dtype.is_none()) return py::object(std::move(a));
            return a.attr("astype")(dtype);
          },
          "dtype"_a = py::none(), "copy"_a = py::none())
      .def("tolist", [](const gt::Tensor& t) { return to_numpy(t).attr("tolist")(); })
      .def("__repr__", &repr_of)
      .def("__str__", &repr_of)
      .def("__float__", [](const gt::Tensor& t) { return item_of(t).cast<double>(); })
      // int(t) truncates like int(2.7) (NaN: ValueError, inf: OverflowError, as torch).
      .def("__int__",
           [](const gt::Tensor& t) {
             py::object v = item_of(t);
             PyObject* r = PyNumber_Long(v.ptr());
             if (r == nullptr) throw py::error_already_set();
             return py::reinterpret_steal<py::object>(r);
           })
      // Integer one-element tensors are usable as indices (range(t), lst[t]), as in torch.
      .def("__index__",
           [](const gt::Tensor& t) {
             if (gt::is_floating(t.dtype()))
               throw py::type_error("only integer tensors of a single element can be converted to an index");
             return item_of(t).cast<int64_t>();
           })
      .def("__bool__",
           [](const gt::Tensor& t) {
             if (t.numel() != 1)
               throw gt::Error("bool: the truth value of a tensor with " +
                               std::to_string(t.numel()) +
                               " elements is ambiguous (use .sum(), .max(), ...)");
             return item_of(t).cast<bool>();
           })
      // ---- autograd ---------------------------------------------------------------------------
      .def_property(
          "requires_grad", [](const gt::Tensor& t) { return t.requires_grad(); },
          [](const gt::Tensor& t, bool on) { t.requires_grad_(on); })
      .def(
          "requires_grad_",
          [](py::object self, bool on) {
            return in_place(std::move(self), [&](const gt::Tensor& t) { t.requires_grad_(on); });
          },
          "requires_grad"_a = true)
      .def_property(
          "grad",
          [](const gt::Tensor& t) -> py::object {
            gt::Tensor g = t.grad();
            if (!g.defined()) return py::none();
            return py::cast(std::move(g));
          },
          [](const gt::Tensor& t, py::object g) {
            if (g.is_none()) t.set_grad(gt::Tensor());
            else t.set_grad(g.cast<gt::Tensor>());
          },
          "The accumulated gradient (None until a backward pass reaches this tensor).")
      .def_property_readonly("is_leaf", &gt::Tensor::is_leaf)
      .def_property_readonly("grad_fn",
                             [](const gt::Tensor& t) -> py::object {
                               std::string n = t.grad_fn_name();
                               if (n.empty()) return py::none();
                               return py::str(n);
                             })
      .def(
          "backward",
          [](const gt::Tensor& t, py::object gradient, bool retain_graph) {
            t.backward(gradient_arg(gradient, t), retain_graph);
          },
          "gradient"_a = py::none(), "retain_graph"_a = false,
          "Backpropagates into the .grad of the leaves (gradient defaults to 1 for a "
          "one-element tensor).")
      .def("retain_grad", &gt::Tensor::retain_grad)
      .def("detach", &gt::Tensor::detach)
      .def("clone", &gt::Tensor::clone)
      // ---- in-place ---------------------------------------------------------------------------
      .def("zero_",
           [](py::object self) {
             return in_place(std::move(self), [](const gt::Tensor& t) { t.zero_(); });
           })
      .def("fill_",
           [](py::object self, PyScalar v) {
             return in_place(std::move(self), [&](const gt::Tensor& t) { t.fill_(v.get()); });
           })
      .def("copy_", [](py::object self, const gt::Tensor& src) {
        return in_place(std::move(self), [&](const gt::Tensor& t) { t.copy_(src); });
      });

#define GT_PY_INPLACE(name, pyname, method)                                                 \
  cls.def(                                                                                  \
      name,                                                                                 \
      [](py::object self, const gt::Tensor& o) {                                            \
        return in_place(std::move(self), [&](const gt::Tensor& t) { t.method(o); });        \
      },                                                                                    \
      py::is_operator());                                                                   \
  cls.def(                                                                                  \
      name,                                                                                 \
      [](py::object self, PyScalar o) {                                                     \
        return in_place(std::move(self), [&](const gt::Tensor& t) { t.method(o.get()); });  \
      },                                                                                    \
      py::is_operator());                                                                   \
  cls.def(pyname, [](py::object self, const gt::Tensor& o) {                                \
    return in_place(std::move(self), [&](const gt::Tensor& t) { t.method(o); });            \
  });                                                                                       \
  cls.def(pyname, [](py::object self, PyScalar o) {                                         \
    return in_place(std::move(self), [&](const gt::Tensor& t) { t.method(o.get()); });      \
  });
  GT_PY_INPLACE("__iadd__", "add_", add_)
  GT_PY_INPLACE("__isub__", "sub_", sub_)
  GT_PY_INPLACE("__imul__", "mul_", mul_)
  GT_PY_INPLACE("__itruediv__", "div_", div_)
  GT_PY_INPLACE("__ipow__", "pow_", pow_)
#undef GT_PY_INPLACE
  // add_/sub_(other, alpha=a): self += a * other (torch's alpha).
  cls.def(
      "add_",
      [](py::object self, const gt::Tensor& o, PyScalar alpha) {
        return in_place(std::move(self), [&](const gt::Tensor& t) { t.add_(o, alpha.get()); });
      },
      "other"_a, py::kw_only(), "alpha"_a);
  cls.def(
      "sub_",
      [](py::object self, const gt::Tensor& o, PyScalar alpha) {
        return in_place(std::move(self), [&](const gt::Tensor& t) { t.sub_(o, alpha.get()); });
      },
      "other"_a, py::kw_only(), "alpha"_a);
  // In-place forms of the unary table ops (x.relu_(), ...), clamp_ and masked_fill_.
#define GT_API_UNARY(NAME, FUNCTIONAL)                                                       \
  cls.def(#NAME "_", [](py::object self) {                                                   \
    return in_place(std::move(self), [](const gt::Tensor& t) { t.NAME##_(); });              \
  });
#include "gt/tensor_api.def"
  cls.def(
      "clamp_",
      [](py::object self, std::optional<PyScalar> lo, std::optional<PyScalar> hi) {
        return in_place(std::move(self), [&](const gt::Tensor& t) {
          t.clamp_(lo ? std::optional<gt::Scalar>(lo->get()) : std::nullopt,
                   hi ? std::optional<gt::Scalar>(hi->get()) : std::nullopt);
        });
      },
      "min"_a = py::none(), "max"_a = py::none());
  cls.def(
      "masked_fill_",
      [](py::object self, const gt::Tensor& mask, PyScalar v) {
        return in_place(std::move(self), [&](const gt::Tensor& t) { t.masked_fill_(mask, v.get()); });
      },
      "mask"_a, "value"_a);

  // numpy defers `ndarray op tensor` to the tensor's reflected operator (like PyTorch).
  cls.attr("__array_priority__") = 1000;

  init_tensor_ops(m, cls);
  init_indexing(cls);
  init_tensor_device(cls);
}

}  // namespace gtpy
