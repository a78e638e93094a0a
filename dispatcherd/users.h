// Who may use the dispatcher and how much (ARCHITECTURE §8): the users file maps each user to the
// SHA-256 of their token (never the token itself), quotas and a scheduling weight. Unix-socket
// users are identified by SO_PEERCRED and need no token; TCP clients present one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "dispatcherd/status_counters.h"
#include "libgtcore/status.h"

namespace gt::dispatcher {

struct UserPolicy {
  std::string name;
  std::string token_sha256;  // hex; empty: no TCP token (Unix-socket use only)
  uint64_t max_bytes = 0;     // bytes held across workers; 0 = unlimited
  uint32_t max_sessions = 0;  // concurrent sessions; 0 = unlimited
  uint64_t window = 0;        // outstanding instructions across the user's sessions; 0 = default
  double weight = 1.0;        // share of worker time under contention (deficit round robin)
  bool admin = false;         // sees every user's activity in stats
};

// What one user holds and has in flight across all their sessions, against their policy.
struct UserUsage {
  uint32_t sessions = 0;
  uint64_t bytes = 0;
  uint64_t outstanding = 0;
  // For the status page: counters over all the user's sessions, past ones included.
  uint64_t instructions = 0, errors = 0;
  RateWindow instruction_rate = RateWindow::from_zero();
  LatencyHistogram sync_latency;
};

class UserTable {
 public:
  // Loads a users file (YAML: `defaults:` and `users: {name: {...}}`); unknown keys are errors
  // naming the file and key.
  static Result<UserTable> load(const std::string& path);
  bool configured() const { return configured_; }
  size_t size() const { return users_.size(); }
  bool has_user(const std::string& name) const { return users_.count(name) != 0; }
  // The user whose token hashes to `token`'s SHA-256 (constant-time comparison).
  const UserPolicy* find_by_token(const std::string& token) const;
  // The policy for a named identity (Unix-socket users): their entry, else the defaults.
  UserPolicy policy_for(const std::string& name) const;
  const UserPolicy& defaults() const { return defaults_; }

 private:
  bool configured_ = false;
  UserPolicy defaults_;
  std::map<std::string, UserPolicy> users_;
};

// Adds `name` with a new token to the users file and returns the token, which is shown once and
// stored only as its hash. The entry is appended as text, so the operator's comments and layout
// stay; a name already in the file is refused (remove its entry to issue a new token). The file
// is replaced atomically (temporary file + rename), mode 0600, keeping an existing file's owner
// (root adding a user must not leave a file the gt user cannot read). Created when missing.
Result<std::string> add_user(const std::string& path, const std::string& name);

// The text edit behind add_user: `yaml` with `name: {token_sha256: hash}` added as the last entry
// of the top-level `users:` block mapping (created when missing), in that block's indentation.
Result<std::string> insert_user_entry(const std::string& yaml, const std::string& name,
                                      const std::string& token_sha256);
// A user name --add-user accepts: a login-like word (letters, digits, '.', '_', '-'), 1-64.
bool valid_user_name(const std::string& name);

std::string sha256_hex(const std::string& data);
bool constant_time_equal(const std::string& a, const std::string& b);
// A new random token ("gt_" + 64 hex digits).
Result<std::string> new_token();

}  // namespace gt::dispatcher
