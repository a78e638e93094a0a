// gt.dtype objects (gt.float32, ...), dtype arguments, the Python-number caster and the
// numpy <-> tensor conversions.
#include <cmath>
#include <cstring>

#include "common.h"

namespace gtpy {
namespace {

PyObject* g_dtype_objects[gt::kNumDTypes] = {};
// numpy's scalar base classes (numpy.generic, bool_, integer, floating), for the scalar caster.
PyObject* g_np_generic = nullptr;
PyObject* g_np_bool = nullptr;
PyObject* g_np_integer = nullptr;
PyObject* g_np_floating = nullptr;
PyObject* g_np_asarray = nullptr;
PyObject* g_np_dtype = nullptr;

std::string strip_prefix(std::string s) {
  for (const char* p : {"gt.", "torch.", "numpy.", "np."})
    if (s.rfind(p, 0) == 0) return s.substr(std::strlen(p));
  return s;
}

[[noreturn]] void unsupported_dtype(const std::string& name) {
  throw py::value_error("gt: unsupported dtype '" + name +
                        "' (use float32, float64, float16, bfloat16, int64, int32, int8, uint8 or bool)");
}

gt::DType dtype_from_string(const std::string& raw) {
  std::string name = strip_prefix(raw);
  if (auto d = gt::dtype_from_name(name)) return *d;
  if (name == "half") return gt::kFloat16;
  if (name == "long") return gt::kInt64;
  if (name == "int") return gt::kInt32;
  if (name == "bool_") return gt::kBool;
  if (name == "double") return gt::kFloat64;
  unsupported_dtype(raw);
}

// A numpy dtype name -> the gt dtype a numpy array of it uploads as (from_numpy): its own where GT
// has it (torch keeps them all); int16 / uint16 widen to int32 and uint32 / uint64 to int64
// (GT has no int16 or wider unsigned types), longdouble narrows to float64.
std::optional<gt::DType> dtype_for_numpy_name(const std::string& n) {
  if (n == "float32") return gt::kFloat32;
  if (n == "float64" || n == "longdouble") return gt::kFloat64;
  if (n == "float16") return gt::kFloat16;
  if (n == "int8") return gt::kInt8;
  if (n == "uint8") return gt::kUInt8;
  if (n == "int16" || n == "int32" || n == "uint16") return gt::kInt32;
  if (n == "int64" || n == "uint32" || n == "uint64") return gt::kInt64;
  if (n == "bool") return gt::kBool;
  return std::nullopt;
}

}  // namespace

py::handle dtype_object(gt::DType dt) { return g_dtype_objects[static_cast<int>(dt)]; }

std::optional<gt::DType> to_optional_dtype(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return to_dtype(h);
}

gt::DType to_dtype(py::handle h, gt::DType fallback) {
  if (h.is_none()) return fallback;
  if (py::isinstance<PyDType>(h)) return h.cast<const PyDType&>().dt;
  if (PyUnicode_Check(h.ptr())) return dtype_from_string(h.cast<std::string>());
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type)) return gt::kFloat64;  // torch: float is float64
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type)) return gt::kInt64;
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type)) return gt::kBool;
  // numpy dtypes and scalar types (np.float32, np.dtype('int64'), ...).
  py::object npd;
  try {
    npd = py::reinterpret_steal<py::object>(PyObject_CallOneArg(g_np_dtype, h.ptr()));
    if (!npd) throw py::error_already_set();
  } catch (py::error_already_set&) {
    throw py::type_error("gt: expected a dtype (gt.float32, 'float32', numpy dtype), got " +
                         std::string(py::str(py::type::handle_of(h))));
  }
  std::string name = py::str(npd.attr("name"));
  if (auto d = dtype_for_numpy_name(name)) return *d;
  unsupported_dtype(name);
}

py::dtype numpy_dtype(gt::DType dt) {
  switch (dt) {
    case gt::DType::kFloat32: return py::dtype("float32");
    case gt::DType::kFloat16: return py::dtype("float16");
    case gt::DType::kBFloat16: return py::dtype("float32");
    case gt::DType::kInt32: return py::dtype("int32");
    case gt::DType::kInt64: return py::dtype("int64");
    case gt::DType::kBool: return py::dtype("bool");
    case gt::DType::kFloat64: return py::dtype("float64");
    case gt::DType::kInt8: return py::dtype("int8");
    case gt::DType::kUInt8: return py::dtype("uint8");
  }
  return py::dtype("float32");
}

// ---- shapes -------------------------------------------------------------------------------------
namespace {
int64_t as_dim(py::handle h, const char* what) {
  if (PyLong_Check(h.ptr()) || PyIndex_Check(h.ptr())) {
    long long v = PyLong_AsLongLong(h.ptr());
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    return v;
  }
  throw py::type_error(std::string(what) + ": expected integer sizes/dims, got " +
                       std::string(py::str(py::type::handle_of(h))));
}
}  // namespace

