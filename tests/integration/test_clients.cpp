// Several client processes against real daemons: isolation and correctness under concurrency,
// cleanup when a client dies, errors at the call site and at sync points, and the embedded
// default.
#include <catch2/catch.hpp>
#include <gt/gt.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "daemons.h"
#include "libgtcore/instr_codec.h"
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

TEST_CASE("tiny flow-control windows: a long stream pauses and resumes without loss",
          "[clients][flow]") {
  // Windows of 16/32 instructions force the dispatcher to stop reading the client's socket
  // and resume on every few acks; the result must still be exact.
  Daemons d(DaemonOptions{1, {"--session-window", "16", "--worker-window", "32"}});
  RawClient c(d.address());
  REQUIRE(c.hello().kind_case() == gt::v1::ServerMessage::kWelcome);
  gt::v1::ClientMessage first;
  {
    gt::OpAttrs a = gt::make_full(gt::Shape{4}, gt::DType::kFloat32, 0.0);
    gt::v1::Instr* in = first.mutable_batch()->add_instrs();
    gt::encode_instr(gt::OpId::k_full, a, in);
    in->set_out(1);
  }
  c.send(first);
  // 5000 increments, 100 per frame: x_{k+1} = x_k + 1.
  uint64_t id = 1;
  for (int f = 0; f < 50; ++f) {
    gt::v1::ClientMessage m;
    for (int i = 0; i < 100; ++i) {
      gt::v1::Instr* in = m.mutable_batch()->add_instrs();
      gt::encode_instr(gt::OpId::k_add, gt::make_binary_scalar(gt::ScalarSide::kRight, 1.0, false), in);
      in->set_out(id + 1);
      in->add_inputs(id);
      m.mutable_batch()->add_frees(id);
      ++id;
    }
    c.send(m);
  }
  gt::v1::Reply r = c.request(gt::v1::Request::FETCH, id);
  REQUIRE(r.errors_size() == 0);
  const std::string& bytes = r.tensor().data();
  REQUIRE(bytes.size() == 16);
  float v[4];
  std::memcpy(v, bytes.data(), 16);
  for (float x : v) CHECK(x == 5000.0f);
  // Every freed intermediate is gone: only the last tensor is held.
  auto stats = c.worker_stats();
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].tensors() == 1);
}

TEST_CASE("the instruction log has one line per event in the documented columns",
          "[clients][log]") {
  char tmpl[] = "/tmp/gt-ilog-XXXXXX";
  REQUIRE(::mkdtemp(tmpl));
  std::string path = std::string(tmpl) + "/instructions.log";
  {
    Daemons d(DaemonOptions{1, {"--instruction-log", path}});
    RawClient c(d.address());
    REQUIRE(c.hello().kind_case() == gt::v1::ServerMessage::kWelcome);
    gt::v1::ClientMessage m;
    gt::v1::Instr* in = m.mutable_batch()->add_instrs();
    gt::encode_instr(gt::OpId::k_zeros, gt::make_shape_dtype(gt::Shape{2, 3}, gt::DType::kFloat32), in);
    in->set_out(1);
    c.send(m);
    REQUIRE(c.request(gt::v1::Request::FETCH, 1).errors_size() == 0);
  }  // daemons stop: the log is flushed
  std::string log = slurp(path);
  INFO(log);
  std::istringstream lines(log);
  std::string line;
  int recv = 0, n = 0;
  while (std::getline(lines, line)) {
    ++n;
    // elapsed | #seq | EVENT | SOURCE | COMMAND | SIZE | details
    CHECK(std::count(line.begin(), line.end(), '|') >= 6);
    if (line.find("| RECV") != std::string::npos) {
      ++recv;
      CHECK(line.find("zeros") != std::string::npos);
      CHECK(line.find("24B") != std::string::npos);
      CHECK(line.find("shape=[2, 3]") != std::string::npos);
    }
  }
  CHECK(recv == 1);
  CHECK(n >= 4);  // worker join, connect, recv, request, reply, ...
  CHECK(log.find("WORKER_JOIN") != std::string::npos);
  CHECK(log.find("REPLY") != std::string::npos);
  std::system((std::string("rm -rf ") + tmpl).c_str());
}

TEST_CASE("new sessions wait for min_workers, then start with the workers there are",
          "[clients][startup]") {
  using namespace std::chrono;
  SECTION("the session starts once the second worker registers") {
    Daemons d(DaemonOptions{0, {"--min-workers", "2", "--worker-wait-ms", "20000"}, {}, {}});
    d.add_worker();
    RawClient c(d.address());
    auto welcome = std::async(std::launch::async, [&] { return c.hello(); });
    // One worker is not enough: no answer yet.
    CHECK(welcome.wait_for(milliseconds(600)) == std::future_status::timeout);
    d.add_worker();
    REQUIRE(welcome.get().kind_case() == gt::v1::ServerMessage::kWelcome);
    CHECK(c.worker_stats().size() == 2);
  }
  SECTION("after worker_wait_ms the session starts on the one worker there is") {
    Daemons d(DaemonOptions{0, {"--min-workers", "3", "--worker-wait-ms", "500"}, {}, {}});
    d.add_worker();
    d.wait_for_workers(1);  // registered (a fixed sleep was too short on a loaded machine)
    auto t0 = steady_clock::now();
    RawClient c(d.address());
    REQUIRE(c.hello().kind_case() == gt::v1::ServerMessage::kWelcome);
    CHECK(steady_clock::now() - t0 >= milliseconds(450));
    CHECK(c.worker_stats().size() == 1);
  }
}
