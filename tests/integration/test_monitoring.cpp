// The dispatcher's HTTP endpoint (issue 12): /metrics parsed as Prometheus text exposition
// (every sample under a # TYPE, counters named _total, values numbers) and checked against the
// workload the test ran; /api/status; authorization with a users file (admin sees all, a user
// only their own sessions); what the endpoint refuses.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include <google/protobuf/util/json_util.h>

#include "auth_setup.h"
#include "daemons.h"
#include "http_client.h"
#include "instr_builder.h"
#include "raw_client.h"

using namespace gt;
using namespace gt::testing;

namespace {

// Prometheus text exposition, as a scraper reads it: families by # TYPE, samples
// name{labels} value (a histogram's as name_bucket / _sum / _count). Fails the test on anything
// a scraper would reject.
struct Scrape {
  std::map<std::string, std::string> types;               // family -> counter / gauge / histogram
  std::map<std::string, std::map<std::string, double>> samples;  // name -> labels -> value

  explicit Scrape(const std::string& text) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      if (line.rfind("# HELP ", 0) == 0) continue;
      if (line.rfind("# TYPE ", 0) == 0) {
        std::istringstream t(line.substr(7));
        std::string name, type;
        t >> name >> type;
        REQUIRE((type == "counter" || type == "gauge" || type == "histogram"));
        if (type == "counter") CHECK(name.size() > 6);
        if (type == "counter") CHECK(name.substr(name.size() - 6) == "_total");
        types[name] = type;
        continue;
      }
      REQUIRE(line[0] != '#');
      const size_t brace = line.find('{'), space = line.rfind(' ');
      REQUIRE(space != std::string::npos);
      const std::string name = line.substr(0, std::min(brace, space));
      const std::string labels =
          brace == std::string::npos ? "" : line.substr(brace + 1, line.rfind('}') - brace - 1);
      INFO(line);
      REQUIRE(types.count(family_of(name)) == 1);  // every sample is under its family's # TYPE
      char* endp = nullptr;
      const double v = std::strtod(line.c_str() + space + 1, &endp);
      REQUIRE(*endp == '\0');
      samples[name][labels] = v;
    }
  }
  // A histogram's samples belong to the family without their suffix.
  std::string family_of(const std::string& name) const {
    if (types.count(name)) return name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string sfx = suffix;
      if (name.size() > sfx.size() && name.compare(name.size() - sfx.size(), sfx.size(), sfx) == 0) {
        const std::string base = name.substr(0, name.size() - sfx.size());
        if (types.count(base) && types.at(base) == "histogram") return base;
      }
    }
    return name;
  }
  // The histogram `name` with `labels`: buckets are cumulative, le="+Inf" equals _count.
  void check_histogram(const std::string& name, const std::string& labels) const {
    double last = 0;
    bool inf = false;
    for (const auto& [l, v] : samples.at(name + "_bucket")) {
      if (l.rfind(labels + ",le=", 0) != 0) continue;
      if (l.find("le=\"+Inf\"") != std::string::npos) {
        inf = true;
        CHECK(v == samples.at(name + "_count").at(labels));
      }
    }
    CHECK(inf);
    // Cumulative in le order: sort the finite bounds numerically.
    std::map<double, double> by_le;
    for (const auto& [l, v] : samples.at(name + "_bucket")) {
      if (l.rfind(labels + ",le=", 0) != 0 || l.find("+Inf") != std::string::npos) continue;
      const size_t q = l.find("le=\"") + 4;
      by_le[std::strtod(l.c_str() + q, nullptr)] = v;
    }
    CHECK(by_le.size() >= 10);
    for (const auto& [le, v] : by_le) {
      CHECK(v >= last);
      last = v;
    }
  }
  double sum(const std::string& name) const {
    double s = 0;
    if (auto it = samples.find(name); it != samples.end())
      for (const auto& [l, v] : it->second) s += v;
    return s;
  }
  double one(const std::string& name) const {
    auto it = samples.find(name);
    REQUIRE(it != samples.end());
    REQUIRE(it->second.size() == 1);
    return it->second.begin()->second;
  }
};

// /api/status's body, read as gt-top reads it (unknown fields would be an error here).
v1::StatusReport parse_status(const std::string& json) {
  v1::StatusReport s;
  const auto st = google::protobuf::util::JsonStringToMessage(json, &s);
  INFO(json);
  REQUIRE(st.ok());
  return s;
}

