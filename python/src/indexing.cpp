// t[...]: Python indexing with ints (0-d integer tensors too), slices (any step), None and
// Ellipsis, lowered to gt::Tensor::index: a view of t, as in PyTorch. Integer indices out of
// range raise IndexError (so iteration protocols and numpy habits work). t[index_tensor] with an
// integer tensor picks rows (index_select along dim 0, negative entries counting from the end;
// the result, a copy, has the index's shape then t's other dims); t[mask] with a bool tensor of
// t's leading dims picks the rows where it is true (a sync point: Tensor::masked_index). Tensors
// and lists inside tuples index as torch's advanced indexing (one index tensor per tuple; see
// get_tuple_index). t[...] = value writes through that view
// (__setitem__); t[mask] = value and t[index_tensor] = value write in place
// (Tensor::masked_put_ / index_put_). Lists and numpy arrays index as the tensors they make.
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
  if (py::isinstance<gt::Tensor>(h))
    throw py::type_error(
        "gt: tensor indices are supported alone (t[int_tensor]); inside a tuple use "
        "t.index_select / t.gather, or ints, slices, None and ...");
  throw py::type_error("gt: tensor indices must be ints, slices, None or ..., got " +
                       std::string(py::str(py::type::handle_of(h))));
}

// IndexError for integer indices out of range (the dims they apply to are known here).
void check_integer_ranges(const gt::Tensor& t, const std::vector<gt::TensorIndex>& ix) {
  const int64_t rank = t.dim();
  int64_t consuming = 0;
  for (const auto& i : ix) consuming += (i.is_integer() || i.is_slice()) ? 1 : 0;
  int64_t d = 0;
  for (const auto& i : ix) {
    if (i.is_ellipsis()) {
      d += std::max<int64_t>(0, rank - consuming);
    } else if (i.is_slice()) {
      ++d;
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

// t[index] = value with an integer index tensor of any shape over dim 0: value broadcast to
// (index's shape, t's other dims), negative entries counting from the end (PyTorch's
// index_put_), written with index_copy_.
void put_rows(const gt::Tensor& t, const gt::Tensor& index, const gt::Tensor& value) {
  if (index.dtype() != gt::DType::kInt64 && index.dtype() != gt::DType::kInt32)
    throw py::type_error(std::string("gt: index tensors must be int64, int32 or bool, got ") +
                         gt::dtype_name(index.dtype()));
  if (t.dim() == 0) throw py::index_error("gt: cannot index a 0-d tensor with a tensor");
  std::vector<int64_t> want = index.sizes(), rows{index.numel()};
  for (int64_t d = 1; d < t.dim(); ++d) {
    want.push_back(t.size(d));
    rows.push_back(t.size(d));
  }
  gt::Tensor src;
  try {
    src = value.expand(want);
  } catch (const gt::Error&) {
    throw gt::Error("index_put_: shape mismatch: value tensor of shape " + value.shape().str() +
                    " cannot be broadcast to indexing result of shape " +
                    py::str(py::tuple(py::cast(want))).cast<std::string>());
  }
  const gt::Tensor flat = index.flatten();
  t.index_copy_(0, gt::where(flat < 0, flat + t.size(0), flat), src.reshape(rows));
}

// The integer index tensor of an advanced index, negative entries counted from `size`.
gt::Tensor positions(py::handle idx, int64_t size) {
  gt::Tensor index = index_tensor(idx);
  if (index.dtype() == gt::DType::kBool)
    throw py::index_error("gt: a bool mask inside an index tuple is not supported yet; index "
                          "with the mask alone (t[mask]) or use t.nonzero-free forms");
  if (index.dtype() != gt::DType::kInt64 && index.dtype() != gt::DType::kInt32)
    throw py::type_error(std::string("gt: index tensors must be int64, int32 or bool, got ") +
                         gt::dtype_name(index.dtype()));
  return gt::where(index < 0, index + size, index);
}

// A tuple index holding one index tensor (or list / array) among ints, slices, None and ...:
// torch's (numpy's) advanced indexing. The basic part is applied first with the tensor's place
// taken by a full slice; the tensor then picks along the dim it lands on, and its shape replaces
// that dim. Ints are basic indices (torch's rule: unlike numpy, an int apart from the tensor
// does not move the picked dims to the front).
struct TupleIndex {
  std::vector<gt::TensorIndex> basic;  // the tensor's place holds a full slice
  size_t at = 0;                       // the tensor's position in the tuple
  py::handle tensor;
};

std::optional<TupleIndex> split_tuple_index(py::handle idx) {
  if (!PyTuple_Check(idx.ptr())) return std::nullopt;
  py::tuple tup = py::reinterpret_borrow<py::tuple>(idx);
  std::optional<TupleIndex> r;
  for (size_t i = 0; i < tup.size(); ++i) {
    if (!is_advanced_index(tup[i])) continue;
    if (r) throw py::index_error("gt: at most one index tensor inside an index tuple is supported");
    r = TupleIndex{{}, i, tup[i]};
  }
  if (!r) return std::nullopt;
  for (size_t i = 0; i < tup.size(); ++i)
    r->basic.push_back(i == r->at ? gt::TensorIndex(gt::Slice()) : to_index(tup[i]));
  return r;
}

// How many dims of the basic result come before tuple position `at` (ints take theirs away,
// None adds one, ... stands for the dims no other index consumes).
int64_t landing(const gt::Tensor& t, const TupleIndex& ti) {
  const int64_t rank = t.dim();
  int64_t consuming = 0;
  for (const auto& i : ti.basic) consuming += (i.is_integer() || i.is_slice()) ? 1 : 0;
  int64_t before = 0;
  for (size_t k = 0; k < ti.at; ++k) {
    const auto& i = ti.basic[k];
    before += i.is_ellipsis() ? std::max<int64_t>(0, rank - consuming) : i.is_integer() ? 0 : 1;
  }
  return before;
}

gt::Tensor get_tuple_index(const gt::Tensor& t, const TupleIndex& ti) {
  check_integer_ranges(t, ti.basic);
  const gt::Tensor view = t.index(ti.basic);
  const int64_t d = landing(t, ti);
  const gt::Tensor index = positions(ti.tensor, view.size(d));
  std::vector<int64_t> shape;
  for (int64_t k = 0; k < d; ++k) shape.push_back(view.size(k));
  for (int64_t s : index.sizes()) shape.push_back(s);
  for (int64_t k = d + 1; k < view.dim(); ++k) shape.push_back(view.size(k));
  return view.index_select(d, index.flatten()).reshape(shape);
}

// t[:, ..., index_tensor, rest] = value where everything before the tensor is a full slice:
// the tensor's dim is moved first (a view of t), its picked rows are copied out, the value is
// assigned to them seen in torch's result order ([dims before, index dims, rest]), and the rows
// are written back in place (index_copy_ through the view).
void set_tuple_index(const gt::Tensor& t, const TupleIndex& ti, py::handle value) {
  for (size_t k = 0; k < ti.at; ++k) {
    const auto& i = ti.basic[k];
    const bool full =
        i.is_slice() && !i.slice().start() && !i.slice().stop() && i.slice().step() == 1;
    if (!full)
      throw py::index_error("gt: assignment through an index tensor inside a tuple needs only "
                            "full slices (:) before it, as in t[:, idx, 1:] = v");
  }
  const int64_t d = static_cast<int64_t>(ti.at);
  if (d >= t.dim())
    throw py::index_error("gt: too many indices for a tensor of rank " + std::to_string(t.dim()));
  std::vector<int64_t> to_front{d};  // [t_d, t_0 .. t_{d-1}, t_{d+1} ..]
  for (int64_t k = 0; k < t.dim(); ++k)
    if (k != d) to_front.push_back(k);
  const gt::Tensor moved = t.permute(to_front);
  const gt::Tensor index = positions(ti.tensor, moved.size(0)).flatten();
  const gt::Tensor picked = index_tensor(ti.tensor);
  const int64_t n = picked.dim();
  std::vector<int64_t> rows_shape = picked.sizes();  // [index dims, t_0 .. t_{d-1}, t_{d+1} ..]
  for (int64_t k = 1; k < moved.dim(); ++k) rows_shape.push_back(moved.size(k));
  const gt::Tensor rows = moved.index_select(0, index).reshape(rows_shape);
  std::vector<int64_t> torch_order;  // [t_0 .. t_{d-1}, index dims, t_{d+1} ..]: a view of rows
  for (int64_t k = n; k < n + d; ++k) torch_order.push_back(k);
  for (int64_t k = 0; k < n; ++k) torch_order.push_back(k);
  for (int64_t k = n + d; k < rows.dim(); ++k) torch_order.push_back(k);
  std::vector<gt::TensorIndex> rest(static_cast<size_t>(n + d), gt::TensorIndex(gt::Slice()));
  for (size_t k = ti.at + 1; k < ti.basic.size(); ++k) rest.push_back(ti.basic[k]);
  const gt::Tensor target = rows.permute(torch_order);
  if (py::isinstance<gt::Tensor>(value)) {
    target.index_put_(rest, value.cast<const gt::Tensor&>());
  } else {
    target.index_put_(rest, value.cast<PyScalar>().get());
  }
  std::vector<int64_t> flat{index.numel()};
  for (int64_t k = 1; k < moved.dim(); ++k) flat.push_back(moved.size(k));
  put_rows(moved, index, rows.reshape(flat));
}

}  // namespace

void init_indexing(py::class_<gt::Tensor>& cls) {
  cls.def("__getitem__", [](const gt::Tensor& t, py::handle idx) {
    if (is_advanced_index(idx)) {
      gt::Tensor index = index_tensor(idx);
      if (index.dtype() == gt::DType::kBool) return released([&] { return t.masked_index(index); });
      if (index.dtype() != gt::DType::kInt64 && index.dtype() != gt::DType::kInt32)
        throw py::type_error(std::string("gt: index tensors must be int64 or int32, got ") +
                             gt::dtype_name(index.dtype()));
      if (t.dim() == 0) throw py::index_error("gt: cannot index a 0-d tensor with a tensor");
      // Negative entries count from the end, as in PyTorch's advanced indexing (index_select
      // itself refuses them); anything still out of range fails on the worker.
      index = gt::where(index < 0, index + t.shape()[0], index);
      if (index.dim() == 1) return t.index_select(0, index);
      std::vector<int64_t> shape(index.shape().begin(), index.shape().end());
      for (int i = 1; i < t.dim(); ++i) shape.push_back(t.shape()[i]);
      return t.index_select(0, index.reshape(std::vector<int64_t>{-1})).reshape(shape);
    }
    if (std::optional<TupleIndex> ti = split_tuple_index(idx)) return get_tuple_index(t, *ti);
    std::vector<gt::TensorIndex> ix;
    if (PyTuple_Check(idx.ptr())) {
      ix.reserve(static_cast<size_t>(PyTuple_GET_SIZE(idx.ptr())));
      for (py::handle h : py::reinterpret_borrow<py::tuple>(idx)) ix.push_back(to_index(h));
    } else {
      ix.push_back(to_index(idx));
    }
    check_integer_ranges(t, ix);
    return t.index(ix);
  });
  // t[index] = value: basic indexes (ints, slices, None, ...) select a view, which takes the
  // value in place (copy_ for a tensor or array, fill_ for a number), so t changes, as in
  // PyTorch; through a bool mask or an integer index tensor it is written in place
  // (masked_put_, index_copy_).
  cls.def("__setitem__", [](py::object self, py::handle idx, py::handle value) {
    const gt::Tensor t = self.cast<gt::Tensor>();
    if (is_advanced_index(idx)) {
      const gt::Tensor index = index_tensor(idx);
      if (py::isinstance<gt::Tensor>(value)) {
        const gt::Tensor& v = value.cast<const gt::Tensor&>();
        if (index.dtype() == gt::DType::kBool) {
          released([&] { t.masked_put_(index, v); });  // a tensor value: a count check
        } else {
          put_rows(t, index, v);
        }
      } else if (PyBool_Check(value.ptr()) || PyLong_Check(value.ptr()) ||
                 PyFloat_Check(value.ptr()) ||
                 py::isinstance(value, py::module_::import("numpy").attr("generic"))) {
        const gt::Scalar v = value.cast<PyScalar>().get();
        if (index.dtype() == gt::DType::kBool) {
          t.masked_put_(index, v);
        } else {
          put_rows(t, index, gt::full({}, v, t.dtype()));
        }
      } else {
        throw py::type_error("gt: can't assign a " +
                             std::string(py::str(py::type::handle_of(value).attr("__name__"))) +
                             " through an index tensor; assign a tensor (gt.tensor(value)) or a "
                             "number");
      }
      return;
    }
    if (std::optional<TupleIndex> ti = split_tuple_index(idx)) {
      set_tuple_index(t, *ti, value);
      return;
    }
    std::vector<gt::TensorIndex> ix;
    if (PyTuple_Check(idx.ptr())) {
      for (py::handle h : py::reinterpret_borrow<py::tuple>(idx)) ix.push_back(to_index(h));
    } else {
      ix.push_back(to_index(idx));
    }
    check_integer_ranges(t, ix);
    if (py::isinstance<gt::Tensor>(value)) {
      t.index_put_(ix, value.cast<const gt::Tensor&>());
    } else if (PyBool_Check(value.ptr()) || PyLong_Check(value.ptr()) ||
               PyFloat_Check(value.ptr()) ||
               py::isinstance(value, py::module_::import("numpy").attr("generic"))) {
      t.index_put_(ix, value.cast<PyScalar>().get());
    } else {  // as torch: lists and arrays become tensors explicitly (gt.tensor(v))
      throw py::type_error("gt: can't assign a " + std::string(py::str(py::type::handle_of(value).attr("__name__"))) +
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
