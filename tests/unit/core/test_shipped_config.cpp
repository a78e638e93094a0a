// The shipped etc/gt/dispatcher.yaml and worker.yaml against the daemons' option tables
// (dispatcherd/dispatcher_options.def, workerd/worker_options.def): every option appears as a
// key at its built-in default, except the deployment values listed below; every key is an
// option; and each file is exactly what `--print-config` renders, so its documentation is the
// table's. Adding an option without regenerating the file fails here.
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "dispatcherd/dispatcher_options.h"
#include "libgtcore/config_table.h"
#include "workerd/worker_options.h"
#include "require_ok.h"

using namespace gt;

namespace {

// The only values the shipped files may set away from the built-in defaults: where the systemd
// units put things (deploy/systemd). Listed here and nowhere else.
const std::map<std::string, std::string> kDispatcherDeployment = {
    {"unix_socket", "/run/gt/gt.sock"},  // the unit's RuntimeDirectory=gt
    {"users_file", "/etc/gt/users.yaml"},  // client tokens: TCP is never open to anyone
};
const std::map<std::string, std::string> kWorkerDeployment = {
    {"dispatcher", "unix:/run/gt/gt.sock"},  // the dispatcher's socket above
    {"kernel_cache_dir", "/var/cache/gt/kernels"},  // the unit's CacheDirectory
};

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// `gt-dispatcherd --unix-socket /run/gt/gt.sock --print-config > etc/gt/dispatcher.yaml`
std::string regenerate_command(const std::string& program, const std::string& file,
                               const std::map<std::string, std::string>& deployment) {
  std::string cmd = "build/bin/" + program;
  for (const auto& [key, value] : deployment) {
    std::string flag = key;
    for (char& c : flag)
      if (c == '_') c = '-';
    cmd += " --" + flag + " '" + value + "'";
  }
  return cmd + " --print-config > etc/gt/" + file;
}

// The options as the shipped file should set them: the defaults, with the deployment values.
template <class S>
S expected_options(const OptionTable<S>& table,
                   const std::map<std::string, std::string>& deployment) {
  Config cfg;
  table.declare(cfg);
  for (const auto& [key, value] : deployment) {
    INFO("deployment value " << key << ": " << value);
    GT_REQUIRE_OK(cfg.set(key, value, "kDeployment"));  // an option, and a valid value
  }
  S out;
  table.fill(cfg, &out);
  return out;
}

template <class S>
void check_shipped(const OptionTable<S>& table, const std::string& file,
                   const std::map<std::string, std::string>& deployment) {
  const std::string path = std::string(GT_SOURCE_DIR) + "/etc/gt/" + file;
  INFO(path);
  // Every key once, and every key an option.
  std::map<std::string, int> keys;
  const YAML::Node root = YAML::LoadFile(path);
  REQUIRE(root.IsMap());
  for (const auto& kv : root) ++keys[kv.first.as<std::string>()];
  std::set<std::string> names;
  for (const auto& r : table.rows()) names.insert(r.name);
  for (const auto& [key, n] : keys) {
    INFO("key " << key);
    CHECK(names.count(key) == 1);
    CHECK(n == 1);
  }
  // Every option a key, at its default or its listed deployment value.
  Config cfg;
  table.declare(cfg);
  GT_REQUIRE_OK(cfg.load_yaml_file(path));
  S shipped;
  table.fill(cfg, &shipped);
  const S want = expected_options(table, deployment);
  for (const auto& r : table.rows()) {
    INFO("option " << r.name << " (" << (deployment.count(r.name) ? "deployment value" : "default")
                   << " " << option_yaml_value(OptionTable<S>::value_in(r, want)) << ")");
    CHECK(keys.count(r.name) == 1);
    CHECK(OptionTable<S>::value_in(r, shipped) == OptionTable<S>::value_in(r, want));
  }
  // A deployment value that equals the default is a stale entry above.
  for (const auto& r : table.rows())
    if (deployment.count(r.name)) {
      INFO("deployment value of " << r.name << " is its default");
      CHECK(OptionTable<S>::value_in(r, want) != OptionTable<S>::default_of(r));
    }
}

template <class S>
void check_rendering(const OptionTable<S>& table, const std::string& program,
                     const std::string& file,
                     const std::map<std::string, std::string>& deployment) {
  const std::string path = std::string(GT_SOURCE_DIR) + "/etc/gt/" + file;
  const std::string rendered = table.yaml(expected_options(table, deployment));
  const bool same = read_text(path) == rendered;
  INFO(path << " is not what the option table renders; regenerate it (from the source root, "
            "after building):\n  " << regenerate_command(program, file, deployment));
  CHECK(same);
}

// The rows themselves: unique keys, and each integer row's bounds survive the trip through
// gt::Config into the member (the same check config_table's tests make on a small table).
template <class S>
void check_rows(const OptionTable<S>& table) {
  std::set<std::string> seen;
  for (const auto& r : table.rows()) {
    INFO(r.name);
    CHECK(seen.insert(r.name).second);
    CHECK(std::string(r.help).size() > 0);
    CHECK(std::string(r.section).size() > 0);
    if (!std::holds_alternative<int64_t>(OptionTable<S>::default_of(r))) continue;
    for (double bound : {r.min, r.max}) {
      Config cfg;
      table.declare(cfg);
      GT_REQUIRE_OK(cfg.set(r.name, std::to_string(static_cast<int64_t>(bound)), "t"));
      S s;
      table.fill(cfg, &s);
      CHECK(OptionTable<S>::value_in(r, s) == Config::Value(static_cast<int64_t>(bound)));
    }
    Config cfg;
    table.declare(cfg);
    CHECK_FALSE(cfg.set(r.name, std::to_string(static_cast<int64_t>(r.max) + 1), "t").is_ok());
    CHECK_FALSE(cfg.set(r.name, std::to_string(static_cast<int64_t>(r.min) - 1), "t").is_ok());
  }
}

}  // namespace

TEST_CASE("etc/gt/dispatcher.yaml sets every gt-dispatcherd option, at its default", "[config]") {
  check_shipped(dispatcher::dispatcher_option_table(), "dispatcher.yaml", kDispatcherDeployment);
}

TEST_CASE("etc/gt/worker.yaml sets every gt-workerd option, at its default", "[config]") {
  check_shipped(worker::worker_option_table(), "worker.yaml", kWorkerDeployment);
}

TEST_CASE("etc/gt/dispatcher.yaml is gt-dispatcherd --print-config", "[config]") {
  check_rendering(dispatcher::dispatcher_option_table(), "gt-dispatcherd", "dispatcher.yaml",
                  kDispatcherDeployment);
}

TEST_CASE("etc/gt/worker.yaml is gt-workerd --print-config", "[config]") {
  check_rendering(worker::worker_option_table(), "gt-workerd", "worker.yaml", kWorkerDeployment);
}

TEST_CASE("the daemons' option rows are sound", "[config]") {
  check_rows(dispatcher::dispatcher_option_table());
  check_rows(worker::worker_option_table());
  // The struct members are the rows' defaults (spot checks against the .def literals).
  const dispatcher::DispatcherOptions d;
  CHECK(d.heartbeat_timeout_ms == 5000);
  CHECK(d.max_frame_bytes == (uint64_t{64} << 20));
  CHECK(d.listen_address == "127.0.0.1");
  const worker::WorkerOptions w;
  CHECK(w.allow_tf32 == false);
  CHECK(w.max_memory_bytes == "auto");
  CHECK(w.turn_us == 2000);
}
