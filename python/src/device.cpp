// Devices in Python (gt/device.h): gt.device, Tensor.device / .to / .cuda / .cpu, `with
// gt.device(...)`, the device= argument of factories, and gt.cuda's queries.
#include "common.h"
#include "libgtclient/run_op.h"

namespace gtpy {
namespace {

using T = gt::Tensor;

const char* type_name(gt::DeviceType t) {
  return t == gt::kCUDA ? "cuda" : t == gt::kCPU ? "cpu" : "auto";
}

gt::DeviceType type_from(const std::string& s) {
  return gt::Device(std::string_view(s)).type();
}

bool looks_like_device(const std::string& s) {
  return s.rfind("cuda", 0) == 0 || s.rfind("cpu", 0) == 0 || s.rfind("auto", 0) == 0;
}

// `with gt.device("cuda:1"):` — the guards the enters made, per thread, ended by the exits.
thread_local std::vector<std::unique_ptr<gt::DeviceGuard>> t_guards;

// What Tensor.to(...) was asked for: a device, a dtype, both, or another tensor's.
struct ToArgs {
  std::optional<gt::Device> device;
  std::optional<gt::DType> dtype;
};

ToArgs parse_to(const py::args& args, const py::kwargs& kwargs) {
  ToArgs out;
  if (args.size() > 2) throw py::type_error("to() takes at most 2 positional arguments (device, dtype)");
  for (py::handle a : args) {
    if (py::isinstance<T>(a)) {
      const T& o = a.cast<const T&>();
      out.device = o.device();
      out.dtype = o.dtype();
    } else if (py::isinstance<gt::Device>(a) || PyLong_Check(a.ptr()) ||
               (PyUnicode_Check(a.ptr()) && looks_like_device(a.cast<std::string>()))) {
      out.device = device_from(a);
    } else {
      out.dtype = to_dtype(a);
    }
  }
  for (auto [k, v] : kwargs) {
    std::string key = py::str(k);
    if (key == "device") out.device = device_from(v);
    else if (key == "dtype") out.dtype = to_optional_dtype(v);
    else if (key != "non_blocking" && key != "copy" && key != "memory_format")
      throw py::type_error("to() got an unexpected keyword argument '" + key + "'");
  }
  return out;
}

}  // namespace

std::optional<gt::Device> device_from(py::handle h) {
  if (h.is_none()) return std::nullopt;
  if (py::isinstance<gt::Device>(h)) return h.cast<gt::Device>();
  if (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())) return gt::Device(gt::kCUDA, h.cast<int>());
  if (PyUnicode_Check(h.ptr())) return gt::Device(h.cast<std::string>());
  throw py::type_error("gt: expected a device (gt.device, 'cuda:1', an int), got " +
                       std::string(py::str(py::type::handle_of(h))));
}

DevicePin::DevicePin(py::handle device) {
  std::optional<gt::Device> d = device_from(device);
  if (d) guard_.emplace(*d);
}

DevicePin::DevicePin(const gt::Tensor& like, py::handle device) {
  std::optional<gt::Device> d = device_from(device);
  guard_.emplace(d.value_or(like.device()));
}

void init_device(py::module_& m) {
  py::class_<gt::Device>(m, "device",
                         "gt.device('cuda:1'): a device names a worker (cuda:N is worker N); "
                         "'auto', 'cpu' and 'cuda' leave the choice to the dispatcher.")
      .def(py::init([](const std::string& spec) { return gt::Device(spec); }), "type"_a)
      .def(py::init([](const std::string& type, std::optional<int> index) {
             return gt::Device(type_from(type), index.value_or(-1));
           }),
           "type"_a, "index"_a)
      .def(py::init([](int index) { return gt::Device(gt::kCUDA, index); }), "index"_a)
      .def(py::init([](const gt::Device& d) { return d; }))
      .def_property_readonly("type", [](const gt::Device& d) { return type_name(d.type()); })
      .def_property_readonly("index", [](const gt::Device& d) -> py::object {
        return d.has_index() ? py::object(py::int_(d.index())) : py::object(py::none());
      })
      .def("__eq__", [](const gt::Device& a, py::handle b) {
        if (py::isinstance<gt::Device>(b)) return a == b.cast<gt::Device>();
        if (PyUnicode_Check(b.ptr())) {
          try {
            return a == gt::Device(b.cast<std::string>());
          } catch (const gt::Error&) {
            return false;
          }
        }
        return false;
      })
      .def("__hash__", [](const gt::Device& d) { return py::hash(py::str(d.str())); })
      .def("__str__", &gt::Device::str)
      .def("__repr__",
           [](const gt::Device& d) {
             std::string s = std::string("device(type='") + type_name(d.type()) + "'";
             if (d.has_index()) s += ", index=" + std::to_string(d.index());
             return s + ")";
           })
      .def("__enter__",
           [](const gt::Device& d) {
             t_guards.push_back(std::make_unique<gt::DeviceGuard>(d));
             return d;
           })
      .def("__exit__", [](const gt::Device&, py::args) {
        if (!t_guards.empty()) t_guards.pop_back();
        return false;
      });
}

void init_tensor_device(py::class_<gt::Tensor>& cls) {
  cls.def_property_readonly("device", &T::device, "The worker this tensor is pinned to (cuda:N), else auto.")
      .def_property_readonly("is_cuda", &T::is_cuda)
      .def("get_device", &T::get_device)
      .def("cpu", &T::cpu, "The tensor itself: GT values reach the host from any worker.")
      .def(
          "cuda", [](const T& t, py::handle device) { return device.is_none() ? t : t.to(*device_from(device)); },
          "device"_a = py::none(),
          "Pinned to worker N (cuda(N), cuda('cuda:N')); without a device, the tensor itself.")
      .def(
          "to",
          [](const T& t, py::args args, py::kwargs kwargs) {
            ToArgs a = parse_to(args, kwargs);
            const bool copy = kwargs.contains("copy") && py::bool_(kwargs["copy"]);
            T out = a.device ? t.to(*a.device, a.dtype) : a.dtype ? t.to(*a.dtype) : t;
            return copy && out.impl() == t.impl() ? t.clone() : out;
          },
          "t.to(device), t.to(dtype), t.to(device, dtype), t.to(other), device=/dtype= keywords: "
          "a copy on that worker / of that dtype (the tensor itself when nothing changes).")
      .def(
          "_move_in_place_",
          [](py::object self, py::handle device, py::handle dtype) {
            std::optional<gt::Device> d = device_from(device);
            gt::detail::move_in_place(self.cast<const T&>(), d.value_or(gt::Device(gt::kAuto)),
                                      to_optional_dtype(dtype));
            return self;
          },
          "device"_a = py::none(), "dtype"_a = py::none(),
          "Module.to's move: every reference to this leaf sees the new device and dtype.");
}

void init_cuda(py::module_& m) {
  // Module.to's arguments, parsed as Tensor.to's: (device or None, dtype or None).
  m.def("_parse_to", [](py::args args, py::kwargs kwargs) {
    ToArgs a = parse_to(args, kwargs);
    return py::make_tuple(a.device ? py::cast(*a.device) : py::none(),
                          a.dtype ? dtype_object(*a.dtype) : py::none());
  });
  py::module_ cuda = m.def_submodule("_cuda", "gt.cuda's queries (see gt/cuda.py).");
  cuda.def("device_count", &gt::cuda::device_count);
  cuda.def("is_available", &gt::cuda::is_available);
}

}  // namespace gtpy
