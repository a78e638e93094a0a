// Signals (ARCHITECTURE §5): named scopes that say how the ops inside them are placed, given meaning
// by YAML configs (server-wide, or registered by this program) in the original GT's schema:
//
//   gt::load_config("sharding.yaml");               // or register_config(...)
//   { gt::signal::Scope s("data_parallel");          // ops in here run sharded
//     auto x = gt::randn({64, 784});                 // created already sharded
//     ... }
//
// The same program runs unchanged with no config (scopes then mean nothing). Scopes are per
// process (the session's one instruction stream): enter and exit them from one thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gt {

struct ShardConfig {
  int axis = 0;
  std::vector<uint32_t> workers;  // empty: all workers
  bool replicated = false;
};

struct SignalConfig {
  std::optional<ShardConfig> shard;
  std::string backward_signal;  // gradient ops of ops recorded in this scope run under it
  // Hot paths (docs/ARCHITECTURE.md §7): unset, detected as usual; true, the scope's stretch is
  // a hot path at first sight (gt::compile sets it); false, no hot-path detection inside.
  std::optional<bool> compile;
};

// Registers (or replaces) this session's config for a signal.
void register_config(const std::string& name, const SignalConfig& config);
// Loads a YAML file of configs and registers each; errors name the file and key.
void load_config(const std::string& path);
// Parses YAML configs (the dispatcher's own schema parser) without registering them; errors
// (gt::Error, INVALID_ARGUMENT) name `source` and the offending key.
std::map<std::string, SignalConfig> parse_config(const std::string& yaml_text,
                                                 const std::string& source);
// The configs this program registered.
std::map<std::string, SignalConfig> get_config();

namespace signal {

// RAII scope: enter on construction, exit on destruction.
class Scope {
 public:
  explicit Scope(std::string name, std::string backward = "");
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  std::string name_;
};

void enter(const std::string& name, const std::string& backward = "");
void exit();                    // leaves the innermost scope
std::string current();          // the innermost scope's name ("" outside any)
std::vector<std::string> stack();

}  // namespace signal
}  // namespace gt
