// Hot-path detection against real daemons (issue 11 step 1, dispatcherd/hot_paths.h): a
// training-like loop (matmul, add, relu, sum; temporaries freed; the loss fetched each step) is
// a hot path at its second step, a shape change mid-loop is a miss and is detected
// again, returning to the first shape hits the first path, and a second session running the
// same loop starts from nothing (sessions share no detection state). Results are checked
// against host arithmetic: detection must not change what runs.
#include <catch2/catch.hpp>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "daemons.h"
#include "libgtcore/op_attrs.h"
#include "instr_builder.h"
#include "raw_client.h"
#include "test_text.h"

using namespace gt;
using namespace gt::testing;

namespace {

struct Event {
  std::string kind, details;
};

// HOT_* lines of the instruction log, per session source ("CLIENT:<id>").
std::map<std::string, std::vector<Event>> hot_events(const std::string& log) {
  std::map<std::string, std::vector<Event>> out;
  for (const auto& line : lines_of(log)) {
    std::vector<std::string> col;
    size_t at = 0;
    for (size_t bar; col.size() < 6 && (bar = line.find(" | ", at)) != std::string::npos;
         at = bar + 3)
      col.push_back(line.substr(at, bar - at));
    if (col.size() < 6) continue;
    auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(' '));
      s.erase(s.find_last_not_of(' ') + 1);
      return s;
    };
    const std::string kind = trim(col[2]);
    if (kind.rfind("HOT_", 0) == 0) out[trim(col[3])].push_back({kind, trim(line.substr(at))});
  }
  return out;
}

std::vector<float> values(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 7 + 3) % 11) - 5 * scale;
  return v;
}

// sum(relu(x @ w + b)) on the host, x [rows, 8], w [8, 8], b [8].
double reference_loss(const std::vector<float>& x, const std::vector<float>& w,
                      const std::vector<float>& b) {
  const size_t rows = x.size() / 8;
  double total = 0;
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < 8; ++j) {
      double s = b[j];
      for (size_t k = 0; k < 8; ++k) s += static_cast<double>(x[r * 8 + k]) * w[k * 8 + j];
      total += std::max(0.0, s);
    }
  return total;
}

// The session's tensors: ids 1 (x [4, 8]), 2 (x2 [6, 8]), 3 (w), 4 (b); steps use ids from 100.
struct Loop {
  RawClient c;
  uint64_t session = 0;
  uint64_t next = 100;
  uint64_t prev_loss = 0;
  std::vector<float> x = values(32, 0.5f), x2 = values(48, 0.25f), w = values(64, 0.125f),
                     b = values(8, 0.1f);

  explicit Loop(const std::string& address) : c(address) {
    v1::ServerMessage hello = c.hello();
    REQUIRE(hello.has_welcome());
    session = hello.welcome().session_id();
    c.send(batch_of({from_floats(1, x, Shape{4, 8}), from_floats(2, x2, Shape{6, 8}),
                     from_floats(3, w, Shape{8, 8}), from_floats(4, b, Shape{8})}));
    REQUIRE(c.request(v1::Request::SYNC).errors_size() == 0);
  }

  // One step on input `xid`; the loss is fetched (the sync point that ends the stretch).
  void step(uint64_t xid) {
    const uint64_t h = next++, z = next++, y = next++, loss = next++;
    v1::ClientMessage m = batch_of({
        make_instr(OpId::k_matmul, h, {xid, 3}),
        make_instr(OpId::k_add, z, {h, 4}),
        make_instr(OpId::k_relu, y, {z}),
        make_instr(OpId::k_sum, loss, {y}, make_reduce(kAllDims, false)),
    });
    v1::ClientBatch& batch = *m.mutable_batch();
    if (prev_loss != 0) {  // last step's loss, dropped first
      batch.add_frees(prev_loss);
      batch.add_free_at(0);
    }
    for (uint64_t t : {h, z, y}) {
      batch.add_frees(t);
      batch.add_free_at(4);
    }
    c.send(m);
    v1::Reply r = c.request(v1::Request::FETCH, loss);
    REQUIRE(r.errors_size() == 0);
    const std::vector<float> got = floats_of(r);
    REQUIRE(got.size() == 1);
    const double want = reference_loss(xid == 1 ? x : x2, w, b);
    CHECK(got[0] == Approx(want).epsilon(1e-5));
    prev_loss = loss;
  }
};

