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
#include "hot_loop.h"
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
