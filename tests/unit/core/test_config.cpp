// Config: declared options, YAML strings and files, command-line parsing, and errors that name
// the key and where it came from.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "libgtcore/config.h"
#include "require_ok.h"

using namespace gt;

namespace {

Config make() {
  Config c;
  c.declare_string("listen_address", "127.0.0.1", "address to bind");
  c.declare_int("port", 29500, 0, 65535, "TCP port");
  c.declare_int("max_frame_bytes", 67108864, 1024, 1073741824, "largest frame");
  c.declare_double("ratio", 0.5, 0.0, 1.0, "a fraction");
  c.declare_bool("exit_when_idle", false, "exit when idle");
  c.declare_string("log_level", "info", "log level");
  return c;
}

// argv from strings (argv[0] is the program name and is skipped by parse_args).
struct Argv {
  std::vector<std::string> s;
  std::vector<char*> p;
  explicit Argv(std::vector<std::string> args) : s(std::move(args)) {
    s.insert(s.begin(), "prog");
    for (auto& a : s) p.push_back(a.data());
    p.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(s.size()); }
  char** argv() { return p.data(); }
};

// A temporary directory removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gt_config_test.XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) {
    auto p = path / name;
    std::ofstream(p) << text;
    return p.string();
  }
};

}  // namespace

TEST_CASE("declared options have their defaults", "[config]") {
  Config c = make();
  CHECK(c.get_string("listen_address") == "127.0.0.1");
  CHECK(c.get_int("port") == 29500);
  CHECK(c.get_int("max_frame_bytes") == 67108864);
  CHECK(c.get_double("ratio") == 0.5);
  CHECK(c.get_bool("exit_when_idle") == false);
  CHECK_FALSE(c.was_set("port"));
  CHECK_THROWS_AS(c.get_int("nope"), std::logic_error);
  std::string h = c.help();
  CHECK_THAT(h, Catch::Contains("--max-frame-bytes") && Catch::Contains("67108864") &&
                    Catch::Contains("largest frame") && Catch::Contains("--exit-when-idle"));
}

TEST_CASE("YAML strings set options", "[config]") {
  Config c = make();
  GT_REQUIRE_OK(c.load_yaml_string("port: 1234\n"
                             "listen_address: 0.0.0.0\n"
                             "ratio: 0.25\n"
                             "exit_when_idle: true\n"
                             "log_level: \"debug\"\n",
                             "test.yaml")
              );
  CHECK(c.get_int("port") == 1234);
  CHECK(c.get_string("listen_address") == "0.0.0.0");
  CHECK(c.get_double("ratio") == 0.25);
  CHECK(c.get_bool("exit_when_idle"));
  CHECK(c.get_string("log_level") == "debug");
  CHECK(c.was_set("port"));
  CHECK_FALSE(c.was_set("max_frame_bytes"));
  // empty documents and comment-only files are fine
  GT_CHECK_OK(c.load_yaml_string("", "empty.yaml"));
  GT_CHECK_OK(c.load_yaml_string("# only a comment\n", "c.yaml"));
  CHECK(c.get_int("port") == 1234);
  // dashes in keys are accepted like flags
  GT_REQUIRE_OK(c.load_yaml_string("max-frame-bytes: 2048", "t"));
  CHECK(c.get_int("max_frame_bytes") == 2048);
  // an empty string value for a string option
  GT_REQUIRE_OK(c.load_yaml_string("log_level: ''", "t"));
  CHECK(c.get_string("log_level").empty());
}

TEST_CASE("unknown keys are an error naming the key and the source", "[config]") {
  Config c = make();
  Status st = c.load_yaml_string("port: 1\nlisten_adress: 0.0.0.0\n", "/etc/gt/dispatcher.yaml");
  REQUIRE_FALSE(st.is_ok());
  CHECK(st.code() == Code::kInvalidArgument);
  CHECK_THAT(st.message(),
             Catch::Contains("listen_adress") && Catch::Contains("/etc/gt/dispatcher.yaml"));
}

