#include "libgtcore/config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace gt {

std::string normalize_option_name(std::string name) {
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

void Config::declare_int(const std::string& name, int64_t dflt, int64_t min, int64_t max,
                         const std::string& help) {
  options_[name] = Option{dflt, dflt, static_cast<double>(min), static_cast<double>(max), help};
}
void Config::declare_double(const std::string& name, double dflt, double min, double max,
                            const std::string& help) {
  options_[name] = Option{dflt, dflt, min, max, help};
}
void Config::declare_bool(const std::string& name, bool dflt, const std::string& help) {
  options_[name] = Option{dflt, dflt, 0, 0, help};
}
void Config::declare_string(const std::string& name, const std::string& dflt,
                            const std::string& help) {
  options_[name] = Option{dflt, dflt, 0, 0, help};
}

Status Config::set(const std::string& raw_name, const std::string& text,
                   const std::string& source) {
  std::string name = normalize_option_name(raw_name);
  auto it = options_.find(name);
  if (it == options_.end()) return invalid_argument("{}: unknown option '{}'", source, raw_name);
  Option& o = it->second;
  if (std::holds_alternative<int64_t>(o.dflt)) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size())
      return invalid_argument("{}: option '{}' expects an integer, got '{}'", source, name, text);
    if (static_cast<double>(v) < o.min || static_cast<double>(v) > o.max)
      return invalid_argument("{}: option '{}' = {} is out of range [{}, {}]", source, name, v,
                              static_cast<int64_t>(o.min), static_cast<int64_t>(o.max));
    o.value = v;
  } else if (std::holds_alternative<double>(o.dflt)) {
    double v = 0;
    try {
      size_t used = 0;
      v = std::stod(text, &used);
      if (used != text.size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      return invalid_argument("{}: option '{}' expects a number, got '{}'", source, name, text);
    }
    if (!std::isfinite(v) || v < o.min || v > o.max)
      return invalid_argument("{}: option '{}' = {} is out of range [{}, {}]", source, name, v,
                              o.min, o.max);
    o.value = v;
  } else if (std::holds_alternative<bool>(o.dflt)) {
    if (text == "true" || text == "1" || text == "yes" || text == "on") {
      o.value = true;
    } else if (text == "false" || text == "0" || text == "no" || text == "off") {
      o.value = false;
    } else {
      return invalid_argument("{}: option '{}' expects true or false, got '{}'", source, name,
                              text);
    }
  } else {
    o.value = text;
  }
  o.set = true;
  return Status::ok();
}

Status Config::load_yaml_string(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return invalid_argument("{}: invalid YAML: {}", source, e.what());
  }
  if (root.IsNull()) return Status::ok();  // an empty file (only comments) is fine
  if (!root.IsMap()) return invalid_argument("{}: expected a mapping of option: value", source);
  for (const auto& kv : root) {
    std::string key = kv.first.as<std::string>();
    if (!kv.second.IsScalar())
      return invalid_argument("{}: option '{}' must be a single value", source, key);
    GT_RETURN_IF_ERROR(set(key, kv.second.as<std::string>(), source));
  }
  return Status::ok();
}

Status Config::load_yaml_file(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return not_found("cannot read config file {}", path);
  } catch (const YAML::Exception& e) {
    return invalid_argument("{}: invalid YAML: {}", path, e.what());
  }
  return load_yaml_string(YAML::Dump(root), path);
}

Status Config::parse_args(int argc, char** argv, std::vector<std::string>* positional) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      if (!positional) return invalid_argument("unexpected argument '{}'", arg);
      positional->push_back(arg);
      continue;
    }
    std::string body = arg.substr(2), name, value;
    bool has_value = false;
    if (auto eq = body.find('='); eq != std::string::npos) {
      name = normalize_option_name(body.substr(0, eq));
      value = body.substr(eq + 1);
      has_value = true;
    } else {
      name = normalize_option_name(body);
    }
    if (name == "config") {
      if (!has_value) {
        if (i + 1 >= argc) return invalid_argument("--config needs a file");
        value = argv[++i];
      }
      GT_RETURN_IF_ERROR(load_yaml_file(value));
      continue;
    }
    auto it = options_.find(name);
    if (it == options_.end()) return invalid_argument("unknown option '--{}'", body);
    if (!has_value) {
      if (std::holds_alternative<bool>(it->second.dflt)) {
        value = "true";
      } else {
        if (i + 1 >= argc) return invalid_argument("option '--{}' needs a value", name);
        value = argv[++i];
      }
    }
    GT_RETURN_IF_ERROR(set(name, value, "command line"));
  }
  return Status::ok();
}

const Config::Option& Config::find(const std::string& name) const {
  auto it = options_.find(name);
  if (it == options_.end()) throw std::logic_error("undeclared config option " + name);
  return it->second;
}

int64_t Config::get_int(const std::string& n) const { return std::get<int64_t>(find(n).value); }
double Config::get_double(const std::string& n) const { return std::get<double>(find(n).value); }
bool Config::get_bool(const std::string& n) const { return std::get<bool>(find(n).value); }
const std::string& Config::get_string(const std::string& n) const {
  return std::get<std::string>(find(n).value);
}
bool Config::was_set(const std::string& n) const { return find(n).set; }

std::string Config::help() const {
  std::string out;
  for (const auto& [name, o] : options_)
    out += option_help_line(name, o.dflt, o.min, o.max, o.help);
  return out;
}

std::string option_help_line(const std::string& name, const Config::Value& dflt, double min,
                             double max, const std::string& help) {
  std::string type, value;
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, int64_t>) {
          type = fmt::format("int {}..{}", static_cast<int64_t>(min), static_cast<int64_t>(max));
          value = std::to_string(v);
        } else if constexpr (std::is_same_v<V, double>) {
          type = fmt::format("number {}..{}", min, max);
          value = fmt::format("{}", v);
        } else if constexpr (std::is_same_v<V, bool>) {
          type = "bool";
          value = v ? "true" : "false";
        } else {
          type = "string";
          value = "'" + v + "'";
        }
      },
      dflt);
  std::string flag = name;
  for (char& c : flag)
    if (c == '_') c = '-';
  return fmt::format("  --{:<30} {} (default {}): {}\n", flag, type, value, help);
}

}  // namespace gt
