// Client side of signals: the scope stack, config registration, and the autograd hooks that
// run each node's gradient ops under its forward scope's backward signal.
#include "gt/signal.h"

#include <atomic>
#include <mutex>

#include "gt/autograd.h"
#include "gt/error.h"
#include "libgtclient/run_op.h"
#include "libgtclient/session.h"
#include "libgtcore/signal_config.h"

namespace gt {

namespace {

struct Frame {
  std::string name;
  std::string backward;
};

std::mutex g_mu;
std::vector<Frame> g_stack;
std::atomic<int> g_depth{0};  // user scopes + backward-pass scopes now entered (run_op reads it)
std::map<std::string, SignalConfig> g_configs;

// Autograd records the scope each forward op ran under ("name\x1fbackward"); its gradient ops
// are emitted inside a backward-pass scope of that name, which the dispatcher maps to the
// backward signal.
std::string scope_provider() {
  std::lock_guard<std::mutex> lk(g_mu);
  if (g_stack.empty()) return "";
  return g_stack.back().name + '\x1f' + g_stack.back().backward;
}

// The dispatcher runs a backward-pass scope under its backward signal: the frame's, else the
// config's, else the scope's own name (dispatcherd/signals.cpp, effective_name). When that is the
// innermost scope open now -- a compiled function's backward pass inside the function, say --
// entering it changes nothing there (scope, sharding, compile mode), and it is not sent: an enter
// and an exit per graph node saved. (This client's own config of the name decides: the
// dispatcher reads a session's configs before the server's.)
bool maps_to_innermost(const std::string& name, const std::string& backward) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (!backward.empty() || g_stack.empty() || g_stack.back().name != name) return false;
  auto it = g_configs.find(name);
  return it != g_configs.end() && it->second.backward_signal.empty();
}

autograd::ScopeToken backward_hook(const std::string& forward_scope) {
  if (forward_scope.empty()) return nullptr;
  auto sep = forward_scope.find('\x1f');
  std::string name = forward_scope.substr(0, sep);
  std::string backward = sep == std::string::npos ? "" : forward_scope.substr(sep + 1);
  if (maps_to_innermost(name, backward)) {
    ++g_depth;
    return std::shared_ptr<void>(nullptr, [](void*) { --g_depth; });
  }
  detail::Session::get().signal_enter(name, backward, /*backward_pass=*/true);
  ++g_depth;
  return std::shared_ptr<void>(nullptr, [name](void*) {
    --g_depth;
    try {
      detail::Session::get().signal_exit(name);
    } catch (...) {
    }
  });
}

const bool g_hooks_installed = [] {
  autograd::set_scope_provider(scope_provider);
  autograd::set_backward_scope_hook(backward_hook);
  return true;
}();

}  // namespace

namespace detail {
bool in_signal_scope() { return g_depth.load(std::memory_order_relaxed) > 0; }
}  // namespace detail

void register_config(const std::string& name, const SignalConfig& c) {
  if (name.empty()) throw Error("gt::register_config: empty signal name");
  detail::Session::ConfigEntry e;
  e.name = name;
  if (c.shard) {
    if (c.shard->axis < -8 || c.shard->axis > 7)
      throw Error("gt::register_config(" + name + "): bad axis " + std::to_string(c.shard->axis));
    e.has_shard = true;
    e.axis = c.shard->axis;
    e.workers = c.shard->workers;
    e.replicated = c.shard->replicated;
  }
  e.backward = c.backward_signal;
  e.compile = c.compile;
  detail::Session::get().register_config(e);
  std::lock_guard<std::mutex> lk(g_mu);
  g_configs[name] = c;
}

namespace {

// libgtcore's parsed configs as the public SignalConfig.
std::map<std::string, SignalConfig> to_public(const std::map<std::string, SignalSpec>& specs) {
  std::map<std::string, SignalConfig> out;
  for (const auto& [name, c] : specs) {
    SignalConfig sc;
    if (c.shard) sc.shard = ShardConfig{c.shard->axis, c.shard->workers, c.shard->replicated};
    sc.backward_signal = c.backward;
    sc.compile = c.compile;
    out[name] = sc;
  }
  return out;
}

}  // namespace

void load_config(const std::string& path) {
  auto configs = load_signal_configs(path);
  if (!configs.is_ok())
    throw Error(configs.status().code(), "gt::load_config: " + configs.status().message());
  for (const auto& [name, c] : to_public(*configs)) register_config(name, c);
}

std::map<std::string, SignalConfig> parse_config(const std::string& yaml_text,
                                                 const std::string& source) {
  auto configs = parse_signal_configs(yaml_text, source);
  if (!configs.is_ok()) throw Error(configs.status().code(), configs.status().message());
  return to_public(*configs);
}

std::map<std::string, SignalConfig> get_config() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_configs;
}

namespace signal {

void enter(const std::string& name, const std::string& backward) {
  if (name.empty()) throw Error("gt::signal::enter: empty signal name");
  detail::Session::get().signal_enter(name, backward, false);
  std::lock_guard<std::mutex> lk(g_mu);
  g_stack.push_back(Frame{name, backward});
  ++g_depth;
}

void exit() {
  std::string name;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    if (g_stack.empty()) throw Error(Code::kFailedPrecondition, "gt::signal::exit: no scope to exit");
    name = g_stack.back().name;
    g_stack.pop_back();
    --g_depth;
  }
  detail::Session::get().signal_exit(name);
}

std::string current() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_stack.empty() ? "" : g_stack.back().name;
}

std::vector<std::string> stack() {
  std::lock_guard<std::mutex> lk(g_mu);
  std::vector<std::string> out;
  for (const auto& f : g_stack) out.push_back(f.name);
  return out;
}

Scope::Scope(std::string name, std::string backward) : name_(std::move(name)) {
  enter(name_, backward);
}

Scope::~Scope() {
  try {
    exit();
  } catch (...) {
  }
}

}  // namespace signal
}  // namespace gt
