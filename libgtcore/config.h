// Config as a table (ARCHITECTURE §11): each option declared once with its type, default, bounds and
// help; YAML files and command-line flags both set options through it. Unknown keys and
// out-of-range values are errors naming the key (and the file).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "libgtcore/status.h"

namespace gt {

class Config {
 public:
  using Value = std::variant<int64_t, double, bool, std::string>;

  void declare_int(const std::string& name, int64_t dflt, int64_t min, int64_t max,
                   const std::string& help);
  void declare_double(const std::string& name, double dflt, double min, double max,
                      const std::string& help);
  void declare_bool(const std::string& name, bool dflt, const std::string& help);
  void declare_string(const std::string& name, const std::string& dflt, const std::string& help);

  // Sets options from a YAML mapping of key: scalar. `source` names the file in errors.
  Status load_yaml_file(const std::string& path);
  Status load_yaml_string(const std::string& text, const std::string& source);
  // Sets one option from text ("--max-frame-bytes 1048576" -> set("max_frame_bytes", ...)).
  Status set(const std::string& name, const std::string& text, const std::string& source);
  // Parses --key=value / --key value / --flag (bools). A `--config FILE` is loaded in place, so
  // flags after it override the file. Returns the non-option arguments in `positional`.
  Status parse_args(int argc, char** argv, std::vector<std::string>* positional = nullptr);

  int64_t get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  bool was_set(const std::string& name) const;

  std::string help() const;  // one line per option (option_help_line), by name

 private:
  struct Option {
    Value value;
    Value dflt;
    double min = 0, max = 0;
    std::string help;
    bool set = false;
  };
  const Option& find(const std::string& name) const;
  std::map<std::string, Option> options_;
};

// "max-frame-bytes" -> "max_frame_bytes".
std::string normalize_option_name(std::string name);

// One line of --help: "  --max-frame-bytes   int 1024..1073741824 (default 67108864): help".
// `min`/`max` are shown for numbers only.
std::string option_help_line(const std::string& name, const Config::Value& dflt, double min,
                             double max, const std::string& help);

}  // namespace gt
