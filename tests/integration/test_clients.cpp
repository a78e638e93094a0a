// Several client processes against real daemons: isolation and correctness under concurrency,
// cleanup when a client dies, errors at the call site and at sync points, and the embedded
// default.
#include <catch2/catch.hpp>
#include <gt/gt.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "daemons.h"
#include "raw_client.h"

using namespace gt::testing;

namespace {

struct Totals {
  uint64_t tensors = 0, bytes = 0, ops = 0;
};

Totals totals(const std::string& address) {
  RawClient c(address);
  REQUIRE(c.hello().kind_case() == gt::v1::ServerMessage::kWelcome);
  Totals t;
  for (const auto& s : c.worker_stats()) {
    t.tensors += s.tensors();
    t.bytes += s.bytes();
    t.ops += s.ops_executed();
  }
  return t;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Embedded dispatchers still running for client `pid` (they carry --parent-pid PID).
int embedded_daemons_of(pid_t pid) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string cmd = slurp(e.path().string() + "/cmdline");
    if (cmd.find("gt-dispatcherd") == std::string::npos) continue;
    std::string tag = std::string("--parent-pid") + '\0' + std::to_string(pid) + '\0';
    if (cmd.find(tag) != std::string::npos) ++n;
  }
  return n;
}

Daemons& api_daemons() {
  static Daemons d(DaemonOptions{1, {}, {"--max-memory-bytes", "1048576"}});
  static bool connected = [] {
    gt::connect(d.address());
    return true;
  }();
  (void)connected;
  return d;
}

}  // namespace

TEST_CASE("several client processes at once on two workers get correct, isolated results",
          "[clients]") {
  Daemons d(DaemonOptions{2});
  ::setenv("GT_ADDRESS", d.address().c_str(), 1);
  std::vector<pid_t> kids;
  for (int i = 0; i < 4; ++i)
    kids.push_back(spawn_process(bin_path("gt-test-client"),
                                 {"verify", std::to_string(100 + i), "20"},
                                 d.dir() + "/client" + std::to_string(i) + ".log"));
  for (size_t i = 0; i < kids.size(); ++i) {
    INFO("client " << i << ": " << slurp(d.dir() + "/client" + std::to_string(i) + ".log"));
    CHECK(wait_process(kids[i], 60000) == 0);
  }
  ::unsetenv("GT_ADDRESS");
  // Sessions were spread over both workers (least-loaded home placement).
  RawClient c(d.address());
  REQUIRE(c.hello().kind_case() == gt::v1::ServerMessage::kWelcome);
  auto stats = c.worker_stats();
  REQUIRE(stats.size() == 2);
  CHECK(stats[0].ops_executed() > 0);
  CHECK(stats[1].ops_executed() > 0);
}

TEST_CASE("killing a client mid-stream frees its tensors on the worker", "[clients][cleanup]") {
  Daemons d(DaemonOptions{1});
  Totals base = totals(d.address());
  ::setenv("GT_ADDRESS", d.address().c_str(), 1);
  std::string log = d.dir() + "/hold.log";
  pid_t kid = spawn_process(bin_path("gt-test-client"), {"hold", "50"}, log);
  ::unsetenv("GT_ADDRESS");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (slurp(log).find("ready") == std::string::npos) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Totals held = totals(d.address());
  CHECK(held.tensors >= base.tensors + 50);
  CHECK(held.bytes >= base.bytes + 50 * 4000);
  // Let it stream for a while, so the kill lands mid-stream.
  Totals streaming = held;
  while (streaming.ops < held.ops + 2000 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    streaming = totals(d.address());
  }
  REQUIRE(streaming.ops >= held.ops + 2000);
  ::kill(kid, SIGKILL);
  wait_process(kid, 5000);
  Totals after;
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    after = totals(d.address());
  } while ((after.tensors != base.tensors || after.bytes != base.bytes) &&
           std::chrono::steady_clock::now() < deadline);
  CHECK(after.tensors == base.tensors);
  CHECK(after.bytes == base.bytes);
  CHECK(d.dispatcher_alive());
}

TEST_CASE("shape errors throw at the call site, naming the op", "[clients][errors]") {
  api_daemons();
  gt::Tensor a = gt::zeros({2, 3}), b = gt::zeros({2, 3});
  CHECK_THROWS_WITH(a.matmul(b), Catch::Contains("matmul"));
  CHECK_THROWS_WITH(a + gt::zeros({4}), Catch::Contains("add"));
  CHECK_THROWS_WITH(a.reshape({4, 2}), Catch::Contains("reshape"));
  CHECK_THROWS_WITH(a.sum(5), Catch::Contains("sum"));
  // Nothing was sent for them: the session is clean.
  CHECK_NOTHROW(gt::synchronize());
  CHECK((a + 1.0).sum().item<float>() == 6.0f);
}

TEST_CASE("a worker-side failure raises at the next sync naming the op", "[clients][errors]") {
  api_daemons();
  gt::Tensor big = gt::zeros({1 << 20});  // 4 MiB on a 1 MiB worker: fails there, not here
  gt::Tensor dep = big * 2.0;
  gt::Tensor fine = gt::ones({3}) * 2.0;
  CHECK_THROWS_WITH(gt::synchronize(), Catch::Contains("zeros") && Catch::Contains("out of memory"));
  CHECK_NOTHROW(gt::synchronize());  // reported once
  CHECK_THROWS_WITH(dep.to_vector<float>(), Catch::Contains("zeros"));
  CHECK(fine.to_vector<float>() == std::vector<float>{2, 2, 2});
}

TEST_CASE("the embedded default: quickstart runs, two at once do not collide", "[embedded]") {
  ::unsetenv("GT_ADDRESS");
  char dir[] = "/tmp/gt-embedded-test-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  std::string d = dir;
  pid_t p1 = spawn_process(bin_path("quickstart"), {}, d + "/1.log");
  pid_t p2 = spawn_process(bin_path("quickstart"), {}, d + "/2.log");
  CHECK(wait_process(p1, 60000) == 0);
  CHECK(wait_process(p2, 60000) == 0);
  for (const char* f : {"/1.log", "/2.log"}) {
    std::string out = slurp(d + f);
    INFO(out);
    CHECK(out.find("tensor([[") != std::string::npos);
    CHECK(std::count(out.begin(), out.end(), '\n') == 4);
  }
  // Nothing left behind: the private daemons exited with their clients.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((embedded_daemons_of(p1) + embedded_daemons_of(p2)) > 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(embedded_daemons_of(p1) == 0);
  CHECK(embedded_daemons_of(p2) == 0);
  std::system(("rm -rf " + d).c_str());
}
