// --add-user edits the users file as text (issue 14): the operator's comments and layout stay,
// the result loads with every user, duplicates and bad names are refused, mode 0600.
#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "dispatcherd/users.h"
#include "require_ok.h"

using namespace gt;
using namespace gt::dispatcher;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/gt-users-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    path = tmpl;
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
};

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), 0600);
}

const std::string kCommented =
    "# who may use GT here\n"
    "defaults:\n"
    "  weight: 1.0   # everyone's share\n"
    "\n"
    "users:\n"
    "    # alice runs the nightly jobs\n"
    "    alice:\n"
    "        token_sha256: \"" + std::string(64, 'a') + "\"\n"
    "        max_sessions: 2\n"
    "    # bob:\n"
    "    #   admin: true\n";

}  // namespace

TEST_CASE("add_user keeps the file's comments and its users", "[users]") {
  TempDir d;
  const std::string path = d.path + "/users.yaml";
  write_text(path, kCommented);
  auto token = add_user(path, "carol");
  GT_REQUIRE_OK(token.status());
  const std::string after = read_text(path);
  // Every original line is still there, in order, before the new entry.
  CHECK(after.rfind(kCommented, 0) == 0);
  CHECK_THAT(after, Catch::Contains("    carol:\n        token_sha256: \""));
  CHECK(after.find(*token) == std::string::npos);  // only the hash is stored
  auto t = UserTable::load(path);
  GT_REQUIRE_OK(t.status());
  CHECK(t->size() == 2);
  CHECK(t->policy_for("alice").max_sessions == 2);
  const UserPolicy* carol = t->find_by_token(*token);
  REQUIRE(carol);
  CHECK(carol->name == "carol");
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("add_user refuses a name already in the file and leaves the file alone", "[users]") {
  TempDir d;
  const std::string path = d.path + "/users.yaml";
  write_text(path, kCommented);
  auto again = add_user(path, "alice");
  REQUIRE_FALSE(again.is_ok());
  CHECK_THAT(again.status().message(), Catch::Contains("already in"));
  CHECK(read_text(path) == kCommented);
}

TEST_CASE("add_user refuses names that are not plain words", "[users]") {
  TempDir d;
  const std::string path = d.path + "/users.yaml";
  for (const char* bad : {"", "a b", "x:y", "#c", "-rf", "..", "a\nb", "quote\"d", "{x}"}) {
    INFO(bad);
    CHECK_FALSE(add_user(path, bad).is_ok());
  }
  CHECK(::access(path.c_str(), F_OK) != 0);  // nothing was created
  for (const char* good : {"alice", "svc-train.01", "a_b"}) CHECK(valid_user_name(good));
}

TEST_CASE("add_user creates a missing file, mode 0600", "[users]") {
  TempDir d;
  const std::string path = d.path + "/users.yaml";
  auto a = add_user(path, "alice");
  GT_REQUIRE_OK(a.status());
  auto b = add_user(path, "bob");
  GT_REQUIRE_OK(b.status());
  auto t = UserTable::load(path);
  GT_REQUIRE_OK(t.status());
  CHECK(t->size() == 2);
  REQUIRE(t->find_by_token(*a));
  CHECK(t->find_by_token(*a)->name == "alice");
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("insert_user_entry puts the entry inside the users block", "[users]") {
  const std::string h(64, 'b');
  SECTION("a key after users: stays a top-level key") {
    auto y = insert_user_entry("users:\n  a:\n    admin: true\n\n# defaults below\ndefaults:\n"
                               "  weight: 2\n",
                               "new", h);
    GT_REQUIRE_OK(y.status());
    CHECK(*y == "users:\n  a:\n    admin: true\n  new:\n    token_sha256: \"" + h +
                    "\"\n\n# defaults below\ndefaults:\n  weight: 2\n");
  }
  SECTION("an empty inline mapping becomes a block") {
    auto y = insert_user_entry("users: {}\n", "new", h);
    GT_REQUIRE_OK(y.status());
    CHECK(*y == "users:\n  new:\n    token_sha256: \"" + h + "\"\n");
  }
  SECTION("no users key: one is added at the end (no trailing newline before)") {
    auto y = insert_user_entry("defaults:\n  weight: 2", "new", h);
    GT_REQUIRE_OK(y.status());
    CHECK(*y == "defaults:\n  weight: 2\nusers:\n  new:\n    token_sha256: \"" + h + "\"\n");
  }
  SECTION("a flow mapping with users is refused, not rewritten") {
    auto y = insert_user_entry("users: {a: {admin: true}}\n", "new", h);
    REQUIRE_FALSE(y.is_ok());
    CHECK_THAT(y.status().message(), Catch::Contains("block mapping"));
  }
}

TEST_CASE("the shipped users file takes --add-user and keeps its documentation", "[users]") {
  TempDir d;
  const std::string path = d.path + "/users.yaml";
  const std::string shipped = read_text(std::string(GT_SOURCE_DIR) + "/etc/gt/users.yaml");
  REQUIRE(shipped.find("# Keys (all optional") != std::string::npos);
  write_text(path, shipped);
  auto token = add_user(path, "ops");
  GT_REQUIRE_OK(token.status());
  CHECK(read_text(path).rfind(shipped, 0) == 0);
  auto t = UserTable::load(path);
  GT_REQUIRE_OK(t.status());
  REQUIRE(t->find_by_token(*token));
  CHECK(t->find_by_token(*token)->name == "ops");
}

TEST_CASE("add_user run by root keeps the file's owner (the gt user must still read it)",
          "[users]") {
  if (::geteuid() != 0) {
    WARN("not root: the owner cannot change, nothing to check");
    return;
  }
  TempDir d;
  const std::string path = d.path + "/users.yaml";
  write_text(path, kCommented);
  REQUIRE(::chown(path.c_str(), 65534, 65534) == 0);  // nobody, standing in for gt
  GT_REQUIRE_OK(add_user(path, "carol").status());
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK(st.st_uid == 65534);
  CHECK(st.st_gid == 65534);
  CHECK((st.st_mode & 0777) == 0600);
}
