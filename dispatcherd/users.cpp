#include "dispatcherd/users.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <yaml-cpp/yaml.h>

#include <set>

namespace gt::dispatcher {

namespace {

std::string to_hex(const unsigned char* p, size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = kHex[p[i] >> 4];
    s[2 * i + 1] = kHex[p[i] & 15];
  }
  return s;
}

Status apply_policy_keys(const YAML::Node& node, const std::string& where, UserPolicy* p,
                         bool allow_token) {
  static const std::set<std::string> kKeys = {"token_sha256", "max_bytes", "max_sessions",
                                              "window", "weight", "admin"};
  if (!node.IsMap()) return invalid_argument("{}: expected a mapping", where);
  for (const auto& kv : node) {
    std::string key = kv.first.as<std::string>();
    if (!kKeys.count(key) || (key == "token_sha256" && !allow_token))
      return invalid_argument("{}: unknown key '{}'", where, key);
    try {
      if (key == "token_sha256") {
        p->token_sha256 = kv.second.as<std::string>();
        if (p->token_sha256.size() != 64)
          return invalid_argument("{}.token_sha256: expected 64 hex digits", where);
      } else if (key == "max_bytes") {
        p->max_bytes = kv.second.as<uint64_t>();
      } else if (key == "max_sessions") {
        p->max_sessions = kv.second.as<uint32_t>();
      } else if (key == "window") {
        p->window = kv.second.as<uint64_t>();
      } else if (key == "weight") {
        p->weight = kv.second.as<double>();
        if (!(p->weight > 0 && p->weight <= 1000))
          return invalid_argument("{}.weight: must be in (0, 1000]", where);
      } else if (key == "admin") {
        p->admin = kv.second.as<bool>();
      }
    } catch (const YAML::Exception&) {
      return invalid_argument("{}.{}: invalid value", where, key);
    }
  }
  return Status::ok();
}

}  // namespace

std::string sha256_hex(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr);
  return to_hex(md, n);
}

bool constant_time_equal(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Result<std::string> new_token() {
  unsigned char buf[32];
  if (RAND_bytes(buf, sizeof(buf)) != 1) return internal_error("no randomness for a token");
  return "gt_" + to_hex(buf, sizeof(buf));
}

Result<UserTable> UserTable::load(const std::string& path) {
  UserTable t;
  if (path.empty()) return t;
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return not_found("cannot read users file {}", path);
  } catch (const YAML::Exception& e) {
    return invalid_argument("{}: invalid YAML: {}", path, e.what());
  }
  t.configured_ = true;
  if (root.IsNull()) return t;
  if (!root.IsMap()) return invalid_argument("{}: expected `defaults:` and `users:`", path);
  for (const auto& kv : root) {
    std::string key = kv.first.as<std::string>();
    if (key == "defaults") {
      GT_RETURN_IF_ERROR(apply_policy_keys(kv.second, path + ": defaults", &t.defaults_, false));
    } else if (key != "users") {
      return invalid_argument("{}: unknown key '{}' (expected defaults, users)", path, key);
    }
  }
  if (YAML::Node users = root["users"]; users && !users.IsNull()) {
    if (!users.IsMap()) return invalid_argument("{}: users must be a mapping", path);
    for (const auto& kv : users) {
      UserPolicy p = t.defaults_;
      p.name = kv.first.as<std::string>();
      p.token_sha256.clear();
      GT_RETURN_IF_ERROR(
          apply_policy_keys(kv.second, path + ": users." + p.name, &p, true));
      t.users_[p.name] = p;
    }
  }
  return t;
}

const UserPolicy* UserTable::find_by_token(const std::string& token) const {
  if (token.empty()) return nullptr;
  std::string h = sha256_hex(token);
  const UserPolicy* found = nullptr;
  for (const auto& [name, p] : users_)  // no early exit: timing does not tell which user
    if (!p.token_sha256.empty() && constant_time_equal(p.token_sha256, h)) found = &p;
  return found;
}

UserPolicy UserTable::policy_for(const std::string& name) const {
  auto it = users_.find(name);
  if (it != users_.end()) return it->second;
  UserPolicy p = defaults_;
  p.name = name;
  return p;
}

}  // namespace gt::dispatcher