TEST_CASE("out-of-range and wrongly typed values name the key", "[config]") {
  struct C {
    std::string yaml, key;
  };
  const std::vector<C> bad = {
      {"port: 65536", "port"},
      {"port: -1", "port"},
      {"max_frame_bytes: 1023", "max_frame_bytes"},
      {"max_frame_bytes: 1073741825", "max_frame_bytes"},
      {"port: abc", "port"},
      {"port: 1.5", "port"},
      {"port: 12abc", "port"},
      {"port: 99999999999999999999999", "port"},
      {"ratio: 1.5", "ratio"},
      {"ratio: -0.1", "ratio"},
      {"ratio: x", "ratio"},
      {"ratio: .nan", "ratio"},
      {"ratio: 0.5x", "ratio"},
      {"exit_when_idle: maybe", "exit_when_idle"},
      {"exit_when_idle: 2", "exit_when_idle"},
      {"port: [1, 2]", "port"},
      {"listen_address: {a: 1}", "listen_address"},
  };
  for (const auto& b : bad) {
    Config c = make();
    Status st = c.load_yaml_string(b.yaml, "f.yaml");
    INFO(b.yaml << " -> " << st.to_string());
    REQUIRE_FALSE(st.is_ok());
    CHECK_THAT(st.message(), Catch::Contains(b.key) && Catch::Contains("f.yaml"));
    CHECK(c.get_int("port") == 29500);  // nothing changed
  }
  Config c = make();
  GT_CHECK_OK(c.load_yaml_string("port: 0", "f"));
  GT_CHECK_OK(c.load_yaml_string("port: 65535", "f"));
  CHECK(c.get_int("port") == 65535);
  GT_CHECK_OK(c.load_yaml_string("max_frame_bytes: 1024", "f"));
  GT_CHECK_OK(c.load_yaml_string("max_frame_bytes: 1073741824", "f"));
}

TEST_CASE("malformed YAML documents are errors naming the source", "[config]") {
  for (const std::string bad : {"- a\n- b\n", "just a string", "port: [1,\n", "{port: 1"}) {
    Config c = make();
    Status st = c.load_yaml_string(bad, "broken.yaml");
    INFO(bad);
    REQUIRE_FALSE(st.is_ok());
    CHECK_THAT(st.message(), Catch::Contains("broken.yaml"));
  }
}

TEST_CASE("bool spellings", "[config]") {
  for (const std::string t : {"true", "yes", "on", "1"}) {
    Config c = make();
    GT_REQUIRE_OK(c.set("exit_when_idle", t, "x"));
    CHECK(c.get_bool("exit_when_idle"));
    GT_REQUIRE_OK(c.load_yaml_string("exit_when_idle: " + t, "y"));
    CHECK(c.get_bool("exit_when_idle"));
  }
  for (const std::string f : {"false", "no", "off", "0"}) {
    Config c = make();
    GT_REQUIRE_OK(c.set("exit_when_idle", "true", "x"));
    GT_REQUIRE_OK(c.set("exit_when_idle", f, "x"));
    CHECK_FALSE(c.get_bool("exit_when_idle"));
  }
  Config c = make();
  CHECK_FALSE(c.set("exit_when_idle", "", "x").is_ok());
}

