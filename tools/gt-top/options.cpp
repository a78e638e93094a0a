#include "tools/gt-top/options.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

namespace gt::top {
namespace {

constexpr const char* kDefaultConfig = "/etc/gt/dispatcher.yaml";

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  s.erase(s.find_last_not_of(ws) + 1);
  s.erase(0, s.find_first_not_of(ws));
  return s;
}

Result<double> seconds_arg(const std::string& name, const std::string& v, double min) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(d) || d < min)
    return invalid_argument("{}: '{}' is not a number of seconds >= {}", name, v, min);
  return d;
}

Result<long> count_arg(const std::string& name, const std::string& v, long max) {
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 0 || n > max)
    return invalid_argument("{}: '{}' is not a whole number 0..{}", name, v, max);
  return n;
}

Result<std::string> read_token_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return invalid_argument("--token-file: cannot read '{}'", path);
  std::string line;
  std::getline(f, line);
  line = trim(line);
  if (line.empty()) return invalid_argument("--token-file: '{}' holds no token", path);
  return line;
}

}  // namespace

Result<std::string> url_from_config(const std::string& path) {
  YAML::Node y;
  try {
    y = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return not_found("no {} to read http_port from", path);
  } catch (const YAML::Exception& e) {
    return invalid_argument("{}: {}", path, e.what());
  }
  int port = -1;
  std::string address = "127.0.0.1", port_file;
  try {
    if (y["http_port"]) port = y["http_port"].as<int>();
    if (y["http_address"]) address = y["http_address"].as<std::string>();
    if (y["http_port_file"]) port_file = y["http_port_file"].as<std::string>();
  } catch (const YAML::Exception& e) {
    return invalid_argument("{}: {}", path, e.what());
  }
  if (port < 0) return failed_precondition("{} has the HTTP endpoint off (http_port: {})", path, port);
  if (port == 0) {
    std::ifstream f(port_file);
    if (port_file.empty() || !(f >> port) || port <= 0)
      return failed_precondition("{} has http_port: 0 and no readable http_port_file{}", path,
                                 port_file.empty() ? "" : " (" + port_file + ")");
  }
  if (address == "0.0.0.0" || address.empty()) address = "127.0.0.1";
  if (address == "::") address = "::1";
  const bool v6 = address.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

Result<Args> parse_args(const std::vector<std::string>& args, const Getenv& env) {
  Args a;
  Options& o = a.options;
  std::optional<std::string> url, token, token_file;
  std::string config = kDefaultConfig;
  bool config_set = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    bool has_value = false;
    if (const size_t eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto take = [&]() -> Result<std::string> {
      if (has_value) return value;
      if (i + 1 >= args.size()) return invalid_argument("{} needs a value", name);
      return args[++i];
    };
#define GT_TAKE(var)                    \
  auto var##_r = take();                \
  if (!var##_r) return var##_r.status(); \
  const std::string var = *var##_r;
    if (name == "--help" || name == "-h") {
      a.help = true;
    } else if (name == "--version") {
      a.version = true;
    } else if (name == "--once") {
      if (o.mode == Mode::kJson) return invalid_argument("--once and --json: pick one");
      o.mode = Mode::kOnce;
    } else if (name == "--json") {
      if (o.mode == Mode::kOnce) return invalid_argument("--once and --json: pick one");
      o.mode = Mode::kJson;
    } else if (name == "--ascii") {
      o.ascii = true;
    } else if (name == "--url") {
      GT_TAKE(v);
      url = v;
    } else if (name == "--config") {
      GT_TAKE(v);
      config = v;
      config_set = true;
    } else if (name == "--token") {
      GT_TAKE(v);
      token = v;
    } else if (name == "--token-file") {
      GT_TAKE(v);
      token_file = v;
    } else if (name == "--interval") {
      GT_TAKE(v);
      auto d = seconds_arg(name, v, 0.1);
      if (!d) return d.status();
      o.interval_s = *d;
    } else if (name == "--timeout") {
      GT_TAKE(v);
      auto d = seconds_arg(name, v, 0.1);
      if (!d) return d.status();
      o.timeout_s = *d;
    } else if (name == "--sort") {
      GT_TAKE(v);
      const auto k = parse_sort_key(v);
      if (!k) return invalid_argument("--sort: '{}' is not one of {}", v, sort_key_names());
      o.sort = *k;
    } else if (name == "--width") {
      GT_TAKE(v);
      auto n = count_arg(name, v, 100000);
      if (!n) return n.status();
      o.width = static_cast<size_t>(*n);
      o.width_set = true;
    } else if (name == "--count") {
      GT_TAKE(v);
      auto n = count_arg(name, v, 1000000000);
      if (!n) return n.status();
      o.count = static_cast<int>(*n);
    } else {
      return invalid_argument("unknown option '{}'", args[i]);
    }
#undef GT_TAKE
  }
  if (a.help || a.version) return a;

  // Token: --token, then --token-file, then GT_TOKEN.
  if (token && token_file) return invalid_argument("--token and --token-file: pick one");
  if (token) {
    o.token = trim(*token);
  } else if (token_file) {
    auto t = read_token_file(*token_file);
    if (!t) return t.status();
    o.token = *t;
  } else if (const char* t = env("GT_TOKEN")) {
    o.token = trim(t);
  }

  // URL: --url, then GT_HTTP, then the dispatcher's configuration.
  std::string text;
  if (url) {
    text = *url;
  } else if (const char* e = env("GT_HTTP"); e && *e) {
    text = e;
  } else {
    auto from = url_from_config(config);
    if (!from)
      return invalid_argument(
          "where is the dispatcher? {}: pass --url http://HOST:PORT (its http_port), set GT_HTTP"
          "{}", from.status().message(), config_set ? "" : ", or --config FILE");
    text = *from;
  }
  auto u = parse_url(text);
  if (!u) return u.status();
  o.url = *u;
  return a;
}

std::string usage() {
  std::ostringstream out;
  out << R"(gt-top: a live view of a GT dispatcher's workers and sessions (its /api/status).

usage: gt-top [options]

  --url http://HOST:PORT  the dispatcher's HTTP endpoint (its http_port, not the client port).
                          Default: $GT_HTTP, else http_address / http_port of --config.
  --config FILE           dispatcher.yaml to find http_port in (default )" << kDefaultConfig << R"()
  --token TOKEN           bearer token, for a dispatcher with a users_file: an admin's sees
                          everything, a user's only that user's sessions. Default: $GT_TOKEN.
                          (--token shows in ps; prefer GT_TOKEN or --token-file.)
  --token-file FILE       read the token from the first line of FILE
  --interval S            seconds between refreshes (default 1, at least 0.1)
  --sort KEY              order of the tables: ops (default), mem, busy, queue, errors, id, user
  --once                  print one plain-text snapshot (no terminal codes) and exit
  --json                  print /api/status's JSON once (gt.v1.StatusReport) and exit
  --width N               columns for --once and batch output (default: the terminal's, else
                          unlimited); narrower drops the least important columns first
  --count N               exit after N refreshes (default: run until q)
  --timeout S             seconds to wait for each answer (default 5)
  --ascii                 ASCII only (no block-element sparklines, "us" for µs)
  --help, --version

Keys in the live view: q (or Ctrl-C) quits; s / S next / previous sort key; j / k or the
arrows scroll, space / b page, g / G top / bottom; r refreshes now.
When standard output is not a terminal, gt-top prints a plain snapshot every interval (as
top -b does); --count bounds them.

Sort keys (largest first; id and user ascending):
  ops     ops/s                 mem    memory used / bytes held
  busy    busy share / sync p99 queue  worker queue + in flight / session instructions queued
  errors  failed instructions   id     worker / session id       user  device / user name

Exit status: 0 done (q, Ctrl-C, --count, --once); 1 the dispatcher cannot be reached, timed
out, refused the token (401) or sent something else than a status; 2 bad options.
)";
  return out.str();
}

}  // namespace gt::top
