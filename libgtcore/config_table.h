// Option tables (ARCHITECTURE §11, issue 17): each option of a daemon is declared once, as a row of
// an X-macro .def file (dispatcherd/dispatcher_options.def, workerd/worker_options.def) that
// binds its name, the options-struct member it fills, the member's type and default, bounds
// and help. Generated from the rows:
//   - the options struct's members, with their defaults (libgtcore/option_members.inc);
//   - the rows themselves (libgtcore/option_table.inc): OptionTable<S> below, which declares
//     them in a gt::Config (the flag parser and YAML loader), copies the parsed values into
//     the struct, and renders --help and the documented YAML (--print-config, etc/gt/*.yaml).
// A row's default is read from a default-constructed struct, so it exists in exactly one place.
//
// A .def file uses these macros (the .inc files define them):
//   GT_HEADER(text)                                    the rendered file's opening comment
//   GT_SECTION(title)                                  heading for the rows that follow
//   GT_INT(type, name, default, min, max, help, doc)   an integer member of C++ `type`
//   GT_BOOL(name, default, help, doc)                  a bool member (a flag without value)
//   GT_STRING(name, default, help, doc)                a std::string member
// `name` is both the member and the key (--name-with-dashes on the command line). `help` is one
// line (--help); `doc` is more prose for the YAML comment ("" when help says it all), where
// "\n" starts a new line (lists keep their indentation).
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "libgtcore/config.h"

namespace gt {

// One option as --help and the YAML renderer see it (no struct type).
struct OptionDoc {
  std::string section, name;
  Config::Value value, dflt;  // value: what the rendered file sets
  double min = 0, max = 0;    // integers only
  std::string help, doc;
};

// --help: the rows in order under their section headings, one line each.
std::string render_option_help(const std::vector<OptionDoc>& rows);
// --print-config: `header` (plain text, "\n" separated) as a comment, then every row as a
// commented `key: value` block: its help and doc, range and built-in default (and, where the
// value differs from it, a line saying so). The result loads back through gt::Config.
std::string render_option_yaml(const std::string& header, const std::vector<OptionDoc>& rows);
// A value as YAML writes it: integers and bools bare, strings double-quoted.
std::string option_yaml_value(const Config::Value& v);

// True when an integer row's default lies in [min, max] and the bounds fit both the member's
// type and gt::Config's int64_t (checked at compile time for every GT_INT row, option_table.inc).
template <class T>
constexpr bool int_option_fits(long double dflt, long double min, long double max) {
  using L = long double;  // exact for every 64-bit integer on the platforms GT builds for
  return std::is_integral_v<T> && !std::is_same_v<T, bool> && min <= dflt && dflt <= max &&
         min >= L(std::numeric_limits<T>::min()) && max <= L(std::numeric_limits<T>::max()) &&
         min >= L(std::numeric_limits<int64_t>::min()) &&
         max <= L(std::numeric_limits<int64_t>::max());
}

template <class S>
struct OptionRow {
  using Member = std::variant<bool S::*, int S::*, uint32_t S::*, int64_t S::*, uint64_t S::*,
                              std::string S::*>;
  const char* section;
  const char* name;
  Member member;
  double min, max;  // integers: inclusive bounds; bools and strings: unused (0)
  const char* help;
  const char* doc;
};

template <class S>
class OptionTable {
 public:
  OptionTable(std::string header, std::vector<OptionRow<S>> rows)
      : header_(std::move(header)), rows_(std::move(rows)) {}

  const std::vector<OptionRow<S>>& rows() const { return rows_; }

  // The row's member in `s`, as gt::Config holds it (integers as int64_t).
  static Config::Value value_in(const OptionRow<S>& r, const S& s) {
    return std::visit(
        [&](auto m) -> Config::Value {
          using T = std::decay_t<decltype(s.*m)>;
          if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::string>) return s.*m;
          else return static_cast<int64_t>(s.*m);
        },
        r.member);
  }
  // The built-in default: the member's initializer.
  static Config::Value default_of(const OptionRow<S>& r) { return value_in(r, defaults()); }
  static const S& defaults() {
    static const S d{};
    return d;
  }

  // Declares every row in `cfg` with its default, bounds and help.
  void declare(Config& cfg) const {
    for (const auto& r : rows_) {
      Config::Value d = default_of(r);
      if (auto* i = std::get_if<int64_t>(&d))
        cfg.declare_int(r.name, *i, static_cast<int64_t>(r.min), static_cast<int64_t>(r.max),
                        r.help);
      else if (auto* b = std::get_if<bool>(&d)) cfg.declare_bool(r.name, *b, r.help);
      else cfg.declare_string(r.name, std::get<std::string>(d), r.help);
    }
  }
  // Copies the values `cfg` holds (declared by declare()) into `out`'s members. The bounds
  // were checked when they were set and fit the member's type (int_option_fits).
  void fill(const Config& cfg, S* out) const {
    for (const auto& r : rows_) {
      std::visit(
          [&](auto m) {
            using T = std::decay_t<decltype(out->*m)>;
            if constexpr (std::is_same_v<T, bool>) out->*m = cfg.get_bool(r.name);
            else if constexpr (std::is_same_v<T, std::string>) out->*m = cfg.get_string(r.name);
            else out->*m = static_cast<T>(cfg.get_int(r.name));
          },
          r.member);
    }
  }

  std::vector<OptionDoc> docs(const S& values) const {
    std::vector<OptionDoc> out;
    for (const auto& r : rows_)
      out.push_back({r.section, r.name, value_in(r, values), default_of(r), r.min, r.max, r.help,
                     r.doc});
    return out;
  }
  std::string help() const { return render_option_help(docs(defaults())); }
  // The documented YAML file (GT_HEADER, then every row) setting `values`.
  std::string yaml(const S& values) const { return render_option_yaml(header_, docs(values)); }

 private:
  std::string header_;
  std::vector<OptionRow<S>> rows_;
};

// A daemon's command line: its options, and the actions that print and exit.
struct DaemonCommand {
  const char* program;  // "gt-dispatcherd"
  const char* usage;    // the usage lines above the option list
};

// Takes the actions --help/-h (usage and the option list) and --version out of `argv`: the exit
// status when one was given (0), else nullopt, with the other arguments in `*rest` (argv[0]
// first) and whether --print-config was among them in `*print_config`.
std::optional<int> take_daemon_actions(const DaemonCommand& d, const std::string& option_help,
                                       int argc, char** argv, std::vector<char*>* rest,
                                       bool* print_config);

// Parses a daemon's command line into `*out` through `table`: --key value, --key=value,
// --flag and --config FILE as gt::Config parses them. Returns the exit status when the program
// is done (--help, --version, --print-config: 0, printed on stdout; a bad option: 2, said on
// stderr), or nullopt to run.
template <class S>
std::optional<int> parse_daemon_command_line(const DaemonCommand& d, const OptionTable<S>& table,
                                             int argc, char** argv, S* out) {
  std::vector<char*> args;
  bool print_config = false;
  if (auto done = take_daemon_actions(d, table.help(), argc, argv, &args, &print_config))
    return done;
  Config cfg;
  table.declare(cfg);
  if (Status st = cfg.parse_args(static_cast<int>(args.size()), args.data()); !st.is_ok()) {
    std::fprintf(stderr, "%s: %s\n", d.program, st.message().c_str());
    return 2;
  }
  table.fill(cfg, out);
  if (print_config) {
    std::fputs(table.yaml(*out).c_str(), stdout);
    return 0;
  }
  return std::nullopt;
}

}  // namespace gt
