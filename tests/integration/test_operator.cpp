// Operator defaults (issue 14): --version, TCP without a users file (warned on loopback, refused
// beyond it), --add-user through the binary, and SIGHUP reloading users without dropping
// sessions, against real daemons.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "auth_setup.h"
#include "daemons.h"
#include "libgtcore/version.h"
#include "raw_client.h"

using namespace gt;
using namespace gt::testing;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs a program to completion; its exit status and output (stdout and stderr).
std::pair<int, std::string> run(const std::string& program, const std::vector<std::string>& args,
                                const std::string& dir) {
  const std::string log = dir + "/run.log";
  ::unlink(log.c_str());
  int rc = wait_process(spawn_process(bin_path(program), args, log), 10000);
  return {rc, read_text(log)};
}

// A hello with `token` until it is welcomed or `ms` pass (SIGHUP is handled asynchronously).
bool welcomed_within(const std::string& address, const std::string& token, int ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  do {
    RawClient c(address);
    if (c.hello(0, 0, token).kind_case() == v1::ServerMessage::kWelcome) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < deadline);
  return false;
}

}  // namespace

TEST_CASE("both daemons answer --version with their name and GT version", "[operator]") {
  AuthSetup scratch({});
  for (const std::string program : {"gt-dispatcherd", "gt-workerd"}) {
    auto [rc, out] = run(program, {"--version"}, scratch.dir);
    CHECK(rc == 0);
    CHECK(out == program + " " + kVersion + "\n");
  }
}

TEST_CASE("TCP beyond loopback without a users file is refused, unless allowed",
          "[operator][auth]") {
  AuthSetup auth({"alice"});
  for (const char* address : {"0.0.0.0", "::"}) {
    auto [rc, out] = run("gt-dispatcherd", {"--listen-address", address, "--port", "0"}, auth.dir);
    CHECK(rc != 0);
    CHECK_THAT(out, Catch::Contains(std::string("refusing to listen on ") + address) &&
                        Catch::Contains("users_file") && Catch::Contains("127.0.0.1"));
  }
  {  // The escape hatch: starts, and says loudly what it means.
    Daemons d(DaemonOptions{1, {"--listen-address", "0.0.0.0", "--allow-insecure-tcp"}});
    RawClient c(d.address());
    CHECK(c.hello().kind_case() == v1::ServerMessage::kWelcome);
    CHECK_THAT(read_text(d.dir() + "/dispatcher.log"), Catch::Contains("WITHOUT a users_file"));
  }
  {  // With a users file the wide bind is fine, and quiet about tokens.
    Daemons d(DaemonOptions{
        1, {"--listen-address", "0.0.0.0", "--users-file", auth.users}, {}, auth.tokens["alice"]});
    RawClient c(d.address());
    CHECK(c.hello(0, 0, auth.tokens["alice"]).kind_case() == v1::ServerMessage::kWelcome);
    CHECK(read_text(d.dir() + "/dispatcher.log").find("WITHOUT") == std::string::npos);
  }
}

TEST_CASE("loopback TCP without a users file starts with a warning", "[operator][auth]") {
  Daemons d(DaemonOptions{1});  // a session needs a worker to be welcomed
  RawClient c(d.address());
  CHECK(c.hello().kind_case() == v1::ServerMessage::kWelcome);
  const std::string log = read_text(d.dir() + "/dispatcher.log");
  CHECK_THAT(log, Catch::Contains("WITHOUT a users_file") && Catch::Contains("admin"));
}

TEST_CASE("gt-dispatcherd --add-user keeps the shipped file's comments, refuses duplicates",
          "[operator][auth]") {
  AuthSetup auth({});
  const std::string shipped = read_text(std::string(GT_SOURCE_DIR) + "/etc/gt/users.yaml");
  std::ofstream(auth.users) << shipped;
  auth.add_user("alice");
  const std::string after = read_text(auth.users);
  CHECK(after.rfind(shipped, 0) == 0);  // every line of the documentation, unchanged
  auto [rc, out] = run("gt-dispatcherd", {"--users-file", auth.users, "--add-user", "alice"},
                       auth.dir);
  CHECK(rc != 0);
  CHECK_THAT(out, Catch::Contains("already in"));
  CHECK(read_text(auth.users) == after);
}

TEST_CASE("SIGHUP reloads the users file without dropping sessions", "[operator][auth]") {
  AuthSetup auth({"alice", "carol"});
  Daemons d(DaemonOptions{1, {"--users-file", auth.users}, {}, auth.tokens["alice"]});
  RawClient alice(d.address());
  REQUIRE(alice.hello(0, 0, auth.tokens["alice"]).kind_case() == v1::ServerMessage::kWelcome);
  REQUIRE(alice.worker_stats().size() == 1);

  // bob is added and carol removed while the dispatcher runs.
  const std::string bob = auth.add_user("bob");
  {
    RawClient c(d.address());
    CHECK(c.hello(0, 0, bob).kind_case() == v1::ServerMessage::kRefusal);  // not yet reloaded
  }
  std::string text = read_text(auth.users);
  size_t carol = text.find("  carol:\n");
  REQUIRE(carol != std::string::npos);
  size_t end = text.find('\n', text.find("token_sha256", carol)) + 1;
  text.erase(carol, end - carol);
  std::ofstream(auth.users) << text;

  REQUIRE(::kill(d.dispatcher_pid(), SIGHUP) == 0);
  CHECK(welcomed_within(d.address(), bob, 5000));
  {
    RawClient c(d.address());
    auto m = c.hello(0, 0, auth.tokens["carol"]);
    REQUIRE(m.kind_case() == v1::ServerMessage::kRefusal);
    CHECK_THAT(m.refusal().reason(), Catch::Contains("authentication failed"));
  }
  CHECK(alice.worker_stats().size() == 1);  // the session from before the reload goes on

  // A file that does not load is logged; the users from the last good load stay.
  std::ofstream(auth.users) << "users: [not, a, mapping\n";
  REQUIRE(::kill(d.dispatcher_pid(), SIGHUP) == 0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (read_text(d.dir() + "/dispatcher.log").find("not reloaded") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_THAT(read_text(d.dir() + "/dispatcher.log"), Catch::Contains("not reloaded"));
  CHECK(welcomed_within(d.address(), bob, 1000));
  CHECK(d.dispatcher_alive());
  CHECK(alice.worker_stats().size() == 1);
}
