#include "libgtcore/signal_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

namespace gt {

namespace {

Status parse_shard(const YAML::Node& n, const std::string& where, ShardSpec* out) {
  if (!n.IsMap()) return invalid_argument("{}: shard must be a mapping {{axis, workers, replicated}}", where);
  for (const auto& kv : n) {
    std::string key = kv.first.as<std::string>();
    try {
      if (key == "axis") {
        int64_t axis = kv.second.as<int64_t>();
        if (axis < -8 || axis > 7) return invalid_argument("{}.axis: {} is not a valid axis", where, axis);
        out->axis = static_cast<int>(axis);
      } else if (key == "workers") {
        if (kv.second.IsNull()) continue;
        if (!kv.second.IsSequence()) return invalid_argument("{}.workers: expected a list of worker ids", where);
        std::set<uint32_t> seen;
        for (const auto& w : kv.second) {
          int64_t id = w.as<int64_t>();
          if (id < 0 || id > 65535) return invalid_argument("{}.workers: bad worker id {}", where, id);
          if (!seen.insert(static_cast<uint32_t>(id)).second)
            return invalid_argument("{}.workers: worker {} listed twice", where, id);
          out->workers.push_back(static_cast<uint32_t>(id));
        }
        if (out->workers.empty()) return invalid_argument("{}.workers: empty list (omit it for all workers)", where);
      } else if (key == "replicated") {
        out->replicated = kv.second.as<bool>();
      } else {
        return invalid_argument("{}: unknown key '{}' (expected axis, workers, replicated)", where, key);
      }
    } catch (const YAML::Exception&) {
      return invalid_argument("{}.{}: invalid value", where, key);
    }
  }
  return Status::ok();
}

}  // namespace

Result<SignalConfigMap> parse_signal_configs(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return invalid_argument("{}: invalid YAML: {}", source, e.what());
  }
  SignalConfigMap out;
  if (root.IsNull()) return out;
  if (!root.IsMap()) return invalid_argument("{}: expected a mapping of signal names", source);
  for (const auto& kv : root) {
    std::string name = kv.first.as<std::string>();
    std::string where = source + ": " + name;
    if (name.empty()) return invalid_argument("{}: empty signal name", source);
    SignalSpec c;
    if (!kv.second.IsNull()) {
      if (!kv.second.IsMap()) return invalid_argument("{}: expected a mapping", where);
      for (const auto& f : kv.second) {
        std::string key = f.first.as<std::string>();
        try {
          if (key == "shard") {
            ShardSpec s;
            GT_RETURN_IF_ERROR(parse_shard(f.second, where + ".shard", &s));
            c.shard = s;
          } else if (key == "backward") {
            c.backward = f.second.IsNull() ? "" : f.second.as<std::string>();
          } else if (key == "compile") {
            c.compile = f.second.as<bool>();
          } else {
            return invalid_argument("{}: unknown key '{}' (expected shard, backward, compile)", where, key);
          }
        } catch (const YAML::Exception&) {
          return invalid_argument("{}.{}: invalid value", where, key);
        }
      }
    }
    out[name] = c;
  }
  // A backward signal may be defined elsewhere (server-wide, or registered later), so it is not
  // required to appear in the same file.
  return out;
}

Result<SignalConfigMap> load_signal_configs(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return not_found("cannot read signal config {}", path);
  } catch (const YAML::Exception& e) {
    return invalid_argument("{}: invalid YAML: {}", path, e.what());
  }
  return parse_signal_configs(YAML::Dump(root), path);
}

Status check_signal_workers(const SignalConfigMap& configs, const std::vector<uint32_t>& known,
                            const std::string& source) {
  if (known.empty()) return Status::ok();
  for (const auto& [name, c] : configs) {
    if (!c.shard) continue;
    for (uint32_t w : c.shard->workers)
      if (std::find(known.begin(), known.end(), w) == known.end())
        return invalid_argument("{}: {}.shard.workers: no worker {} (workers: {})", source, name, w,
                                fmt::join(known, ", "));
  }
  return Status::ok();
}

}  // namespace gt