std::vector<int64_t> dims_from_handle(py::handle h, const char* what) {
  if (PyLong_Check(h.ptr())) return {as_dim(h, what)};
  if (PyTuple_Check(h.ptr()) || PyList_Check(h.ptr())) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(h);
    std::vector<int64_t> out;
    out.reserve(seq.size());
    for (py::handle x : seq) out.push_back(as_dim(x, what));
    return out;
  }
  if (PyIndex_Check(h.ptr())) return {as_dim(h, what)};
  throw py::type_error(std::string(what) + ": expected integer sizes/dims or a tuple of them, got " +
                       std::string(py::str(py::type::handle_of(h))));
}

std::vector<int64_t> dims_from_args(const py::args& args, const char* what) {
  if (args.size() == 1) return dims_from_handle(args[0], what);
  std::vector<int64_t> out;
  out.reserve(args.size());
  for (py::handle x : args) out.push_back(as_dim(x, what));
  return out;
}

py::tuple shape_tuple(const gt::Shape& s) {
  PyObject* t = PyTuple_New(s.rank());
  if (!t) throw py::error_already_set();
  for (int i = 0; i < s.rank(); ++i) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(s[i]));
  return py::reinterpret_steal<py::tuple>(t);
}

// ---- host data ----------------------------------------------------------------------------------
py::array to_numpy(const gt::Tensor& t) {
  gt::TensorMeta meta = t.meta();
  gt::Tensor handle = t;  // keeps the tensor alive while the GIL is released
  std::vector<py::ssize_t> shape(meta.shape.begin(), meta.shape.end());
  if (meta.dtype == gt::DType::kBFloat16) {  // numpy has no bfloat16: converted to float32
    std::string bytes = sync_point([&] { return handle.to_bytes(); });
    std::vector<float> f = gt::decode_bytes<float>(meta, bytes);
    py::array_t<float> out(shape);
    if (!f.empty()) std::memcpy(out.mutable_data(), f.data(), f.size() * sizeof(float));
    return out;
  }
  if (meta.nbytes() == 0) return py::array(numpy_dtype(meta.dtype), shape);
  // The array is the memory the values arrived in (issue 15): from a local dispatcher the
  // shared-memory region the worker wrote them into (not copied at all), else a buffer they
  // were received into. The array owns it; the region goes back when the array dies.
  auto owner = std::make_unique<std::shared_ptr<const char>>(
      sync_point([&] { return gt::detail::fetch_shared(handle); }));
  void* data = const_cast<char*>(owner->get());
  py::capsule base(owner.get(), [](void* p) { delete static_cast<std::shared_ptr<const char>*>(p); });
  owner.release();  // the capsule has it
  return py::array(numpy_dtype(meta.dtype), shape, data, base);
}

gt::Tensor from_numpy_as(py::handle obj, gt::DType dt) {
  py::dtype host = numpy_dtype(dt);
  // numpy.asarray(obj, dtype, order="C"): contiguous, keeps 0-d (ascontiguousarray makes 1-d).
  auto arr = py::reinterpret_steal<py::array>(
      py::handle(g_np_asarray)(obj, host, "order"_a = "C").release());
  std::vector<int64_t> dims(arr.shape(), arr.shape() + arr.ndim());
  gt::DType upload = dt == gt::DType::kBFloat16 ? gt::kFloat32 : dt;
  std::string_view bytes(static_cast<const char*>(arr.data()),
                         static_cast<size_t>(arr.nbytes()));
  gt::Tensor t = gt::from_bytes(dims, upload, bytes);
  return upload == dt ? t : t.cast(dt);
}

gt::DType numpy_upload_dtype(py::handle array) {
  std::string name = py::str(py::reinterpret_borrow<py::array>(array).dtype().attr("name"));
  if (auto d = dtype_for_numpy_name(name)) return *d;
  throw py::type_error("gt.from_numpy: unsupported numpy dtype " + name);
}

