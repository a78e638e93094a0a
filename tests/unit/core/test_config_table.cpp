// Option tables (libgtcore/config_table.h): a struct generated from a .def, its rows, their
// defaults and bounds, and the --help / YAML renderings, on a small table of its own.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "require_ok.h"
#include "libgtcore/config_table.h"

using namespace gt;

namespace config_table_test {

struct TestOptions {
#define GT_OPTIONS_DEF "tests/unit/core/test_options.def"
#include "libgtcore/option_members.inc"
};

const OptionTable<TestOptions>& table();

}  // namespace config_table_test

#define GT_OPTIONS_STRUCT config_table_test::TestOptions
#define GT_OPTIONS_TABLE config_table_test::table
#define GT_OPTIONS_DEF "tests/unit/core/test_options.def"
#include "libgtcore/option_table.inc"

using config_table_test::table;
using config_table_test::TestOptions;

namespace {

Config declared() {
  Config c;
  table().declare(c);
  return c;
}

TestOptions filled(const Config& c) {
  TestOptions o;
  o.port = -1;  // so that a row fill() forgot would show
  table().fill(c, &o);
  return o;
}

// An argv of pointers into `args` (which must outlive it); args[0] is the program.
std::vector<char*> argv_of(std::vector<std::string>& args) {
  std::vector<char*> p;
  for (auto& a : args) p.push_back(a.data());
  return p;
}

}  // namespace

TEST_CASE("the generated struct has the rows' defaults", "[config_table]") {
  const TestOptions o;
  CHECK(o.listen_address == "127.0.0.1");  // the literals of test_options.def
  CHECK(o.port == 29500);
  CHECK(o.max_frame_bytes == (uint64_t{64} << 20));
  CHECK(o.window == 16u);
  CHECK(o.offset == -5);
  CHECK(o.exit_when_idle == false);
  CHECK(o.odd == "a \"quoted\" \\ value: # not a comment");

  const auto& rows = table().rows();
  REQUIRE(rows.size() == 8);
  CHECK(table().yaml(o).rfind("# first line of the header\n#\n# second paragraph\n", 0) == 0);
  CHECK(std::string(rows[0].section) == "Network");
  CHECK(std::string(rows[3].section) == "Other");
  const Config c = declared();
  for (const auto& r : rows) {
    INFO(r.name);
    const Config::Value d = OptionTable<TestOptions>::default_of(r);
    CHECK(d == OptionTable<TestOptions>::value_in(r, o));
    CHECK_FALSE(c.was_set(r.name));
    if (auto* i = std::get_if<int64_t>(&d)) CHECK(c.get_int(r.name) == *i);
    else if (auto* b = std::get_if<bool>(&d)) CHECK(c.get_bool(r.name) == *b);
    else CHECK(c.get_string(r.name) == std::get<std::string>(d));
  }
  // Filling from an untouched Config gives the defaults back, member by member.
  const TestOptions back = filled(c);
  for (const auto& r : rows)
    CHECK(OptionTable<TestOptions>::value_in(r, back) == OptionTable<TestOptions>::value_in(r, o));
}

TEST_CASE("integer rows enforce their bounds and the bounds fit the members", "[config_table]") {
  int checked = 0;
  for (const auto& r : table().rows()) {
    if (!std::holds_alternative<int64_t>(OptionTable<TestOptions>::default_of(r))) continue;
    INFO(r.name);
    const auto lo = static_cast<int64_t>(r.min), hi = static_cast<int64_t>(r.max);
    for (int64_t bad : {lo - 1, hi + 1}) {
      Config c = declared();
      Status st = c.set(r.name, std::to_string(bad), "t.yaml");
      REQUIRE_FALSE(st.is_ok());
      CHECK_THAT(st.message(), Catch::Contains(r.name) && Catch::Contains("out of range"));
    }
    for (int64_t good : {lo, hi}) {
      Config c = declared();
      GT_REQUIRE_OK(c.set(r.name, std::to_string(good), "t.yaml"));
      // The member holds the bound exactly (no narrowing on the way in).
      CHECK(OptionTable<TestOptions>::value_in(r, filled(c)) == Config::Value(good));
    }
    ++checked;
  }
  CHECK(checked == 4);
  // The compile-time check every GT_INT row passes (option_table.inc).
  STATIC_REQUIRE(int_option_fits<int>(5, 0, 10));
  STATIC_REQUIRE_FALSE(int_option_fits<int>(11, 0, 10));             // default out of bounds
  STATIC_REQUIRE_FALSE(int_option_fits<int>(0, 0, 1ll << 31));        // max beyond int
  STATIC_REQUIRE_FALSE(int_option_fits<uint32_t>(0, -1, 10));         // min below unsigned
  STATIC_REQUIRE_FALSE(int_option_fits<uint64_t>(0, 0, 1e19));        // beyond int64_t
  STATIC_REQUIRE(int_option_fits<uint64_t>(0, 0, 1ll << 44));
  STATIC_REQUIRE_FALSE(int_option_fits<bool>(0, 0, 1));
}

