// A scratch folder with a users file (tokens made by `gt-dispatcherd --add-user`) and a worker
// secret, as an operator would set them up (integration tests of quotas and authentication).
#pragma once

#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "daemons.h"

namespace gt::testing {

struct AuthSetup {
  std::string dir, users, secret_file, secret = "s3cret-worker-registration-key";
  std::map<std::string, std::string> tokens;

  explicit AuthSetup(const std::vector<std::string>& names, const std::string& extra_yaml = "") {
    char tmpl[] = "/tmp/gt-auth-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    dir = tmpl;
    users = dir + "/users.yaml";
    for (const auto& n : names) tokens[n] = add_user(n);
    if (!extra_yaml.empty()) {
      std::ofstream f(users, std::ios::app);
      f << extra_yaml;
    }
    secret_file = dir + "/worker.secret";
    {
      std::ofstream f(secret_file);
      f << secret << "\n";
    }
    ::chmod(secret_file.c_str(), 0600);
  }
  ~AuthSetup() { std::system(("rm -rf " + dir).c_str()); }

  std::string add_user(const std::string& name) {
    std::string out = dir + "/token.out";
    pid_t p = spawn_process(bin_path("gt-dispatcherd"), {"--users-file", users, "--add-user", name},
                            out);
    REQUIRE(wait_process(p, 10000) == 0);
    std::ifstream f(out);  // stdout (the token) and stderr (advice) share the file
    std::string line, token;
    while (std::getline(f, line))
      if (line.rfind("gt_", 0) == 0) token = line;
    ::unlink(out.c_str());
    REQUIRE(!token.empty());
    return token;
  }

  // Adds `lines` (indented keys such as "    max_bytes: 65536\n") under user `name`.
  void set_user_keys(const std::string& name, const std::string& lines) {
    std::ifstream in(users);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string y = ss.str();
    auto pos = y.find(name + ":");
    REQUIRE(pos != std::string::npos);
    y.insert(y.find('\n', pos) + 1, lines);
    std::ofstream out(users);
    out << y;
  }
};

}  // namespace gt::testing
