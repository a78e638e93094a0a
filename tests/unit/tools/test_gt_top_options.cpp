// gt-top's command line (tools/gt-top/options.h): URL and token precedence, the dispatcher.yaml
// fallback, refusals with the option named; URLs; key decoding (terminal.h).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tools/gt-top/options.h"
#include "tools/gt-top/terminal.h"

using namespace gt;
using namespace gt::top;

namespace {

struct Env {
  std::map<std::string, std::string> vars;
  Getenv get() const {
    return [this](const char* n) -> const char* {
      auto it = vars.find(n);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/gt-top-test-XXXXXX";
    REQUIRE(::mkdtemp(t) != nullptr);
    path = t;
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path + "/" + name) << text;
    return path + "/" + name;
  }
};

// A config that does not exist: the tests do not depend on this machine's /etc/gt.
const std::vector<std::string> kNoConfig = {"--config", "/nonexistent/dispatcher.yaml"};

std::vector<std::string> with(std::vector<std::string> a, bool no_config = true) {
  if (no_config) a.insert(a.end(), kNoConfig.begin(), kNoConfig.end());
  return a;
}

}  // namespace

TEST_CASE("gt-top options: defaults, modes, sort, numbers", "[gt-top]") {
  Env env;
  auto a = parse_args(with({"--url", "http://127.0.0.1:9090"}), env.get());
  REQUIRE(a.is_ok());
  const Options& o = a->options;
  CHECK(o.mode == Mode::kLive);
  CHECK(o.url.host == "127.0.0.1");
  CHECK(o.url.port == "9090");
  CHECK(o.interval_s == 1.0);
  CHECK(o.sort == SortKey::kOps);
  CHECK(o.token.empty());
  CHECK(o.count == 0);

  auto b = parse_args(with({"--url=127.0.0.1:1", "--once", "--sort=errors", "--interval", "0.5",
                            "--width", "80", "--count", "3", "--timeout", "2", "--ascii"}),
                      env.get());
  REQUIRE(b.is_ok());
  CHECK(b->options.mode == Mode::kOnce);
  CHECK(b->options.sort == SortKey::kErrors);
  CHECK(b->options.interval_s == 0.5);
  CHECK(b->options.width == 80);
  CHECK(b->options.width_set);
  CHECK(b->options.count == 3);
  CHECK(b->options.timeout_s == 2);
  CHECK(b->options.ascii);
  CHECK(parse_args(with({"--url", "h:1", "--json"}), env.get())->options.mode == Mode::kJson);

  auto refused = [&](std::vector<std::string> args, const std::string& says) {
    auto r = parse_args(with(args), env.get());
    INFO(says);
    REQUIRE(!r.is_ok());
    CHECK(r.status().message().find(says) != std::string::npos);
  };
  refused({"--url", "h:1", "--sort", "memory"}, "--sort: 'memory' is not one of ops, mem");
  refused({"--url", "h:1", "--interval", "0"}, "--interval");
  refused({"--url", "h:1", "--interval", "x"}, "--interval");
  refused({"--url", "h:1", "--width", "-3"}, "--width");
  refused({"--url", "h:1", "--once", "--json"}, "pick one");
  refused({"--url", "h:1", "--bogus"}, "unknown option '--bogus'");
  auto bare = parse_args({"--url"}, env.get());
  REQUIRE(!bare.is_ok());
  CHECK(bare.status().message() == "--url needs a value");
  refused({"--url", "https://h:1"}, "https is not supported");
  // --help and --version need nothing else.
  CHECK(parse_args({"--help"}, env.get())->help);
  CHECK(parse_args({"--version"}, env.get())->version);
  CHECK(usage().find("--once") != std::string::npos);
}