TEST_CASE("flags and YAML fill the members", "[config_table]") {
  Config c = declared();
  std::vector<std::string> args = {"prog", "--port=7", "--exit-when-idle", "--listen-address",
                                   "0.0.0.0", "--window", "32"};
  std::vector<char*> argv = argv_of(args);
  GT_REQUIRE_OK(c.parse_args(static_cast<int>(argv.size()), argv.data()));
  GT_REQUIRE_OK(c.load_yaml_string("log_level: debug\noffset: -100\n", "t.yaml"));
  const TestOptions o = filled(c);
  CHECK(o.port == 7);
  CHECK(o.exit_when_idle);
  CHECK(o.listen_address == "0.0.0.0");
  CHECK(o.window == 32u);
  CHECK(o.log_level == "debug");
  CHECK(o.offset == -100);
  CHECK(o.max_frame_bytes == (uint64_t{64} << 20));
}

TEST_CASE("--help lists the rows in order under their sections", "[config_table]") {
  const std::string h = table().help();
  const std::vector<std::string> in_order = {
      "Network:", "--listen-address", "--port",       "--max-frame-bytes", "Other:",
      "--window", "--offset",         "--exit-when-idle", "--log-level",   "--odd"};
  size_t at = 0;
  for (const auto& s : in_order) {
    INFO(s << "\n" << h);
    size_t p = h.find(s, at);
    REQUIRE(p != std::string::npos);
    at = p + s.size();
  }
  CHECK_THAT(h, Catch::Contains("int 0..65535 (default 29500): TCP port (0: ephemeral)"));
  CHECK_THAT(h, Catch::Contains("bool (default false): exit when idle"));
}

TEST_CASE("the documented YAML loads back to the values it was rendered from", "[config_table]") {
  TestOptions o;
  o.port = 4242;
  o.odd = "tab\there, \"quotes\", back\\slash and a # sign";
  o.exit_when_idle = true;
  o.offset = -100;
  const std::string yaml = table().yaml(o);
  INFO(yaml);
  Config c = declared();
  GT_REQUIRE_OK(c.load_yaml_string(yaml, "rendered.yaml"));
  const TestOptions back = filled(c);
  for (const auto& r : table().rows()) {
    INFO(r.name);
    CHECK(OptionTable<TestOptions>::value_in(r, back) == OptionTable<TestOptions>::value_in(r, o));
    CHECK(c.was_set(r.name));  // every option is a key
  }
  CHECK(yaml.rfind("# first line of the header\n#\n# second paragraph\n", 0) == 0);
  CHECK_THAT(yaml, Catch::Contains("# --- Network ---"));
  CHECK_THAT(yaml, Catch::Contains("# TCP port (0: ephemeral).\n# Range 0..65535. Built-in default "
                                   "29500 (this file sets another value).\nport: 4242\n"));
  CHECK_THAT(yaml, Catch::Contains("# Range 1024..1073741824 (1 GiB). Default 67108864 (64 MiB).\n"
                                   "max_frame_bytes: 67108864\n"));
  CHECK_THAT(yaml, Catch::Contains("# Range 16..2^20. Default 16.\nwindow: 16\n"));
  CHECK_THAT(yaml, Catch::Contains("# Default \"info\".\nlog_level: \"info\"\n"));
  // Comment lines are wrapped; a list item wraps under its own text.
  std::istringstream lines(yaml);
  std::string line, prev;
  bool hanging = false;
  while (std::getline(lines, line)) {
    CHECK(line.size() <= 97);
    if (prev.rfind("#   yes  exit after", 0) == 0) hanging = line.rfind("#        ", 0) == 0;
    prev = line;
  }
  CHECK(hanging);
}

TEST_CASE("a daemon's command line: options, actions, errors", "[config_table]") {
  const DaemonCommand d{"gt-test", "usage: gt-test"};
  {
    std::vector<std::string> args = {"prog", "--port", "9", "--log-level=warn"};
    std::vector<char*> argv = argv_of(args);
    TestOptions o;
    const int argc = static_cast<int>(argv.size());
    CHECK_FALSE(parse_daemon_command_line(d, table(), argc, argv.data(), &o).has_value());
    CHECK(o.port == 9);
    CHECK(o.log_level == "warn");
  }
  {
    std::vector<std::string> args = {"prog", "--port", "70000"};
    std::vector<char*> argv = argv_of(args);
    TestOptions o;
    CHECK(parse_daemon_command_line(d, table(), static_cast<int>(argv.size()), argv.data(), &o) ==
          std::optional<int>(2));
  }
  {
    std::vector<std::string> args = {"prog", "--print-config", "--port", "9"};
    std::vector<char*> argv = argv_of(args);
    std::vector<char*> rest;
    bool print = false;
    const int argc = static_cast<int>(argv.size());
    CHECK_FALSE(take_daemon_actions(d, "", argc, argv.data(), &rest, &print).has_value());
    CHECK(print);
    REQUIRE(rest.size() == 3);  // argv[0], --port, 9
    CHECK(std::string(rest[1]) == "--port");
  }
}
