// The `gt._gt` extension module: registration and the exception classes.
//
//   gt.GTError(RuntimeError)           every GT error
//   gt.ShapeError(GTError, ValueError) a user error caught at the call site (shape, dtype, axis,
//                                      in-place on a leaf, ...), raised by the op that made it
//   gt.WorkerError(GTError)            an error reported by the workers / the session, raised
//                                      at the next sync point (fetch, item, print, synchronize)
#include "common.h"

namespace gtpy {
namespace {

PyObject* g_gt_error = nullptr;
PyObject* g_shape_error = nullptr;
PyObject* g_worker_error = nullptr;

// Session-level failures (cannot connect, session already exists, undefined tensor) are GTError;
// everything else thrown at an op's call site is a user error: ShapeError.
PyObject* class_for(const char* what) {
  std::string_view w(what);
  if (w.rfind("gt:", 0) == 0 || w.rfind("gt::", 0) == 0) return g_gt_error;
  return g_shape_error;
}

}  // namespace

void init_errors(py::module_& m) {
  g_gt_error = PyErr_NewExceptionWithDoc("gt.GTError", "Base class of GT's errors.",
                                         PyExc_RuntimeError, nullptr);
  py::tuple shape_bases = py::make_tuple(py::handle(g_gt_error), py::handle(PyExc_ValueError));
  g_shape_error = PyErr_NewExceptionWithDoc(
      "gt.ShapeError",
      "A user error caught where the op was called (shape, dtype, axis, in-place misuse).",
      shape_bases.ptr(), nullptr);
  g_worker_error = PyErr_NewExceptionWithDoc(
      "gt.WorkerError",
      "An error reported by the GT workers or the session, raised at the next sync point.",
      g_gt_error, nullptr);
  if (!g_gt_error || !g_shape_error || !g_worker_error) throw py::error_already_set();
  m.attr("GTError") = py::handle(g_gt_error);
  m.attr("ShapeError") = py::handle(g_shape_error);
  m.attr("WorkerError") = py::handle(g_worker_error);

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const SyncError& e) {
      PyErr_SetString(g_worker_error, e.what());
    } catch (const gt::Error& e) {
      PyErr_SetString(class_for(e.what()), e.what());
    }
  });
}

}  // namespace gtpy

PYBIND11_MODULE(_gt, m) {
  m.doc() = "GT's Python binding over libgtclient (use the `gt` package, not this module).";
  gtpy::init_errors(m);
  gtpy::init_dtypes(m);
  gtpy::init_tensor(m);
  gtpy::init_factories(m);
  gtpy::init_autograd(m);
  gtpy::init_functional(m);
  gtpy::init_nn(m);
  gtpy::init_optim(m);
  gtpy::init_session(m);
  gtpy::init_signal(m);
}