TEST_CASE("gt-top options: where the dispatcher is and which token", "[gt-top]") {
  TempDir dir;
  Env env;
  // No URL anywhere: the message says what to pass.
  auto none = parse_args(with({}), env.get());
  REQUIRE(!none.is_ok());
  CHECK(none.status().message().find("--url http://HOST:PORT") != std::string::npos);
  CHECK(none.status().message().find("GT_HTTP") != std::string::npos);

  env.vars["GT_HTTP"] = "http://10.0.0.5:7000/";
  CHECK(parse_args(with({}), env.get())->options.url.host == "10.0.0.5");
  CHECK(parse_args(with({"--url", "http://h:1"}), env.get())->options.url.host == "h");  // wins
  env.vars.erase("GT_HTTP");

  // dispatcher.yaml: http_port and http_address, a wildcard address read as loopback.
  const std::string cfg = dir.write("d.yaml", "port: 29500\nhttp_port: 9100\nhttp_address: \"0.0.0.0\"\n");
  auto c = parse_args({"--config", cfg}, env.get());
  REQUIRE(c.is_ok());
  CHECK(c->options.url.text == "http://127.0.0.1:9100");
  // http_port: 0 with a port file: the bound port.
  const std::string pf = dir.write("http.port", "41234\n");
  const std::string eph = dir.write("e.yaml", "http_port: 0\nhttp_port_file: " + pf + "\n");
  CHECK(url_from_config(eph).value() == "http://127.0.0.1:41234");
  CHECK(url_from_config(dir.write("v6.yaml", "http_port: 5\nhttp_address: \"::\"\n")).value() ==
        "http://[::1]:5");
  const std::string off = dir.write("off.yaml", "http_port: -1\n");
  auto o = parse_args({"--config", off}, env.get());
  REQUIRE(!o.is_ok());
  CHECK(o.status().message().find("http_port: -1") != std::string::npos);
  CHECK(!url_from_config(dir.write("noport.yaml", "http_port: 0\n")).is_ok());

  // Token: --token, else --token-file, else GT_TOKEN.
  const std::string tf = dir.write("token", "  gt_from_file  \nsecond line\n");
  env.vars["GT_TOKEN"] = "gt_from_env";
  CHECK(parse_args(with({"--url", "h:1"}), env.get())->options.token == "gt_from_env");
  CHECK(parse_args(with({"--url", "h:1", "--token-file", tf}), env.get())->options.token == "gt_from_file");
  CHECK(parse_args(with({"--url", "h:1", "--token", "gt_flag"}), env.get())->options.token == "gt_flag");
  CHECK(!parse_args(with({"--url", "h:1", "--token", "a", "--token-file", tf}), env.get()).is_ok());
  auto missing = parse_args(with({"--url", "h:1", "--token-file", dir.path + "/nope"}), env.get());
  REQUIRE(!missing.is_ok());
  CHECK(missing.status().message().find("cannot read") != std::string::npos);
  CHECK(!parse_args(with({"--url", "h:1", "--token-file", dir.write("empty", "\n")}), env.get()).is_ok());
}

TEST_CASE("gt-top URLs", "[gt-top]") {
  auto u = parse_url("http://[::1]:99/gt/");
  REQUIRE(u.is_ok());
  CHECK(u->host == "::1");
  CHECK(u->port == "99");
  CHECK(u->prefix == "/gt");
  auto plain = parse_url("localhost:8080");
  REQUIRE(plain.is_ok());
  CHECK(plain->host == "localhost");
  CHECK(plain->prefix.empty());
  CHECK(parse_url("http://example")->port == "80");
  CHECK(!parse_url("http://h:0").is_ok());
  CHECK(!parse_url("http://h:99999").is_ok());
  CHECK(!parse_url("http://h:1x").is_ok());
  CHECK(!parse_url("ftp://h:1").is_ok());
  CHECK(!parse_url("http://user:pw@h:1").is_ok());
  CHECK(!parse_url("http://:80").is_ok());
  CHECK(!parse_url("http://[::1:80").is_ok());
}

TEST_CASE("gt-top keys: characters, arrows, paging", "[gt-top]") {
  auto kinds = [](std::string_view b) {
    std::vector<std::pair<KeyKind, char>> out;
    for (const Key& k : decode_keys(b)) out.push_back({k.kind, k.c});
    return out;
  };
  using P = std::vector<std::pair<KeyKind, char>>;
  CHECK(kinds("qs") == P{{KeyKind::kChar, 'q'}, {KeyKind::kChar, 's'}});
  CHECK(kinds("\x1b[A\x1b[B") == P{{KeyKind::kUp, 0}, {KeyKind::kDown, 0}});
  CHECK(kinds("\x1bOA") == P{{KeyKind::kUp, 0}});  // application cursor mode
  CHECK(kinds("\x1b[5~\x1b[6~\x1b[H\x1b[4~") ==
        P{{KeyKind::kPageUp, 0}, {KeyKind::kPageDown, 0}, {KeyKind::kHome, 0}, {KeyKind::kEnd, 0}});
  CHECK(kinds("\x1b[C\x1b[15~j") == P{{KeyKind::kChar, 'j'}});  // unused keys skipped
  CHECK(kinds("\x1b").empty());                                 // a lone ESC
  CHECK(kinds("\x1bq") == P{{KeyKind::kChar, 'q'}});            // Alt-q: the q
}