// Three float32 tensors of 1000, 2000 and 3000 elements (24000 bytes), their sum fetched.
void run_workload(RawClient& c) {
  c.send(batch_of({make_instr(OpId::k_ones, 1, {}, make_shape_dtype(Shape{1000}, DType::kFloat32)),
                   make_instr(OpId::k_ones, 2, {}, make_shape_dtype(Shape{2000}, DType::kFloat32)),
                   make_instr(OpId::k_ones, 3, {}, make_shape_dtype(Shape{3000}, DType::kFloat32))}));
  REQUIRE(c.request(v1::Request::SYNC).errors_size() == 0);
}

}  // namespace

TEST_CASE("/metrics and /api/status describe the workload", "[monitoring]") {
  const std::string dir = temp_dir(), port_file = dir + "/http.port";
  Daemons d(DaemonOptions{2, {"--http-port", "0", "--http-port-file", port_file}, {}, {}});
  d.wait_for_workers(2);
  const int port = read_port_file(port_file);
  RawClient c(d.address());
  REQUIRE(c.hello().has_welcome());
  run_workload(c);

  const HttpReply m = http_get(port, "/metrics");
  REQUIRE(m.code == 200);
  CHECK(m.headers.find("text/plain; version=0.0.4") != std::string::npos);
  const Scrape s(m.body);
  CHECK(s.one("gt_dispatcher_workers") == 2);
  CHECK(s.one("gt_dispatcher_sessions") >= 1);
  CHECK(s.one("gt_dispatcher_sessions_started_total") >= 1);
  // Exactly what the session holds: 3 tensors, 24000 bytes, on the workers and per user.
  CHECK(s.sum("gt_session_tensors") == 3);
  CHECK(s.sum("gt_session_tensor_bytes") == 24000);
  CHECK(s.sum("gt_worker_tensors") == 3);
  CHECK(s.sum("gt_worker_tensor_bytes") == 24000);
  CHECK(s.sum("gt_user_tensor_bytes") == 24000);
  CHECK(s.sum("gt_session_instructions_total") == 3);
  // After the sync every instruction sent has executed.
  CHECK(s.sum("gt_worker_instructions_executed_total") >= 3);
  CHECK(s.sum("gt_worker_instructions_executed_total") == s.sum("gt_worker_instructions_sent_total"));
  CHECK(s.sum("gt_worker_instructions_in_flight") == 0);
  CHECK(s.sum("gt_worker_memory_capacity_bytes") > 0);
  CHECK(s.samples.at("gt_dispatcher_bytes_total").at("peer=\"clients\",direction=\"in\"") > 0);
  // One SYNC so far, its latency in the session's histogram (and its user's).
  CHECK(s.sum("gt_session_sync_latency_seconds_count") == 1);
  CHECK(s.sum("gt_session_sync_latency_seconds_sum") > 0);
  CHECK(s.sum("gt_user_sync_latency_seconds_count") == 1);
  s.check_histogram("gt_session_sync_latency_seconds",
                    s.samples.at("gt_session_sync_latency_seconds_count").begin()->first);

  // A free is seen at once (the tensors of a session are gauges, not counters).
  v1::ClientMessage fr;
  fr.mutable_batch()->add_frees(3);
  c.send(fr);
  REQUIRE(c.request(v1::Request::SYNC).errors_size() == 0);
  CHECK(Scrape(http_get(port, "/metrics").body).sum("gt_session_tensor_bytes") == 12000);

  const HttpReply j = http_get(port, "/api/status?x=1");
  REQUIRE(j.code == 200);
  CHECK(j.headers.find("application/json") != std::string::npos);
  CHECK(j.body.find("\"tensor_bytes\":\"12000\"") != std::string::npos);  // as written
  const v1::StatusReport st = parse_status(j.body);
  REQUIRE(st.workers_size() == 2);
  CHECK(st.workers(0).id() == 0);
  CHECK(st.workers(1).id() == 1);
  for (const auto& w : st.workers()) CHECK(w.device_kind() == "cpu");
  REQUIRE(st.sessions_size() == 1);
  CHECK(st.sessions(0).tensor_bytes() == 12000);
  CHECK(st.sessions(0).tensors() == 2);
  CHECK(st.sessions(0).sync_latency().count() == 2);  // the two syncs
  CHECK(st.latency_bounds_s_size() + 1 == st.sessions(0).sync_latency().counts_size());
  REQUIRE(st.users_size() == 1);
  CHECK(st.users(0).tensor_bytes() == 12000);
  CHECK(st.users(0).sessions() == 1);

  CHECK(http_get(port, "/nope").code == 404);
  CHECK(http_get(port, "/metrics", "", "POST").code == 405);
  // A request that is not HTTP gets no answer, and the endpoint keeps serving.
  {
    RawClient junk("127.0.0.1:" + std::to_string(port));
    junk.send_raw(std::string(20000, 'x'));
  }
  CHECK(http_get(port, "/metrics").code == 200);
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("with a users file the endpoint needs a token, a user sees their own sessions",
          "[monitoring][auth]") {
  AuthSetup auth({"admin", "alice", "bob"});
  auth.set_user_keys("admin", "    admin: true\n");
  const std::string dir = temp_dir(), port_file = dir + "/http.port";
  Daemons d(DaemonOptions{1,
                          {"--http-port", "0", "--http-port-file", port_file, "--users-file",
                           auth.users, "--worker-secret-file", auth.secret_file},
                          {"--worker-secret-file", auth.secret_file},
                          auth.tokens.at("admin")});
  d.wait_for_workers(1);
  const int port = read_port_file(port_file);
  RawClient alice(d.address()), bob(d.address());
  REQUIRE(alice.hello(0, 0, auth.tokens.at("alice")).has_welcome());
  REQUIRE(bob.hello(0, 0, auth.tokens.at("bob")).has_welcome());
  run_workload(alice);
  bob.send(batch_of({make_instr(OpId::k_ones, 1, {}, make_shape_dtype(Shape{500}, DType::kFloat32))}));
  REQUIRE(bob.request(v1::Request::SYNC).errors_size() == 0);

  const HttpReply none = http_get(port, "/metrics");
  CHECK(none.code == 401);
  CHECK(none.headers.find("WWW-Authenticate: Bearer") != std::string::npos);
  CHECK(http_get(port, "/metrics", "gt_not_a_token").code == 401);

  const Scrape all(http_get(port, "/metrics", auth.tokens.at("admin")).body);
  CHECK(all.sum("gt_session_tensor_bytes") == 24000 + 2000);
  CHECK(all.sum("gt_user_sessions") == 2);

  const HttpReply as_alice = http_get(port, "/metrics", auth.tokens.at("alice"));
  REQUIRE(as_alice.code == 200);
  const Scrape mine(as_alice.body);
  CHECK(mine.sum("gt_session_tensor_bytes") == 24000);   // bob's session is not there
  CHECK(mine.sum("gt_worker_tensor_bytes") == 24000);    // nor what bob holds on the worker
  CHECK(as_alice.body.find("user=\"bob\"") == std::string::npos);
  const v1::StatusReport bobs = parse_status(http_get(port, "/api/status", auth.tokens.at("bob")).body);
  REQUIRE(bobs.sessions_size() == 1);
  CHECK(bobs.sessions(0).user() == "bob");
  REQUIRE(bobs.users_size() == 1);
  CHECK(bobs.users(0).name() == "bob");
  CHECK(bobs.bytes_from_clients() == 0);  // nor the dispatcher's traffic
  // The same through the protocol's STATUS request (gt::status()): alice sees her own only; an
  // admin sees everyone.
  const v1::Reply r = alice.request(v1::Request::STATUS);
  REQUIRE(r.has_status());
  REQUIRE(r.status().sessions_size() == 1);
  CHECK(r.status().sessions(0).user() == "alice");
  CHECK(r.status().sessions(0).tensor_bytes() == 24000);
  RawClient admin(d.address());
  REQUIRE(admin.hello(0, 0, auth.tokens.at("admin")).has_welcome());
  CHECK(admin.request(v1::Request::STATUS).status().sessions_size() == 3);
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("worker figures, rates, queue and recent errors come from the workers' heartbeats",
          "[monitoring]") {
  const std::string dir = temp_dir(), port_file = dir + "/http.port";
  Daemons d(DaemonOptions{1, {"--http-port", "0", "--http-port-file", port_file,
                              "--heartbeat-interval-ms", "100"}, {}, {}});
  d.wait_for_workers(1);
  const int port = read_port_file(port_file);
  RawClient c(d.address());
  REQUIRE(c.hello().has_welcome());
  // 3000 ops in 30 frames (each op replaces the last tensor, freed in the same frame), then a
  // 1 MiB tensor held.
  constexpr int kFrames = 30, kPerFrame = 100;
  uint64_t id = 1;
  for (int f = 0; f < kFrames; ++f) {
    v1::ClientMessage m;
    for (int i = 0; i < kPerFrame; ++i, ++id) {
      *m.mutable_batch()->add_instrs() =
          make_instr(OpId::k_ones, id, {}, make_shape_dtype(Shape{16}, DType::kFloat32));
      if (id > 1) {
        m.mutable_batch()->add_frees(id - 1);
        m.mutable_batch()->add_free_at(static_cast<uint32_t>(i + 1));
      }
    }
    c.send(m);
  }
  c.send(batch_of({make_instr(OpId::k_ones, 100000, {},
                              make_shape_dtype(Shape{262144}, DType::kFloat32))}));
  REQUIRE(c.request(v1::Request::SYNC).errors_size() == 0);
  // A shape error: the dispatcher poisons the result and keeps it among the recent errors.
  c.send(batch_of({make_instr(OpId::k_ones, 200000, {}, make_shape_dtype(Shape{3}, DType::kFloat32)),
                   make_instr(OpId::k_ones, 200001, {}, make_shape_dtype(Shape{4}, DType::kFloat32)),
                   make_instr(OpId::k_add, 200002, {200000, 200001})}));
  CHECK(c.request(v1::Request::SYNC).errors_size() == 1);

  // Rates come from 1 s windows: within a few seconds the executed ops show up in the history.
  // (A window can be shorter than 1 s — the first after registration — so a rate can be above
  // the count it saw; the counters themselves are exact.)
  v1::StatusReport st;
  double ran = 0;
  for (int i = 0; i < 60 && ran < kFrames * kPerFrame; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    st = parse_status(http_get(port, "/api/status").body);
    REQUIRE(st.workers_size() == 1);
    ran = 0;
    for (double r : st.workers(0).ops_per_s_history()) ran += r;
  }
  const v1::WorkerStatus& w = st.workers(0);
  INFO(w.DebugString());
  CHECK(ran >= 0.8 * (kFrames * kPerFrame + 3));
  CHECK(w.ops_executed() == kFrames * kPerFrame + 3);  // the failed add never reached it
  CHECK(w.busy_s() > 0);
  CHECK(w.busy_s() < st.uptime_s());
  CHECK(w.queue_depth() == 0);                        // all of it ran
  CHECK(w.memory_used_bytes() >= 262144 * 4);         // the 1 MiB tensor, on the worker's allocator
  CHECK(w.memory_reserved_bytes() >= w.memory_used_bytes());
  CHECK(w.heartbeat_age_s() < 1.0);
  REQUIRE(st.sessions_size() == 1);
  const v1::SessionStatus& s = st.sessions(0);
  CHECK(s.instructions() == kFrames * kPerFrame + 4);
  double sent = 0;
  for (double r : s.ops_per_s_history()) sent += r;
  CHECK(sent >= 0.8 * (kFrames * kPerFrame + 4));
  CHECK(s.instructions_queued() == 0);
  CHECK(s.errors() == 1);
  CHECK(s.sync_latency().count() == 2);
  CHECK(s.sync_latency().p50_s() > 0);
  CHECK(s.sync_latency().p99_s() >= s.sync_latency().p50_s());
  REQUIRE(st.recent_errors_size() == 1);
  CHECK(st.recent_errors(0).session() == s.id());
  CHECK(st.recent_errors(0).op() == "add");
  CHECK(st.recent_errors(0).unix_time_s() > 1.7e9);

  const Scrape m(http_get(port, "/metrics").body);
  CHECK(m.one("gt_worker_queue_depth") == 0);
  CHECK(m.one("gt_worker_ops_executed_total") == kFrames * kPerFrame + 3);
  CHECK(m.one("gt_worker_memory_used_bytes") >= 262144 * 4);
  CHECK(m.one("gt_session_errors_total") == 1);
  CHECK(m.one("gt_user_errors_total") == 1);
  CHECK(m.one("gt_worker_busy_ratio") >= 0);
  CHECK(m.one("gt_worker_busy_ratio") <= 1);
  std::system(("rm -rf " + dir).c_str());
}