void init_dtypes(py::module_& m) {
  py::module_ np = py::module_::import("numpy");
  g_np_generic = py::object(np.attr("generic")).release().ptr();
  g_np_bool = py::object(np.attr("bool_")).release().ptr();
  g_np_integer = py::object(np.attr("integer")).release().ptr();
  g_np_floating = py::object(np.attr("floating")).release().ptr();
  g_np_asarray = py::object(np.attr("asarray")).release().ptr();
  g_np_dtype = py::object(np.attr("dtype")).release().ptr();

  py::class_<PyDType> cls(m, "dtype", "A GT element type: gt.float32, gt.float16, gt.bfloat16, "
                                      "gt.int32, gt.int64, gt.bool. Compares equal to its name "
                                      "and to numpy's dtype of that name.");
  cls.def_property_readonly("name", [](const PyDType& d) { return gt::dtype_name(d.dt); })
      .def_property_readonly("itemsize", [](const PyDType& d) { return gt::dtype_size(d.dt); })
      .def_property_readonly("is_floating_point",
                             [](const PyDType& d) { return gt::is_floating(d.dt); })
      .def("__repr__", [](const PyDType& d) { return std::string("gt.") + gt::dtype_name(d.dt); })
      .def("__str__", [](const PyDType& d) { return std::string(gt::dtype_name(d.dt)); })
      .def("__hash__", [](const PyDType& d) { return py::hash(py::str(gt::dtype_name(d.dt))); })
      .def("__eq__",
           [](const PyDType& d, py::handle o) -> py::object {
             if (py::isinstance<PyDType>(o)) return py::bool_(o.cast<const PyDType&>().dt == d.dt);
             if (PyUnicode_Check(o.ptr())) {
               std::string n = strip_prefix(o.cast<std::string>());
               auto other = gt::dtype_from_name(n);
               return py::bool_(other && *other == d.dt);
             }
             // numpy's dtype or scalar type of the same name (t.data.dtype == np.float32, the
             // original GT's idiom); by name, not by the upload mapping (float64 is not float32).
             const bool np_type = PyType_Check(o.ptr()) && PyObject_IsSubclass(o.ptr(), g_np_generic) == 1;
             if (np_type || PyObject_IsInstance(o.ptr(), g_np_dtype) == 1) {
               py::object npd = py::reinterpret_steal<py::object>(PyObject_CallOneArg(g_np_dtype, o.ptr()));
               if (!npd) throw py::error_already_set();
               return py::bool_(std::string(py::str(npd.attr("name"))) == gt::dtype_name(d.dt));
             }
             return py::reinterpret_borrow<py::object>(Py_NotImplemented);
           })
      .def("__ne__",
           [](py::handle self, py::handle o) -> py::object {
             py::object eq = self.attr("__eq__")(o);
             if (eq.ptr() == Py_NotImplemented) return eq;
             return py::bool_(!eq.cast<bool>());
           })
      .def("__reduce__", [](const PyDType& d) {
        return py::make_tuple(py::module_::import("gt").attr("_dtype_by_name"),
                              py::make_tuple(gt::dtype_name(d.dt)));
      });

  const std::pair<const char*, gt::DType> names[] = {
      {"float32", gt::kFloat32}, {"float16", gt::kFloat16}, {"bfloat16", gt::kBFloat16},
      {"int32", gt::kInt32},     {"int64", gt::kInt64},     {"bool", gt::kBool},
      {"float64", gt::kFloat64}, {"int8", gt::kInt8},       {"uint8", gt::kUInt8}};
  for (const auto& [name, dt] : names) {
    py::object o = py::cast(PyDType{dt});
    m.attr(name) = o;
    g_dtype_objects[static_cast<int>(dt)] = o.release().ptr();  // immortal
  }
  m.def("_dtype", [](py::handle h) { return dtype_object(to_dtype(h)); },
        "The gt.dtype for a dtype argument (gt.dtype, name, numpy dtype, Python type).");
  m.def("_numpy_upload_dtype", [](py::handle a) { return dtype_object(numpy_upload_dtype(a)); });
}

}  // namespace gtpy

namespace pybind11::detail {

bool type_caster<gtpy::PyScalar>::load(handle src, bool) {
  PyObject* o = src.ptr();
  if (PyFloat_Check(o)) {
    value = {PyFloat_AS_DOUBLE(o), false, false};
    return true;
  }
  if (PyBool_Check(o)) {
    value = {o == Py_True ? 1.0 : 0.0, true, true, o == Py_True ? 1 : 0};
    return true;
  }
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) {
      // Beyond int64: PyTorch refuses such an int as an operand ("Overflow when unpacking
      // long") whatever the tensor's dtype, so neither rounding it to a float operand nor
      // letting a later overload take it: a call-site error (gt.ShapeError, a ValueError).
      throw gt::Error(gt::Code::kOutOfRange,
                      "value " + py::repr(src).cast<std::string>() +
                          " cannot be converted to int64 without overflow");
    } else {
      value = {static_cast<double>(v), true, false, static_cast<int64_t>(v)};
    }
    return true;
  }
  // numpy scalars (np.float32(2), np.int64(3), np.bool_(True)); never arrays.
  if (gtpy::g_np_generic && PyObject_IsInstance(o, gtpy::g_np_generic) == 1) {
    if (PyObject_IsInstance(o, gtpy::g_np_bool) == 1) {
      int b = PyObject_IsTrue(o);
      if (b < 0) {
        PyErr_Clear();
        return false;
      }
      value = {b ? 1.0 : 0.0, true, true, b ? 1 : 0};
      return true;
    }
    if (PyObject_IsInstance(o, gtpy::g_np_integer) == 1) {
      long long v = PyLong_AsLongLong(o);
      if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
      }
      value = {static_cast<double>(v), true, false, static_cast<int64_t>(v)};
      return true;
    }
    if (PyObject_IsInstance(o, gtpy::g_np_floating) == 1) {
      double d = PyFloat_AsDouble(o);
      if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
      }
      value = {d, false, false};
      return true;
    }
  }
  return false;
}

}  // namespace pybind11::detail