TEST_CASE("parse_args", "[config]") {
  SECTION("--k=v, --k v, --flag, dashes") {
    Config c = make();
    Argv a({"--port=1234", "--listen-address", "10.0.0.1", "--exit-when-idle",
            "--max_frame_bytes=4096", "--ratio", "0.75"});
    GT_REQUIRE_OK(c.parse_args(a.argc(), a.argv()));
    CHECK(c.get_int("port") == 1234);
    CHECK(c.get_string("listen_address") == "10.0.0.1");
    CHECK(c.get_bool("exit_when_idle"));
    CHECK(c.get_int("max_frame_bytes") == 4096);
    CHECK(c.get_double("ratio") == 0.75);
  }
  SECTION("--flag=false") {
    Config c = make();
    Argv a({"--exit-when-idle", "--exit-when-idle=false"});
    GT_REQUIRE_OK(c.parse_args(a.argc(), a.argv()));
    CHECK_FALSE(c.get_bool("exit_when_idle"));
  }
  SECTION("positional arguments") {
    Config c = make();
    Argv a({"first", "--port", "7", "second", "-x"});
    std::vector<std::string> pos;
    GT_REQUIRE_OK(c.parse_args(a.argc(), a.argv(), &pos));
    CHECK(pos == std::vector<std::string>{"first", "second", "-x"});
    CHECK(c.get_int("port") == 7);
    Config c2 = make();
    Status st = c2.parse_args(a.argc(), a.argv());  // no positional accepted
    REQUIRE_FALSE(st.is_ok());
    CHECK_THAT(st.message(), Catch::Contains("first"));
  }
  SECTION("errors") {
    auto err = [](std::vector<std::string> args) {
      Config c = make();
      Argv a(std::move(args));
      Status st = c.parse_args(a.argc(), a.argv());
      REQUIRE_FALSE(st.is_ok());
      return st.message();
    };
    CHECK_THAT(err({"--bogus=1"}), Catch::Contains("bogus"));
    CHECK_THAT(err({"--port"}), Catch::Contains("port"));
    CHECK_THAT(err({"--port", "x"}), Catch::Contains("port"));
    CHECK_THAT(err({"--port=70000"}), Catch::Contains("port"));
    CHECK_THAT(err({"--config"}), Catch::Contains("config"));
    CHECK_THAT(err({"--config=/nonexistent/gt/none.yaml"}),
               Catch::Contains("/nonexistent/gt/none.yaml"));
  }
}

TEST_CASE("a config file given by --config is loaded in place and later flags override it", "[config]") {
  TempDir dir;
  std::string file = dir.write("d.yaml",
                               "# dispatcher\n"
                               "port: 4000\n"
                               "log_level: warn\n"
                               "exit_when_idle: yes\n");
  {
    Config c = make();
    Argv a({"--port=1", "--config", file, "--log-level=error"});
    GT_REQUIRE_OK(c.parse_args(a.argc(), a.argv()));
    CHECK(c.get_int("port") == 4000);              // the file overrides the earlier flag
    CHECK(c.get_string("log_level") == "error");   // the later flag overrides the file
    CHECK(c.get_bool("exit_when_idle"));
  }
  {
    Config c = make();
    Argv a({"--config=" + file, "--port", "5"});
    GT_REQUIRE_OK(c.parse_args(a.argc(), a.argv()));
    CHECK(c.get_int("port") == 5);
    CHECK(c.get_string("log_level") == "warn");
  }
  {
    Config c = make();
    GT_REQUIRE_OK(c.load_yaml_file(file));
    CHECK(c.get_int("port") == 4000);
  }
  SECTION("errors in a file name the file and the key") {
    std::string bad = dir.write("bad.yaml", "port: 4000\nportt: 1\n");
    Config c = make();
    Argv a({"--config", bad});
    Status st = c.parse_args(a.argc(), a.argv());
    REQUIRE_FALSE(st.is_ok());
    CHECK_THAT(st.message(), Catch::Contains("portt") && Catch::Contains(bad));
  }
  SECTION("comment-only and missing files") {
    Config c = make();
    GT_CHECK_OK(c.load_yaml_file(dir.write("empty.yaml", "# nothing here\n")));
    Status st = c.load_yaml_file((dir.path / "missing.yaml").string());
    REQUIRE_FALSE(st.is_ok());
    CHECK(st.code() == Code::kNotFound);
    CHECK_THAT(st.message(), Catch::Contains("missing.yaml"));
  }
}

TEST_CASE("normalize_option_name", "[config]") {
  CHECK(normalize_option_name("max-frame-bytes") == "max_frame_bytes");
  CHECK(normalize_option_name("port") == "port");
}
