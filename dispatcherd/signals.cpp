#include "dispatcherd/signals.h"

namespace gt::dispatcher {

const SignalSpec* SignalState::find(const std::string& name) const {
  if (auto it = own_.find(name); it != own_.end()) return &it->second;
  if (server_)
    if (auto it = server_->find(name); it != server_->end()) return &it->second;
  return nullptr;
}

std::string SignalState::effective_name(const Frame& f) const {
  if (!f.backward_pass) return f.name;
  // Gradient ops of a node recorded under `name` run under its backward signal.
  if (!f.backward.empty()) return f.backward;
  if (const SignalSpec* c = find(f.name); c && !c->backward.empty()) return c->backward;
  return f.name;
}

Status SignalState::apply(const v1::SignalEvent& ev) {
  cached_.valid = false;
  switch (ev.kind()) {
    case v1::SignalEvent::ENTER:
      if (ev.name().empty() || ev.name().size() > 256) return invalid_argument("signal: bad name");
      if (stack_.size() >= kMaxSignalDepth)
        return invalid_argument("signal: scopes nested deeper than {}", kMaxSignalDepth);
      stack_.push_back(Frame{ev.name(), ev.backward(), ev.backward_pass()});
      return Status::ok();
    case v1::SignalEvent::EXIT:
      if (stack_.empty()) return invalid_argument("signal: exit without a matching enter");
      if (!ev.name().empty() && ev.name() != stack_.back().name)
        return invalid_argument("signal: exit of '{}' while '{}' is innermost", ev.name(),
                                stack_.back().name);
      stack_.pop_back();
      return Status::ok();
    default: return invalid_argument("signal: unknown event");
  }
}

Status SignalState::register_config(const v1::SignalConfigEntry& e) {
  if (e.name().empty() || e.name().size() > 256) return invalid_argument("config: bad signal name");
  SignalSpec c;
  if (e.has_shard()) {
    ShardSpec s;
    if (e.axis() < -8 || e.axis() > 7) return invalid_argument("config {}: bad axis {}", e.name(), e.axis());
    s.axis = e.axis();
    if (e.workers_size() > 64) return invalid_argument("config {}: too many workers", e.name());
    for (uint32_t w : e.workers()) s.workers.push_back(w);
    s.replicated = e.replicated();
    c.shard = s;
  }
  c.backward = e.backward();
  if (e.has_compile()) c.compile = e.compile();
  if (own_.size() >= 4096 && !own_.count(e.name())) return invalid_argument("config: too many signals");
  own_[e.name()] = c;
  cached_.valid = false;
  return Status::ok();
}

std::optional<std::pair<std::string, SignalSpec>> SignalState::current() const {
  for (auto it = stack_.rbegin(); it != stack_.rend(); ++it) {
    std::string name = effective_name(*it);
    if (const SignalSpec* c = find(name); c && c->shard) return std::make_pair(name, *c);
  }
  return std::nullopt;
}

const std::string& SignalState::innermost() const {
  if (!cached_.valid) {
    cached_.innermost = stack_.empty() ? std::string() : effective_name(stack_.back());
    cached_.compile = find_compile_mode();
    cached_.valid = true;
  }
  return cached_.innermost;
}

std::string SignalState::plan_key() const {
  auto c = current();
  const std::optional<bool> mode = compile_mode();
  return (!mode ? "e:" : *mode ? "c:" : "x:") + (c ? c->first : std::string());
}

std::optional<std::string> SignalState::plan_key_after(const v1::SignalEvent& ev) {
  // (apply() changes the stack's top only: that is undone, nothing copied)
  std::optional<Frame> popped;
  if (ev.kind() == v1::SignalEvent::EXIT && !stack_.empty()) popped = stack_.back();
  if (!apply(ev).is_ok()) return std::nullopt;
  std::string key = plan_key();
  if (popped) stack_.push_back(std::move(*popped));
  else stack_.pop_back();
  cached_.valid = false;
  return key;
}

std::optional<bool> SignalState::compile_mode() const {
  innermost();  // (fills the cache)
  return cached_.compile;
}

std::optional<bool> SignalState::find_compile_mode() const {
  // The innermost scope whose config says either way decides.
  for (auto it = stack_.rbegin(); it != stack_.rend(); ++it)
    if (const SignalSpec* c = find(effective_name(*it)); c && c->compile) return c->compile;
  return std::nullopt;
}

bool SignalState::compile_requested() const { return compile_mode().value_or(false); }

}  // namespace gt::dispatcher
