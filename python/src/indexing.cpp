// t[...]: Python indexing lowered to gt::Tensor::index / index_put_ (libgtclient/indexing.cpp,
// advanced_index.cpp). Ints (0-d integer tensors too), slices (any step), None and Ellipsis
// select a view of t, as in PyTorch; integer indices out of range raise IndexError (so
// iteration protocols and numpy habits work). Tensors, lists and numpy arrays are advanced
// indices, as torch's: integer ones pick positions (several broadcast together and pick
// element-wise), bool masks the positions where they are true (a sync point: the count decides
// the shape); the result is a copy. t[...] = value writes in place through the same plan.
#include "common.h"

namespace gtpy {
namespace {

std::optional<int64_t> slice_bound(PyObject* o) {
  if (o == Py_None) return std::nullopt;
  Py_ssize_t v = PyNumber_AsSsize_t(o, nullptr);  // __index__; saturates instead of overflowing
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return static_cast<int64_t>(v);
}

bool is_integer_index(PyObject* o) {
  return !PyBool_Check(o) && (PyLong_Check(o) || (PyIndex_Check(o) && !PyFloat_Check(o) &&
                                                   !py::isinstance<gt::Tensor>(o)));
}

bool is_scalar_index_tensor(py::handle h) {
  if (!py::isinstance<gt::Tensor>(h)) return false;
  const gt::Tensor& t = h.cast<const gt::Tensor&>();
  return t.dim() == 0 && (t.dtype() == gt::DType::kInt64 || t.dtype() == gt::DType::kInt32);
}

// An index that selects by values (a tensor, list or array): a copy, not a view.
bool is_advanced_index(py::handle idx) {
  return (py::isinstance<gt::Tensor>(idx) && !is_scalar_index_tensor(idx)) ||
         PyList_Check(idx.ptr()) || py::isinstance<py::array>(idx);
}

gt::TensorIndex to_index(py::handle h) {
  PyObject* o = h.ptr();
  if (o == Py_None) return gt::None;
  if (o == Py_Ellipsis) return gt::Ellipsis;
  if (PySlice_Check(o)) {
    auto* s = reinterpret_cast<PySliceObject*>(o);
    std::optional<int64_t> step = slice_bound(s->step);
    return gt::Slice(slice_bound(s->start), slice_bound(s->stop),
                     step ? gt::SliceBound(*step) : gt::SliceBound());
  }
  if (is_integer_index(o)) {
    Py_ssize_t v = PyNumber_AsSsize_t(o, PyExc_IndexError);
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    return static_cast<int64_t>(v);
  }
  if (is_scalar_index_tensor(h)) {
    // A 0-d integer tensor indexes as the integer it holds (PyTorch's; a view, not a copy):
    // reading it is a sync point, as it is for a CUDA tensor in PyTorch.
    return h.cast<gt::Tensor>().item<int64_t>();
  }
  throw py::type_error("gt: tensor indices must be ints, slices, None or ..., got " +
                       std::string(py::str(py::type::handle_of(h))));
}

// IndexError for integer indices out of range and masks of the wrong shape (the dims they apply
// to are known here).
void check_integer_ranges(const gt::Tensor& t, const std::vector<gt::TensorIndex>& ix) {
  const int64_t rank = t.dim();
  int64_t consuming = 0;
  auto dims_of = [](const gt::TensorIndex& i) -> int64_t {
    if (i.is_integer() || i.is_slice()) return 1;
    if (i.is_tensor()) return i.tensor().dtype() == gt::DType::kBool ? i.tensor().dim() : 1;
    return 0;
  };
  for (const auto& i : ix) consuming += dims_of(i);
  int64_t d = 0;
  for (const auto& i : ix) {
    if (i.is_ellipsis()) {
      d += std::max<int64_t>(0, rank - consuming);
    } else if (i.is_tensor() && i.tensor().dtype() == gt::DType::kBool) {
      // A mask must match the dims it covers (torch's IndexError and wording).
      const gt::Tensor& m = i.tensor();
      if (d + m.dim() > rank) return;  // too many indices: gt::Tensor::index reports it
      for (int64_t j = 0; j < m.dim(); ++j)
        if (m.shape()[static_cast<int>(j)] != t.shape()[static_cast<int>(d + j)])
          throw py::index_error("The shape of the mask " + m.shape().str() + " at index " +
                                std::to_string(j) + " does not match the shape of the indexed "
                                "tensor " + t.shape().str() + " at index " +
                                std::to_string(d + j));
      d += m.dim();
    } else if (i.is_slice() || i.is_tensor()) {
      d += dims_of(i);
    } else if (i.is_integer()) {
      if (d >= rank) return;  // too many indices: gt::Tensor::index reports it
      const int64_t size = t.shape()[static_cast<int>(d)];
      const int64_t v = i.integer();
      if (v < -size || v >= size)
        throw py::index_error("index " + std::to_string(v) + " is out of bounds for dimension " +
                              std::to_string(d) + " with size " + std::to_string(size));
      ++d;
    }
  }
}

// An advanced index as a tensor: itself, or a list / numpy array uploaded (bools stay bool).
gt::Tensor index_tensor(py::handle idx) {
  if (py::isinstance<gt::Tensor>(idx)) return idx.cast<gt::Tensor>();
  py::object arr = py::module_::import("numpy").attr("asarray")(idx);
  return from_numpy_as(arr, numpy_upload_dtype(arr));
}

// The Python index as gt::TensorIndex entries: tensors, lists and arrays as tensor indices
// (non-integer, non-bool ones refused here with TypeError, as before), the rest as basic ones.
std::vector<gt::TensorIndex> lower(const gt::Tensor& t, py::handle idx) {
  std::vector<gt::TensorIndex> ix;
  auto add = [&](py::handle h) {
    if (!is_advanced_index(h)) {
      ix.push_back(to_index(h));
      return;
    }
    gt::Tensor x = index_tensor(h);
    if (x.dtype() != gt::DType::kInt64 && x.dtype() != gt::DType::kInt32 &&
        x.dtype() != gt::DType::kBool)
      throw py::type_error(std::string("gt: index tensors must be int64, int32 or bool, got ") +
                           gt::dtype_name(x.dtype()));
    if (t.dim() == 0) throw py::index_error("gt: cannot index a 0-d tensor with a tensor");
    ix.emplace_back(x);
  };
  if (PyTuple_Check(idx.ptr())) {
    ix.reserve(static_cast<size_t>(PyTuple_GET_SIZE(idx.ptr())));
    for (py::handle h : py::reinterpret_borrow<py::tuple>(idx)) add(h);
  } else {
    add(idx);
  }
  check_integer_ranges(t, ix);
  return ix;
}

bool is_number(py::handle value) {
  return PyBool_Check(value.ptr()) || PyLong_Check(value.ptr()) || PyFloat_Check(value.ptr()) ||
         py::isinstance(value, py::module_::import("numpy").attr("generic"));
}

}  // namespace

void init_indexing(py::class_<gt::Tensor>& cls) {
  cls.def("__getitem__", [](const gt::Tensor& t, py::handle idx) {
    const std::vector<gt::TensorIndex> ix = lower(t, idx);
    return released([&] { return t.index(ix); });  // a mask is a sync point
  });
  // t[index] = value: written in place through the index (copy_ for a tensor, fill for a
  // number), so t changes, as in PyTorch. As torch, lists and arrays are refused as values:
  // they become tensors explicitly (gt.tensor(v)).
  cls.def("__setitem__", [](py::object self, py::handle idx, py::handle value) {
    const gt::Tensor t = self.cast<gt::Tensor>();
    const std::vector<gt::TensorIndex> ix = lower(t, idx);
    if (py::isinstance<gt::Tensor>(value)) {
      const gt::Tensor v = value.cast<gt::Tensor>();
      released([&] { t.index_put_(ix, v); });  // a tensor through a mask: a count check
    } else if (is_number(value)) {
      const gt::Scalar v = value.cast<PyScalar>().get();
      released([&] { t.index_put_(ix, v); });
    } else {
      throw py::type_error("gt: can't assign a " +
                           std::string(py::str(py::type::handle_of(value).attr("__name__"))) +
                           " to a gt.Tensor; assign a tensor (gt.tensor(value)) or a number");
    }
  });
  cls.def("__iter__", [](const gt::Tensor& t) {
    if (t.dim() == 0) throw py::type_error("iteration over a 0-d tensor");
    const int64_t n = t.shape()[0];
    py::list rows(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) rows[static_cast<size_t>(i)] = py::cast(t.select(0, i));
    return py::iter(rows);
  });
}

}  // namespace gtpy
