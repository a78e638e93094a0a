// Error codes end to end (ARCHITECTURE §2, §11): a failure keeps its gt::Status code from where it was
// found -- the client's shape rule, a worker's allocator or index check, the session -- across the
// wire (gt.v1.ErrorInfo.code) to gt::Error::code(), and sync-point errors say they are deferred.
// The client runs as its own process (gt-test-client errors), as the client session is
// process-wide.
#include <catch2/catch.hpp>

#include <map>
#include <sstream>
#include <string>

#include "auth_setup.h"
#include "daemons.h"

using namespace gt::testing;

namespace {

// "<case> <code> <call|sync>" lines -> case -> "code where".
std::map<std::string, std::string> parse(const std::string& out) {
  std::map<std::string, std::string> m;
  std::istringstream in(out);
  std::string name, code, where;
  while (in >> name >> code >> where) m[name] = code + " " + where;
  return m;
}

}  // namespace

TEST_CASE("each failure reaches gt::Error with its status code", "[errors][codes]") {
  // 64 MiB cap: the 256 MiB zeros fail on the worker's allocator, not the machine's.
  Daemons d({.workers = 1, .worker_args = {"--max-memory-bytes", "67108864"}});
  auto [rc, out] = run_client(d.address(), {"errors"});
  INFO(out);
  REQUIRE(rc == 0);
  auto got = parse(out);
  CHECK(got["shape"] == "INVALID_ARGUMENT call");        // the client's shape rule
  CHECK(got["undefined"] == "FAILED_PRECONDITION call");  // a default-constructed tensor
  CHECK(got["oom"] == "RESOURCE_EXHAUSTED sync");         // the worker's allocator
  CHECK(got["index"] == "OUT_OF_RANGE sync");             // the worker's index check, by fetch
  CHECK(got["index_sync"] == "OUT_OF_RANGE sync");        // ... and by synchronize()
  CHECK(got["after"] == "none -");                        // the session still works
}

TEST_CASE("an unreachable dispatcher is UNAVAILABLE at the first op", "[errors][codes]") {
  auto [rc, out] = run_client("127.0.0.1:1", {"connect_error"});
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(parse(out)["connect"] == "UNAVAILABLE call");
}

TEST_CASE("a refused token is PERMISSION_DENIED, a quota RESOURCE_EXHAUSTED", "[errors][codes]") {
  AuthSetup auth({"admin", "carol"});
  auth.set_user_keys("admin", "    admin: true\n");
  auth.set_user_keys("carol", "    max_bytes: 1048576\n");  // 1 MiB
  Daemons d(DaemonOptions{1, {"--users-file", auth.users}, {}, auth.tokens["admin"]});
  {
    auto [rc, out] = run_client(d.address(), {"connect_error"}, "gt_not-a-valid-token");
    INFO(out);
    REQUIRE(rc == 0);
    CHECK(parse(out)["connect"] == "PERMISSION_DENIED call");
  }
  {
    // The dispatcher refuses the 4 MiB zeros against carol's 1 MiB quota (its own poison).
    auto [rc, out] = run_client(d.address(), {"quota_error"}, auth.tokens["carol"]);
    INFO(out);
    REQUIRE(rc == 0);
    CHECK(parse(out)["quota"] == "RESOURCE_EXHAUSTED sync");
  }
}
