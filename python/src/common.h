// Shared pieces of the `gt` Python extension (_gt): the number-operand caster, dtype objects,
// exception classes and the sync-point helper (GIL released, its errors marked deferred).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gt/gt.h>

namespace py = pybind11;
using namespace pybind11::literals;  // NOLINT: "name"_a argument names

namespace gtpy {

// A Python number used as a tensor operand: remembers int vs float vs bool (type promotion
// follows it, like PyTorch: int tensor + 2 stays int, + 2.0 becomes float32).
struct PyScalar {
  double v = 0;
  bool integral = false;
  bool is_bool = false;
  int64_t i = 0;  // the integer itself when integral (exact beyond 2^53)
  gt::Scalar get() const {
    if (is_bool) return gt::Scalar(v != 0);
    if (integral) return gt::Scalar(i);
    return gt::Scalar(v);
  }
};

// Runs a sync point with the GIL released (other Python threads run meanwhile). A gt::Error from
// it is marked deferred (it reports work queued earlier): Python raises gt.WorkerError or the
// subclass its code picks (module.cpp).
template <typename F>
auto sync_point(F&& f) -> decltype(f()) {
  py::gil_scoped_release release;
  try {
    return f();
  } catch (gt::Error& e) {
    e.set_deferred();
    throw;
  }
}

// A call that waits for the session with the GIL released, like sync_point, but whose errors keep
// their own class: most are the call's own (a mask of the wrong shape, a value that does not fit
// its count), not reports of queued work. For calls that wait only to learn a size (t[mask]).
template <typename F>
auto released(F&& f) -> decltype(f()) {
  py::gil_scoped_release release;
  return f();
}

// ---- dtypes ---------------------------------------------------------------------------------------
// gt.float32 etc.: one immortal Python object per gt::DType (class gt.dtype, in module.cpp).
struct PyDType {
  gt::DType dt;
};
py::handle dtype_object(gt::DType dt);
// None -> fallback; gt.dtype, 'float32' / 'gt.float32' / 'float' / 'long' ..., numpy dtypes and
// types, Python's float / int / bool. Raises TypeError / ValueError for anything else.
gt::DType to_dtype(py::handle h, gt::DType fallback = gt::kFloat32);
std::optional<gt::DType> to_optional_dtype(py::handle h);
// The numpy dtype that holds a gt dtype's host values (bfloat16 -> float32).
py::dtype numpy_dtype(gt::DType dt);

// ---- shapes / dims ------------------------------------------------------------------------------
// f(2, 3), f((2, 3)), f([2, 3]): the Python conventions for *shape arguments.
std::vector<int64_t> dims_from_args(const py::args& args, const char* what);
std::vector<int64_t> dims_from_handle(py::handle h, const char* what);
py::tuple shape_tuple(const gt::Shape& s);
// Any iterable of gt.Tensor as a vector (TypeError naming `what` for anything else).
std::vector<gt::Tensor> tensor_list(py::handle seq, const char* what);

// ---- host data ----------------------------------------------------------------------------------
// The tensor's values as a new numpy array (a sync point; bfloat16 comes back as float32).
py::array to_numpy(const gt::Tensor& t);
// Uploads a numpy array (any dtype numpy can convert) as a tensor of `dt`.
gt::Tensor from_numpy_as(py::handle array, gt::DType dt);
// The gt dtype a numpy array uploads as by default (float64 -> float32, int8 -> int32, ...).
gt::DType numpy_upload_dtype(py::handle array);

// ---- registration (one function per source file) ----------------------------------------------
// A device argument: None (nullopt), a gt.device, 'cuda:1' / 'cpu' / 'auto', or an int (cuda:N).
std::optional<gt::Device> device_from(py::handle h);
// A factory's device= argument, pinning the creations made while it lives (None: nothing).
class DevicePin {
 public:
  explicit DevicePin(py::handle device);
  // A *_like factory's: `device`, else the device of `like` (as torch's).
  DevicePin(const gt::Tensor& like, py::handle device);

 private:
  std::optional<gt::DeviceGuard> guard_;
};

void init_errors(py::module_& m);
void init_dtypes(py::module_& m);
void init_tensor(py::module_& m);
void init_tensor_ops(py::module_& m, py::class_<gt::Tensor>& cls);
void init_indexing(py::class_<gt::Tensor>& cls);
void init_tensor_device(py::class_<gt::Tensor>& cls);
void init_device(py::module_& m);
void init_cuda(py::module_& m);
void init_factories(py::module_& m);
void init_autograd(py::module_& m);
void init_functional(py::module_& m);
void init_nn(py::module_& m);
void init_optim(py::module_& m);
void init_session(py::module_& m);
void init_signal(py::module_& m);

}  // namespace gtpy

namespace pybind11::detail {

// Python float / int / bool (and numpy scalars) -> gtpy::PyScalar. Never takes a tensor or an
// array, so (Tensor, PyScalar) overloads stay unambiguous and cheap.
template <>
struct type_caster<gtpy::PyScalar> {
  PYBIND11_TYPE_CASTER(gtpy::PyScalar, const_name("float | int | bool"));

  bool load(handle src, bool convert);
  static handle cast(const gtpy::PyScalar& s, return_value_policy, handle) {
    if (s.is_bool) return PyBool_FromLong(s.v != 0);
    if (s.integral) return PyLong_FromLongLong(static_cast<long long>(s.v));
    return PyFloat_FromDouble(s.v);
  }
};

}  // namespace pybind11::detail
