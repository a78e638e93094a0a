// Signal configs (ARCHITECTURE §5): what a named scope means for placement, in the original GT's
// YAML schema:
//
//   name:
//     shard: {axis: int, workers: [ints], replicated: bool}   # workers omitted: all workers
//     backward: other_name                                    # signal for its gradient ops
//     compile: bool             # true: hot path at first sight; false: no hot-path detection
//
// Shared by the client (gt::load_config / register_config) and the dispatcher (server-wide
// defaults from its own YAML), so both validate the same way and errors name file and key.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "libgtcore/status.h"

namespace gt {

struct ShardSpec {
  int axis = 0;
  std::vector<uint32_t> workers;  // empty: every worker
  bool replicated = false;        // a full copy on each worker instead of slices
};

struct SignalSpec {
  std::optional<ShardSpec> shard;  // absent: the scope only groups ops (e.g. a pipeline stage)
  std::string backward;            // empty: gradient ops run under the same signal
  // Hot paths in the scope: absent, detected as usual; true, at first sight (gt.compile);
  // false, never (detection off for what runs in it).
  std::optional<bool> compile;
};

using SignalConfigMap = std::map<std::string, SignalSpec>;

// Parses YAML text; `source` (a file name) prefixes every error, with the offending key.
Result<SignalConfigMap> parse_signal_configs(const std::string& yaml_text, const std::string& source);
Result<SignalConfigMap> load_signal_configs(const std::string& path);
// Checks references that need the running system: worker ids exist, axes fit later shapes are
// checked per op. `known_workers` empty: skip the worker check.
Status check_signal_workers(const SignalConfigMap& configs, const std::vector<uint32_t>& known_workers,
                            const std::string& source);

}  // namespace gt
