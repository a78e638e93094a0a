// A session's signal scopes (ARCHITECTURE §5): the stack of entered names and the configs that give
// them meaning — the session's own (registered by the client) over the server-wide defaults.
// The innermost scope with a config decides where an op runs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "libgtcore/signal_config.h"
#include "proto/gt.pb.h"

namespace gt::dispatcher {

class SignalState {
 public:
  explicit SignalState(const SignalConfigMap* server_configs) : server_(server_configs) {}

  Status apply(const v1::SignalEvent& ev);                 // enter / exit
  Status register_config(const v1::SignalConfigEntry& e);  // this session's own config
  // The config of the innermost scope that has one (after backward-signal resolution), and
  // that scope's effective name; nullopt outside any configured scope.
  std::optional<std::pair<std::string, SignalSpec>> current() const;
  size_t depth() const { return stack_.size(); }
  // Hot paths (dispatcherd/hot_paths.h): the innermost entered scope's effective name ("" at
  // top level), and whether the innermost scope with a config asks for `compile: true`.
  // (Both are asked for every instruction: kept until the scopes or configs change.)
  const std::string& innermost() const;
  bool compile_requested() const;
  // The innermost scope whose config sets `compile`: true (compile_requested), false (hot-path
  // detection off inside it), nullopt (no scope says).
  std::optional<bool> compile_mode() const;
  // What a scope boundary can change about how later instructions are planned or compiled: the
  // sharding scope in effect and compile_requested(). A boundary that leaves it alone does not
  // cut a hot-path stretch (the scope name is recorded in the signature instead).
  std::string plan_key() const;
  // plan_key() as it would be after `ev` (nullopt: `ev` would be refused); changes nothing.
  std::optional<std::string> plan_key_after(const v1::SignalEvent& ev);

 private:
  struct Frame {
    std::string name;
    std::string backward;  // explicit backward signal given at enter
    bool backward_pass = false;
  };
  const SignalSpec* find(const std::string& name) const;
  std::string effective_name(const Frame& f) const;

  std::optional<bool> find_compile_mode() const;

  const SignalConfigMap* server_;
  SignalConfigMap own_;
  std::vector<Frame> stack_;
  // innermost() and compile_mode() of the current scopes and configs (valid_: still so).
  struct Cached {
    bool valid = false;
    std::string innermost;
    std::optional<bool> compile;
  };
  mutable Cached cached_;
};

inline constexpr size_t kMaxSignalDepth = 64;

}  // namespace gt::dispatcher