std::vector<std::string> kinds(const std::vector<Event>& es) {
  std::vector<std::string> k;
  for (const auto& e : es) k.push_back(e.kind + " " + e.details);
  return k;
}

}  // namespace

TEST_CASE("hot paths: a training loop is detected, a shape change re-detected, per session",
          "[hot][log]") {
  char tmpl[] = "/tmp/gt-hot-test-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl, log_path = dir + "/instructions.log";
  uint64_t sa = 0, sb = 0;
  {
    Daemons d(DaemonOptions{1, {"--instruction-log", log_path}});
    Loop a(d.address());
    sa = a.session;
    for (int i = 0; i < 5; ++i) a.step(1);
    for (int i = 0; i < 2; ++i) a.step(2);  // a shape change mid-loop
    a.step(1);                              // back to the first path
    Loop b(d.address());                    // the same loop in another session
    sb = b.session;
    for (int i = 0; i < 3; ++i) b.step(1);
  }  // the daemons stop: the log is flushed
  const std::string log = slurp(log_path);
  INFO(log);
  auto ev = hot_events(log);
  // A hot path at the second step (step 1 frees no previous loss, but frees of tensors made
  // before a stretch are not part of it).
  CHECK(kinds(ev["CLIENT:" + std::to_string(sa)]) ==
        std::vector<std::string>{"HOT_DEFINE path=1 instrs=4", "HOT_RUN path=1 instrs=4",
                                 "HOT_RUN path=1 instrs=4", "HOT_RUN path=1 instrs=4",
                                 "HOT_MISS path=0 instrs=4", "HOT_DEFINE path=2 instrs=4",
                                 "HOT_RUN path=1 instrs=4"});
  CHECK(kinds(ev["CLIENT:" + std::to_string(sb)]) ==
        std::vector<std::string>{"HOT_DEFINE path=1 instrs=4", "HOT_RUN path=1 instrs=4"});
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST_CASE("hot paths: --hot-paths=false detects nothing", "[hot][log]") {
  char tmpl[] = "/tmp/gt-hot-test-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl, log_path = dir + "/instructions.log";
  {
    Daemons d(DaemonOptions{1, {"--instruction-log", log_path, "--hot-paths=false"}});
    Loop a(d.address());
    for (int i = 0; i < 4; ++i) a.step(1);
  }
  const std::string log = slurp(log_path);
  INFO(log);
  CHECK(log.find("RECV") != std::string::npos);  // the log was written
  CHECK(hot_events(log).empty());
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST_CASE("hot paths: a stretch under a `compile: true` signal is a hot path at first sight",
          "[hot][log]") {
  char tmpl[] = "/tmp/gt-hot-test-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl, log_path = dir + "/instructions.log";
  uint64_t session = 0;
  {
    Daemons d(DaemonOptions{1, {"--instruction-log", log_path}});
    Loop a(d.address());
    session = a.session;
    v1::ClientMessage m;
    v1::Instr cfg;
    cfg.mutable_config()->set_name("step");
    cfg.mutable_config()->set_compile(true);
    *m.mutable_batch()->add_instrs() = cfg;
    v1::Instr enter;
    enter.mutable_signal()->set_kind(v1::SignalEvent::ENTER);
    enter.mutable_signal()->set_name("step");
    *m.mutable_batch()->add_instrs() = enter;
    *m.mutable_batch()->add_instrs() = make_instr(OpId::k_relu, 50, {1});
    *m.mutable_batch()->add_instrs() = make_instr(OpId::k_neg, 51, {50});
    v1::Instr exit = enter;
    exit.mutable_signal()->set_kind(v1::SignalEvent::EXIT);
    *m.mutable_batch()->add_instrs() = exit;
    a.c.send(m);
    v1::Reply r = a.c.request(v1::Request::FETCH, 51);
    REQUIRE(r.errors_size() == 0);
    std::vector<float> want(a.x.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = -std::max(0.0f, a.x[i]);
    CHECK(floats_of(r) == want);
  }
  const std::string log = slurp(log_path);
  INFO(log);
  auto ev = hot_events(log);
  CHECK(kinds(ev["CLIENT:" + std::to_string(session)]) ==
        std::vector<std::string>{"HOT_DEFINE path=1 instrs=2"});
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}
