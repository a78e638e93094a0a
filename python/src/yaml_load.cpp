// _gt._yaml_load(text): YAML -> Python objects through yaml-cpp (already a GT dependency), the
// fallback of gt.load_config where PyYAML (python3-yaml) is not installed. Plain scalars are
// resolved like PyYAML's safe_load (null, booleans including yes/no/on/off, ints, floats;
// anything else a string); quoted scalars are strings.
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdlib>

#include "common.h"

namespace gtpy {
namespace {

py::object plain_scalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return py::none();
  for (const char* t : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})
    if (s == t) return py::bool_(true);
  for (const char* f : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})
    if (s == f) return py::bool_(false);
  {
    const char* b = s.data();
    const char* e = b + s.size();
    const char* p = (*b == '+') ? b + 1 : b;
    int base = 10;
    bool neg = false;
    if (*p == '-') {
      neg = true;
      ++p;
    }
    if (e - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'o')) {
      base = p[1] == 'x' ? 16 : 8;
      p += 2;
    }
    long long v = 0;
    auto [end, ec] = std::from_chars(p, e, v, base);
    if (ec == std::errc() && end == e && p != e) return py::int_(neg ? -v : v);
  }
  if (s == ".inf" || s == ".Inf" || s == "+.inf") return py::float_(HUGE_VAL);
  if (s == "-.inf" || s == "-.Inf") return py::float_(-HUGE_VAL);
  if (s == ".nan" || s == ".NaN") return py::float_(NAN);
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (end == s.c_str() + s.size() && s.find_first_of("0123456789") != std::string::npos)
    return py::float_(d);
  return py::str(s);
}

py::object to_python(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return py::none();
    case YAML::NodeType::Scalar:
      if (n.Tag() == "!") return py::str(n.Scalar());  // quoted
      return plain_scalar(n.Scalar());
    case YAML::NodeType::Sequence: {
      py::list out;
      for (const auto& item : n) out.append(to_python(item));
      return std::move(out);
    }
    case YAML::NodeType::Map: {
      py::dict out;
      for (const auto& kv : n) out[to_python(kv.first)] = to_python(kv.second);
      return std::move(out);
    }
  }
  return py::none();
}

}  // namespace

void init_yaml(py::module_& m) {
  m.def(
      "_yaml_load",
      [](const std::string& text) {
        try {
          return to_python(YAML::Load(text));
        } catch (const YAML::Exception& e) {
          throw py::value_error(e.what());
        }
      },
      "text"_a, "Parses YAML text (one document) into dicts, lists and scalars (yaml-cpp).");
}

}  // namespace gtpy
