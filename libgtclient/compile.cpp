// gt::compile's non-template half (gt/compile.h): a fresh signal name per compiled function and
// its `compile: true` config.
#include "gt/compile.h"

#include <atomic>

namespace gt::detail {

std::string next_compiled_signal() {
  static std::atomic<uint64_t> next{1};
  return "gt.compile#" + std::to_string(next.fetch_add(1));
}

void register_compiled_signal(const std::string& name) {
  SignalConfig c;
  c.compile = true;
  register_config(name, c);
}

}  // namespace gt::detail
