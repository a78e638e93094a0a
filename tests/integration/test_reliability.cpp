// Reliability against real daemons: memory a careless program cannot run away with. Frees take
// effect in stream order (a loop of temporaries fits a small worker cap), the dispatcher's own
// temporaries for sharded ops are freed and counted against the quota, a session's end leaves
// nothing on any worker, stats-only sessions leave no state, and a light user is not queued
// behind another user's flood of heavy work on the worker itself.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "auth_setup.h"
#include "daemons.h"
#include "instr_builder.h"
#include "raw_client.h"

using namespace gt;
using namespace gt::testing;
using Clock = std::chrono::steady_clock;

namespace {

// The same, for a program that must succeed and print "ok".
void expect_client_ok(const std::string& address, const std::vector<std::string>& args,
                      const std::string& token = "") {
  auto [rc, out] = run_client(address, args, token);
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find("ok") != std::string::npos);
}

struct Totals {
  uint64_t tensors = 0, bytes = 0, peak = 0, sessions = 0;
};

Totals worker_totals(const std::string& address, const std::string& admin_token = "") {
  RawClient c(address);
  REQUIRE(c.hello(0, 0, admin_token).kind_case() == v1::ServerMessage::kWelcome);
  Totals t;
  for (const auto& w : c.worker_stats()) {
    t.tensors += w.tensors();
    t.bytes += w.bytes();
    t.peak = std::max<uint64_t>(t.peak, w.peak_bytes());
    t.sessions += w.sessions();
  }
  return t;
}

// Worker state is dropped when the end of a session reaches it: poll briefly.
Totals settled_totals(const std::string& address, uint64_t want_tensors,
                      const std::string& admin_token = "") {
  Totals t;
  for (int i = 0; i < 100; ++i) {
    t = worker_totals(address, admin_token);
    if (t.tensors == want_tensors) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return t;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

TEST_CASE("a loop of temporaries runs under a 64 MiB worker cap (frees in stream order)",
          "[reliability][frees]") {
  // 2,000 iterations of 8 MiB of temporaries each: 16 GB made, a few MiB live at a time. With
  // frees applied after whole batches this ran out of memory at once.
  Daemons d(DaemonOptions{1, {}, {"--max-memory-bytes", std::to_string(64 << 20)}});
  expect_client_ok(d.address(), {"temps", "2000"});
  Totals t = settled_totals(d.address(), 0);
  CHECK(t.tensors == 0);
  CHECK(t.bytes == 0);
  // Peak: the live temporaries of about two iterations, never a batch's worth.
  CHECK(t.peak <= uint64_t{24} << 20);
}

TEST_CASE("data parallel for 200 steps: worker tensors constant, nothing left at the end",
          "[reliability][sharding]") {
  Daemons d(DaemonOptions{2});
  expect_client_ok(d.address(), {"dp", "200"});
  Totals t = settled_totals(d.address(), 0);
  CHECK(t.tensors == 0);
  CHECK(t.bytes == 0);
  CHECK(t.sessions == 0);
}

TEST_CASE("sharding cannot exceed the user's byte quota, data parallel fits in 64 MiB",
          "[reliability][sharding][quota]") {
  AuthSetup auth({"admin", "carol"});
  auth.set_user_keys("admin", "    admin: true\n");
  auth.set_user_keys("carol", "    max_bytes: 67108864\n");
  Daemons d(DaemonOptions{2, {"--users-file", auth.users}, {}, auth.tokens["admin"]});
  {  // 16 MiB sharded, then gathered whole on both workers: 16 + 2x16 (gathers) + 2x16 (the
     // replicated result) > 64 MiB, although what carol keeps (16 + 32) would fit.
    auto [rc, out] = run_client(d.address(), {"gather_quota"}, auth.tokens["carol"]);
    INFO(out);
    CHECK(rc == 0);
    CHECK(out.find("refused:") != std::string::npos);
    CHECK(out.find("memory quota exceeded") != std::string::npos);
  }
  Totals t = settled_totals(d.address(), 0, auth.tokens["admin"]);
  CHECK(t.tensors == 0);
  CHECK(t.peak <= uint64_t{64} << 20);  // never more than the quota on the workers
  expect_client_ok(d.address(), {"dp", "100"}, auth.tokens["carol"]);
  t = settled_totals(d.address(), 0, auth.tokens["admin"]);
  CHECK(t.tensors == 0);
}

TEST_CASE("stats-only sessions leave no state on the workers", "[reliability][sessions]") {
  Daemons d(DaemonOptions{2});
  for (int i = 0; i < 30; ++i) (void)worker_totals(d.address());
  Totals t = worker_totals(d.address());
  CHECK(t.sessions == 0);
}

TEST_CASE("a light user's small op waits milliseconds, not seconds, behind a matmul flood",
          "[reliability][fairness]") {
  Daemons d(DaemonOptions{1});
  std::atomic<uint64_t> queued{0};
  std::thread flooder([&] {
    RawClient f(d.address());
    REQUIRE(f.hello().kind_case() == v1::ServerMessage::kWelcome);
    f.send(batch_of({make_instr(OpId::k_full, 1, {}, make_full(Shape{512, 512}, DType::kFloat32, 0.001))}));
    uint64_t id = 2;
    // 4,000 matmuls of 512² (seconds of work, within the session window so no send blocks);
    // the daemons are killed at the end of the test with most of it still queued.
    for (int frame = 0; frame < 20; ++frame, id += 200) {
      f.send(matmul_flood(1, id, 200));  // 200 matmuls of 512² a frame
      queued += 200;
    }
    std::this_thread::sleep_for(std::chrono::seconds(30));  // keeps the session (and flood) alive
  });
  while (queued < 4000) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  RawClient light(d.address());
  REQUIRE(light.hello().kind_case() == v1::ServerMessage::kWelcome);
  std::vector<double> ms;
  for (uint64_t i = 1; i <= 100; ++i) {  // p99 of 100: one outlier is forgiven, two are not
    auto t0 = Clock::now();
    light.send(batch_of({make_instr(OpId::k_full, i, {}, make_full(Shape{4, 4}, DType::kFloat32, 1.0))}));
    v1::Reply r = light.request(v1::Request::FETCH, i);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    CHECK(r.errors_size() == 0);
    CHECK(floats_of(r) == std::vector<float>(16, 1.0f));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // The flood was still running: the light user did not simply wait for it to finish.
  Totals t = worker_totals(d.address());
  double p50 = percentile(ms, 0.5), p99 = percentile(ms, 0.99);
  INFO("light 4x4 op + fetch under the flood: p50 " << p50 << " ms, p99 " << p99 << " ms");
  // The flood is seconds of work; a small op waits at most a scheduling slice and a matmul or
  // two. p99 has headroom for a 2-core CI machine running other tests beside this one (50 ms
  // flaked there); the median shows the typical wait.
  CHECK(p50 <= 25.0);
  CHECK(p99 <= 100.0);
  CHECK(t.sessions >= 1);
  flooder.detach();  // its sleep ends on its own; the daemons go with this scope
}
