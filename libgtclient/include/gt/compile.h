// gt::compile(fn): marks a function as a hot path from its first call, as torch.compile marks
// one (ARCHITECTURE §7). Each call of the result runs fn inside a signal scope of its own whose
// config says `compile: true`, so the dispatcher makes the instructions fn sends a hot path at
// first sight instead of after `hot_path_min_repeats` repetitions. Results are exactly fn's.
//
//   auto step = gt::compile([&](const gt::Tensor& x) { return model(x).relu().sum(); });
//   float loss = step(x).item<float>();
//   auto eager = gt::compile(fn, /*enabled=*/false);   // plain fn
//
// The scope (and its config, registered at the first call) is per compiled function; calls must
// come from the thread that runs the program's other ops (scopes are per process).
#pragma once

#include <string>
#include <type_traits>
#include <utility>

#include "gt/signal.h"

namespace gt {
namespace detail {
std::string next_compiled_signal();                        // "gt.compile#<n>"
void register_compiled_signal(const std::string& name);    // config {compile: true}
}  // namespace detail

template <class F>
class Compiled {
 public:
  Compiled(F fn, bool enabled)
      : fn_(std::move(fn)), enabled_(enabled),
        name_(enabled ? detail::next_compiled_signal() : std::string()) {}

  template <class... A>
  decltype(auto) operator()(A&&... args) {
    if (!enabled_) return fn_(std::forward<A>(args)...);
    if (!registered_) {
      detail::register_compiled_signal(name_);
      registered_ = true;
    }
    signal::Scope scope(name_);
    return fn_(std::forward<A>(args)...);
  }
  bool enabled() const { return enabled_; }
  const std::string& signal_name() const { return name_; }  // "" when disabled

 private:
  F fn_;
  bool enabled_;
  std::string name_;
  bool registered_ = false;
};

template <class F>
Compiled<std::decay_t<F>> compile(F&& fn, bool enabled = true) {
  return Compiled<std::decay_t<F>>(std::forward<F>(fn), enabled);
}

}  // namespace gt
