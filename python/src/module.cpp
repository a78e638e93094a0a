// The `gt._gt` extension module: registration and the exception classes, chosen by the error's
// status code (gt::Error::code(), carried on the wire from the worker or dispatcher that found
// it) and by where it was raised (at the call, or deferred to a sync point); no message parsing.
//
//   gt.GTError(RuntimeError)                 every GT error; .code is the status code's name
//   gt.ShapeError(GTError, ValueError)       a user error at the call site (INVALID_ARGUMENT,
//                                            OUT_OF_RANGE): shape, dtype, axis, in-place misuse
//   gt.PermissionDeniedError(GTError, PermissionError)
//                                            refused by the dispatcher (credentials)
//   gt.WorkerError(GTError)                  an error of queued work, raised at the next sync point
//                                            (fetch, item, print, synchronize)
//   gt.OutOfMemoryError(WorkerError)         RESOURCE_EXHAUSTED: a worker's memory or a quota
//   gt.UnavailableError(WorkerError)         UNAVAILABLE / DEADLINE_EXCEEDED: the dispatcher, a
//                                            worker or the session is gone or did not answer
#include "common.h"

namespace gtpy {
namespace {

PyObject* g_gt_error = nullptr;
PyObject* g_shape_error = nullptr;
PyObject* g_permission_error = nullptr;
PyObject* g_worker_error = nullptr;
PyObject* g_oom_error = nullptr;
PyObject* g_unavailable_error = nullptr;

PyObject* class_for(const gt::Error& e) {
  switch (e.code()) {
    case gt::Code::kResourceExhausted: return g_oom_error;
    case gt::Code::kUnavailable:
    case gt::Code::kDeadlineExceeded: return g_unavailable_error;
    case gt::Code::kInvalidArgument:
    case gt::Code::kOutOfRange: return e.deferred() ? g_worker_error : g_shape_error;
    case gt::Code::kPermissionDenied: return e.deferred() ? g_worker_error : g_permission_error;
    default: return e.deferred() ? g_worker_error : g_gt_error;
  }
}

PyObject* new_class(const char* name, const char* doc, py::tuple bases) {
  PyObject* c = PyErr_NewExceptionWithDoc(name, doc, bases.ptr(), nullptr);
  if (c == nullptr) throw py::error_already_set();
  return c;
}

}  // namespace

void init_errors(py::module_& m) {
  g_gt_error = new_class("gt.GTError", "Base class of GT's errors; .code names the status code.",
                         py::make_tuple(py::handle(PyExc_RuntimeError)));
  g_shape_error = new_class(
      "gt.ShapeError",
      "A user error caught where the op was called (shape, dtype, axis, in-place misuse).",
      py::make_tuple(py::handle(g_gt_error), py::handle(PyExc_ValueError)));
  g_permission_error = new_class(
      "gt.PermissionDeniedError", "Refused by the dispatcher (credentials, not allowed).",
      py::make_tuple(py::handle(g_gt_error), py::handle(PyExc_PermissionError)));
  g_worker_error = new_class(
      "gt.WorkerError",
      "An error reported by the GT workers or the session, raised at the next sync point.",
      py::make_tuple(py::handle(g_gt_error)));
  g_oom_error = new_class("gt.OutOfMemoryError",
                          "A worker ran out of memory, or the user's memory quota was exceeded.",
                          py::make_tuple(py::handle(g_worker_error)));
  g_unavailable_error = new_class(
      "gt.UnavailableError",
      "The dispatcher, a worker or the session is gone, or did not answer in time.",
      py::make_tuple(py::handle(g_worker_error)));
  m.attr("GTError") = py::handle(g_gt_error);
  m.attr("ShapeError") = py::handle(g_shape_error);
  m.attr("PermissionDeniedError") = py::handle(g_permission_error);
  m.attr("WorkerError") = py::handle(g_worker_error);
  m.attr("OutOfMemoryError") = py::handle(g_oom_error);
  m.attr("UnavailableError") = py::handle(g_unavailable_error);

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const gt::Error& e) {
      PyObject* cls = class_for(e);
      PyObject* exc = PyObject_CallFunction(cls, "s", e.what());
      if (exc == nullptr) return;  // the constructor's own error is set
      PyObject* code = PyUnicode_FromString(gt::code_name(e.code()));
      if (code != nullptr) {
        PyObject_SetAttrString(exc, "code", code);
        Py_DECREF(code);
      }
      PyErr_SetObject(cls, exc);
      Py_DECREF(exc);
    }
  });
}

}  // namespace gtpy

PYBIND11_MODULE(_gt, m) {
  m.doc() = "GT's Python binding over libgtclient (use the `gt` package, not this module).";
  gtpy::init_errors(m);
  gtpy::init_dtypes(m);
  gtpy::init_device(m);
  gtpy::init_tensor(m);
  gtpy::init_cuda(m);
  gtpy::init_factories(m);
  gtpy::init_autograd(m);
  gtpy::init_functional(m);
  gtpy::init_nn(m);
  gtpy::init_optim(m);
  gtpy::init_session(m);
  gtpy::init_signal(m);
}
