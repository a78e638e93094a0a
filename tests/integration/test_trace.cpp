// Traces and operator logs (issue 12 items 5, 6) against real daemons: two sessions on two CPU
// workers, one of them sharded (shard exchange between the workers), with syncs and fetches.
// The instruction log gets EXEC lines from both workers and PEER lines from both ends of an
// exchange; gt-trace turns it into trace-event JSON whose tracks, slices and flows are checked
// against the log's own lines (counts, times) and against causality (a worker cannot run an
// instruction before the dispatcher received it). Then gt-trace --live against a running
// dispatcher's HTTP port (admins only), and what the debug and trace log levels say.
#include <catch2/catch.hpp>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "auth_setup.h"
#include "daemons.h"
#include "instr_builder.h"
#include "raw_client.h"
#include "test_text.h"
#include "trace_json.h"

using namespace gt;
using namespace gt::testing;

namespace {

// The columns of a log line (trimmed), or empty when it is not one.
std::vector<std::string> columns(const std::string& line) {
  std::vector<std::string> out;
  size_t at = 0;
  for (int i = 0; i < 6; ++i) {
    size_t bar = line.find(" | ", at);
    if (bar == std::string::npos) return {};
    out.push_back(line.substr(at, bar - at));
    at = bar + 3;
  }
  out.push_back(line.substr(at));
  for (auto& c : out) {
    c.erase(0, c.find_first_not_of(' '));
    c.erase(c.find_last_not_of(' ') + 1);
  }
  return out;
}

std::string field(const std::string& details, const std::string& key) {
  const size_t at = details.find(key + "=");
  if (at == std::string::npos || (at > 0 && details[at - 1] != ' ')) return "";
  const size_t from = at + key.size() + 1;
  return details.substr(from, details.find(' ', from) - from);
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/gt-trace-test-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    if (std::getenv("GT_KEEP_TEST_LOGS")) return;  // as Daemons: kept for a look
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

int read_port_file(const std::string& path) {
  for (int i = 0; i < 400; ++i) {
    std::ifstream f(path);
    int port = 0;
    if (f >> port && port > 0) return port;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  FAIL("no port file " << path);
  return 0;
}

v1::Instr signal(v1::SignalEvent::Kind kind, const std::string& name) {
  v1::Instr in;
  in.mutable_signal()->set_kind(kind);
  in.mutable_signal()->set_name(name);
  return in;
}

uint64_t welcome(RawClient& c, const std::string& token = "") {
  v1::ServerMessage w = c.hello(0, 0, token);
  REQUIRE(w.has_welcome());
  return w.welcome().session_id();
}

std::vector<float> fetch_floats(RawClient& c, uint64_t id) {
  v1::Reply r = c.request(v1::Request::FETCH, id);
  REQUIRE(r.errors_size() == 0);
  return floats_of(r);
}

// Runs gt-trace with `args`; its exit status and what it printed.
std::pair<int, std::string> run_gt_trace(const std::vector<std::string>& args,
                                         const std::string& out_file, int timeout_ms = 60000) {
  pid_t p = spawn_process(bin_path("gt-trace"), args, out_file);
  const int rc = wait_process(p, timeout_ms);
  return {rc, slurp(out_file)};
}

}  // namespace

TEST_CASE("gt-trace: an instruction log of two sessions on two workers, one sharded",
          "[trace][log]") {
  TempDir dir;
  const std::string log_path = dir.path + "/instructions.log";
  uint64_t sa = 0, sb = 0;
  {
    Daemons d(DaemonOptions{2, {"--instruction-log", log_path}});
    RawClient a(d.address()), b(d.address());
    sa = welcome(a);  // home: worker 0
    sb = welcome(b);  // home: worker 1 (the least loaded)
    // Session A: a tensor sharded by rows over both workers, doubled there, then fetched
    // (gathered onto one worker: shard exchange between them) and synced.
    v1::ClientMessage m;
    v1::Instr cfg;
    cfg.mutable_config()->set_name("rows");
    cfg.mutable_config()->set_has_shard(true);
    cfg.mutable_config()->set_axis(0);
    *m.mutable_batch()->add_instrs() = cfg;
    *m.mutable_batch()->add_instrs() = signal(v1::SignalEvent::ENTER, "rows");
    *m.mutable_batch()->add_instrs() =
        make_instr(OpId::k_ones, 1, {}, make_shape_dtype(Shape{8, 4}, DType::kFloat32));
    *m.mutable_batch()->add_instrs() = make_instr(OpId::k_add, 2, {1, 1});
    *m.mutable_batch()->add_instrs() = signal(v1::SignalEvent::EXIT, "rows");
    a.send(m);
    // Session B: on its own worker, meanwhile.
    b.send(batch_of({make_instr(OpId::k_ones, 1, {}, make_shape_dtype(Shape{4, 4}, DType::kFloat32)),
                     make_instr(OpId::k_add, 2, {1, 1})}));
    CHECK(fetch_floats(a, 2) == std::vector<float>(32, 2.0f));
    REQUIRE(a.request(v1::Request::SYNC).errors_size() == 0);
    REQUIRE(b.request(v1::Request::SYNC).errors_size() == 0);
    CHECK(fetch_floats(b, 2) == std::vector<float>(16, 2.0f));
  }  // the daemons stop: the log is flushed

  // The log itself.
  const auto lines = lines_of(slurp(log_path));
  INFO(slurp(log_path));
  REQUIRE(lines.size() > 10);
  const std::string a_src = "CLIENT:" + std::to_string(sa), b_src = "CLIENT:" + std::to_string(sb);
  std::map<std::string, int> exec_lines, peer_lines;           // by worker source
  std::map<std::string, int> recv_lines;                       // by session source
  std::map<std::string, std::set<std::string>> tag_workers;    // PEER tag -> workers
  std::string a_sync_routes;
  double a_sync_t = -1, a_first_recv_t = -1, b_first_recv_t = -1;
  size_t first_bar = lines[0].find(" | ");
  for (const auto& l : lines) {
    const auto c = columns(l);
    REQUIRE(c.size() == 7);
    CHECK(l.find(" | ") == first_bar);  // aligned: the same column for every source
    const double t = std::stod(c[0]);
    if (c[2] == "EXEC") exec_lines[c[3]]++;
    if (c[2] == "PEER") {
      peer_lines[c[3]]++;
      tag_workers[field(c[6], "tag")].insert(c[3]);
    }
    if (c[2] == "RECV") {
      recv_lines[c[3]]++;
      if (c[3] == a_src && a_first_recv_t < 0) a_first_recv_t = t;
      if (c[3] == b_src && b_first_recv_t < 0) b_first_recv_t = t;
    }
    if (c[2] == "REQUEST" && c[3] == a_src && c[4] == "SYNC") {
      a_sync_routes = field(c[6], "workers");
      a_sync_t = t;
    }
  }
  CHECK(exec_lines["WORKER:0"] > 0);
  CHECK(exec_lines["WORKER:1"] > 0);
  bool exchanged = false;  // one exchange seen from both ends
  for (const auto& [tag, workers] : tag_workers) exchanged = exchanged || workers.size() == 2;
  CHECK(exchanged);
  // Session A used both workers: its SYNC went to each (worker:request id).
  CHECK(a_sync_routes.find("0:") != std::string::npos);
  CHECK(a_sync_routes.find("1:") != std::string::npos);
  CHECK(recv_lines[a_src] == 2);  // ones and add (signals and configs are not RECV)
  CHECK(recv_lines[b_src] == 2);

  // The trace.
  const std::string json_path = dir.path + "/trace.json";
  auto [rc, out] = run_gt_trace({log_path, "-o", json_path}, dir.path + "/gt-trace.out");
  INFO(out);
  REQUIRE(rc == 0);
  const ParsedTrace t = parse_trace(slurp(json_path));
  const int64_t w0 = t.pid_named("worker 0 (cpu)"), w1 = t.pid_named("worker 1 (cpu)");
  REQUIRE(w0 > 0);
  REQUIRE(w1 > 0);
  int64_t pa = -1, pb = -1;
  for (const auto& [pid, name] : t.process_names) {
    if (name == "session " + std::to_string(sa) + " anonymous/raw-test-client") pa = pid;
    if (name == "session " + std::to_string(sb) + " anonymous/raw-test-client") pb = pid;
  }
  REQUIRE(pa > 0);
  REQUIRE(pb > 0);
  check_trace_rules(t, {{w0, 1}, {w1, 1}});
  // One slice per EXEC / PEER / RECV line, on the track of its worker or session.
  CHECK(static_cast<int>(t.slices(w0, 1).size()) == exec_lines["WORKER:0"]);
  CHECK(static_cast<int>(t.slices(w1, 1).size()) == exec_lines["WORKER:1"]);
  CHECK(static_cast<int>(t.slices(w0, 2).size()) == peer_lines["WORKER:0"]);
  CHECK(static_cast<int>(t.slices(w1, 2).size()) == peer_lines["WORKER:1"]);
  CHECK(static_cast<int>(t.slices(pa, 1).size()) == recv_lines[a_src]);
  CHECK(static_cast<int>(t.slices(pb, 1).size()) == recv_lines[b_src]);

  // Times against the log: A's SYNC starts where its REQUEST line says, relative to A's first
  // received instruction (both from the dispatcher's clock).
  const TraceEvent* a_sync = nullptr;
  for (const TraceEvent* s : t.slices(pa, 2))
    if (s->name == "SYNC") a_sync = s;
  REQUIRE(a_sync != nullptr);
  const double a_first_recv_ts = t.slices(pa, 1).front()->ts;
  CHECK(a_sync->ts - a_first_recv_ts == Approx((a_sync_t - a_first_recv_t) * 1e6).epsilon(0).margin(1.5));
  // Causality across the clocks: B's instructions ran on worker 1 after the dispatcher had them.
  const double b_first_recv_ts = t.slices(pb, 1).front()->ts;
  (void)b_first_recv_t;
  for (const TraceEvent* s : t.slices(w1, 1))
    if (s->arg("session") == std::to_string(sb)) CHECK(s->ts >= b_first_recv_ts);

  // A's SYNC flows: from the request on A's track to the turn that answered it on each worker,
  // starting before that turn ends; and back.
  std::map<int64_t, const TraceEvent*> finish_of;
  for (const TraceEvent* f : t.of("f")) finish_of[f->id] = f;
  std::set<int64_t> synced_workers;
  for (const TraceEvent* s : t.of("s")) {
    if (s->cat != "request" || s->pid != pa || s->tid != 2) continue;
    if (s->ts < a_sync->ts || s->ts > a_sync->end()) continue;  // another request of A
    const TraceEvent* f = finish_of.at(s->id);
    const TraceEvent* turn = slice_at(t, f->pid, 1, f->ts);
    REQUIRE(turn != nullptr);
    INFO("sync flow " << s->ts << " -> turn [" << turn->ts << ", " << turn->end() << "]");
    CHECK(s->ts <= turn->end());
    CHECK(turn->ts >= a_sync->ts);  // the worker answered after the request was made
    CHECK(turn->end() <= a_sync->end() + 1.0);  // and before the reply went out
    synced_workers.insert(f->pid);
  }
  CHECK(synced_workers == std::set<int64_t>{w0, w1});
  // Shard exchange: a flow from one worker's peer track to the other's.
  bool peer_flow = false;
  for (const TraceEvent* s : t.of("s"))
    if (s->cat == "peer") {
      const TraceEvent* f = finish_of.at(s->id);
      peer_flow = peer_flow || (s->tid == 2 && f->tid == 2 && s->pid != f->pid &&
                                std::set<int64_t>{s->pid, f->pid} == std::set<int64_t>{w0, w1});
    }
  CHECK(peer_flow);
}

TEST_CASE("gt-trace --live records a running dispatcher without a log file, admins only",
          "[trace][auth]") {
  AuthSetup auth({"admin", "alice"});
  auth.set_user_keys("admin", "    admin: true\n");
  TempDir dir;
  const std::string port_file = dir.path + "/http.port";
  Daemons d(DaemonOptions{2,
                          {"--http-port", "0", "--http-port-file", port_file, "--users-file",
                           auth.users, "--worker-secret-file", auth.secret_file},
                          {"--worker-secret-file", auth.secret_file},
                          auth.tokens.at("admin")});
  const std::string url = "http://127.0.0.1:" + std::to_string(read_port_file(port_file));
  RawClient alice(d.address());
  const uint64_t session = welcome(alice, auth.tokens.at("alice"));
  alice.send(batch_of({make_instr(OpId::k_ones, 1, {}, make_shape_dtype(Shape{4, 4}, DType::kFloat32))}));
  REQUIRE(alice.request(v1::Request::SYNC).errors_size() == 0);

  SECTION("an admin gets the recording, with the workers and sessions that were there") {
    const std::string json_path = dir.path + "/live.json", saved = dir.path + "/live.log";
    pid_t p = spawn_process(bin_path("gt-trace"),
                            {"--live", url, "--seconds", "2", "--token", auth.tokens.at("admin"),
                             "-o", json_path, "--save-log", saved},
                            dir.path + "/gt-trace.out");
    // Work for as long as it records (so some of it lands in the recording, whenever it began).
    int status = 0, round = 0;
    pid_t done = 0;
    while ((done = ::waitpid(p, &status, WNOHANG)) == 0 && round < 400) {
      const uint64_t id = 100 + static_cast<uint64_t>(round++);
      alice.send(batch_of({make_instr(OpId::k_add, id, {1, 1})}));
      REQUIRE(alice.request(v1::Request::SYNC).errors_size() == 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const int rc = done == p ? (WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status))
                             : wait_process(p, 60000);
    INFO(slurp(dir.path + "/gt-trace.out"));
    REQUIRE(rc == 0);
    const std::string log = slurp(saved);
    INFO(log);
    // What it started from: both workers, alice's session (it connected before: no CONNECT).
    CHECK(log.find("WORKER_INFO") != std::string::npos);
    CHECK(log.find("SESSION_INFO") != std::string::npos);
    CHECK(log.find("| CONNECT") == std::string::npos);
    CHECK(log.find("| EXEC") != std::string::npos);  // the workers were asked for timings
    const ParsedTrace t = parse_trace(slurp(json_path));
    const int64_t w0 = t.pid_named("worker 0 (cpu)"), w1 = t.pid_named("worker 1 (cpu)");
    REQUIRE(w0 > 0);
    REQUIRE(w1 > 0);
    const int64_t pa = t.pid_named("session " + std::to_string(session) + " alice/raw-test-client");
    REQUIRE(pa > 0);
    check_trace_rules(t, {{w0, 1}, {w1, 1}});
    CHECK(!t.slices(pa, 1).empty());
    CHECK(!t.slices(pa, 2).empty());
    CHECK(t.slices(w0, 1).size() + t.slices(w1, 1).size() > 0);
  }
  SECTION("a user who is not an admin is refused, and so is no token") {
    auto [rc, out] = run_gt_trace({"--live", url, "--seconds", "1", "--token", auth.tokens.at("alice")},
                                  dir.path + "/alice.out");
    CHECK(rc == 1);
    CHECK(out.find("403") != std::string::npos);
    CHECK(out.find("admins only") != std::string::npos);
    ::unsetenv("GT_TOKEN");
    ::unsetenv("GT_TOKEN_FILE");
    auto [rc2, out2] = run_gt_trace({"--live", url, "--seconds", "1"}, dir.path + "/none.out");
    CHECK(rc2 == 1);
    CHECK(out2.find("401") != std::string::npos);
  }
}

TEST_CASE("debug and trace log levels say what each connection, batch and instruction did",
          "[log]") {
  std::string dispatcher_log, worker_log;
  for (const char* level : {"trace", "info"}) {
    DaemonOptions o{1, {}, {}, {}};
    o.log_level = level;
    Daemons d(o);
    {
      RawClient c(d.address());
      welcome(c);
      c.send(batch_of({make_instr(OpId::k_ones, 1, {}, make_shape_dtype(Shape{2, 2}, DType::kFloat32)),
                       make_instr(OpId::k_neg, 2, {1})}));
      REQUIRE(c.request(v1::Request::SYNC).errors_size() == 0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the close is logged too
    dispatcher_log = slurp(d.dir() + "/dispatcher.log");
    worker_log = slurp(d.dir() + "/worker0.log");
    INFO(dispatcher_log);
    INFO(worker_log);
    const bool detailed = std::string(level) == "trace";
    // Dispatcher, debug: connections and frames and batches; trace: each instruction.
    CHECK((dispatcher_log.find("debug: connection") != std::string::npos) == detailed);
    CHECK((dispatcher_log.find("frame of") != std::string::npos) == detailed);
    CHECK((dispatcher_log.find("2 instructions, 0 frees, 0 requests") != std::string::npos) == detailed);
    CHECK((dispatcher_log.find("debug: worker 0: ack") != std::string::npos) == detailed);
    CHECK((dispatcher_log.find(": neg -> id 2 [2, 2] float32 on worker 0") != std::string::npos) ==
          detailed);
    // Worker, debug: batches; trace: each instruction with its handles.
    CHECK((worker_log.find("debug: batch") != std::string::npos) == detailed);
    CHECK((worker_log.find("ran instructions 0-2 of 2") != std::string::npos) == detailed);
    CHECK((worker_log.find(": neg [") != std::string::npos) == detailed);
  }
}
