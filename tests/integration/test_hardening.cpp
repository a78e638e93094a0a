// Multi-user hardening against real daemons (ARCHITECTURE §8): authentication of clients and workers,
// quotas per user, fair scheduling under a flood, and fault containment (dead or hung workers,
// dispatcher restarts, graceful drain).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "auth_setup.h"
#include "daemons.h"
#include "instr_builder.h"
#include "libgtcore/frame_codec.h"
#include "raw_client.h"

using namespace gt;
using namespace gt::testing;
using Clock = std::chrono::steady_clock;

namespace {

v1::Instr zeros_instr(uint64_t id, int64_t n) {
  return make_instr(OpId::k_zeros, id, {}, make_shape_dtype(Shape{n}, DType::kFloat32));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

TEST_CASE("unauthenticated clients and workers are refused with a reason", "[hardening][auth]") {
  AuthSetup auth({"alice"});
  Daemons d(DaemonOptions{1,
                          {"--users-file", auth.users, "--worker-secret-file", auth.secret_file},
                          {"--worker-secret-file", auth.secret_file},
                          auth.tokens["alice"]});
  {
    RawClient c(d.address());
    auto m = c.hello();
    REQUIRE(m.kind_case() == v1::ServerMessage::kRefusal);
    CHECK_THAT(m.refusal().reason(), Catch::Contains("authentication required"));
  }
  {
    RawClient c(d.address());
    auto m = c.hello(0, 0, "gt_not-a-real-token");
    REQUIRE(m.kind_case() == v1::ServerMessage::kRefusal);
    CHECK_THAT(m.refusal().reason(), Catch::Contains("authentication failed"));
  }
  {
    RawClient c(d.address());
    auto m = c.hello(0, 0, auth.tokens["alice"]);
    REQUIRE(m.kind_case() == v1::ServerMessage::kWelcome);
    CHECK(m.welcome().identity() == "alice");
  }
  {
    RawClient impostor(d.address());
    auto m = impostor.hello_as_worker("wrong-secret-0123456789");
    REQUIRE(m.kind_case() == v1::ServerMessage::kRefusal);
    CHECK_THAT(m.refusal().reason(), Catch::Contains("worker authentication failed"));
  }
  {
    RawClient impostor(d.address());
    auto m = impostor.hello_as_worker("");
    REQUIRE(m.kind_case() == v1::ServerMessage::kRefusal);
  }
  // The real worker (with the secret) registered, the impostors did not.
  RawClient c(d.address());
  REQUIRE(c.hello(0, 0, auth.tokens["alice"]).kind_case() == v1::ServerMessage::kWelcome);
  CHECK(c.worker_stats().size() == 1);
  // The users file stores hashes, never the tokens themselves.
  std::ifstream f(auth.users);
  std::stringstream ss;
  ss << f.rdbuf();
  CHECK(ss.str().find(auth.tokens["alice"]) == std::string::npos);
  struct stat st{};
  REQUIRE(::stat(auth.users.c_str(), &st) == 0);
  CHECK((st.st_mode & 077) == 0);
}

TEST_CASE("a quota is an error for that user only", "[hardening][quota]") {
  AuthSetup auth({"alice", "bob"});
  {  // bob: 64 KiB and one session; alice: the (unlimited) defaults
    std::ifstream in(auth.users);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string y = ss.str();
    auto pos = y.find("bob:");
    REQUIRE(pos != std::string::npos);
    y.insert(y.find('\n', pos) + 1, "    max_bytes: 65536\n    max_sessions: 1\n");
    std::ofstream out(auth.users);
    out << y;
  }
  Daemons d(DaemonOptions{1, {"--users-file", auth.users}, {}, auth.tokens["alice"]});
  RawClient bob(d.address()), alice(d.address());
  REQUIRE(bob.hello(0, 0, auth.tokens["bob"]).kind_case() == v1::ServerMessage::kWelcome);
  REQUIRE(alice.hello(0, 0, auth.tokens["alice"]).kind_case() == v1::ServerMessage::kWelcome);
  {
    RawClient bob2(d.address());
    auto m = bob2.hello(0, 0, auth.tokens["bob"]);
    REQUIRE(m.kind_case() == v1::ServerMessage::kRefusal);
    CHECK_THAT(m.refusal().reason(), Catch::Contains("session quota"));
  }
  // 8 KiB fits; 16 KiB more would not (8 + 16 + 48 > 64); alice's 4 MiB is unaffected.
  bob.send(batch_of({zeros_instr(1, 2048), zeros_instr(2, 4096), zeros_instr(3, 12288)}));
  alice.send(batch_of({zeros_instr(1, 1 << 20)}));
  v1::Reply bs = bob.request(v1::Request::SYNC);
  REQUIRE(bs.errors_size() == 1);
  CHECK(bs.errors(0).op() == "zeros");
  CHECK_THAT(bs.errors(0).message(), Catch::Contains("memory quota exceeded"));
  CHECK(alice.request(v1::Request::SYNC).errors_size() == 0);
  CHECK(alice.request(v1::Request::FETCH, 1).errors_size() == 0);
  CHECK(bob.request(v1::Request::FETCH, 2).errors_size() == 0);
  CHECK(bob.request(v1::Request::FETCH, 3).errors_size() == 1);
  // Freeing gives the room back.
  v1::ClientMessage frees;
  frees.mutable_batch()->add_frees(1);
  frees.mutable_batch()->add_frees(2);
  bob.send(frees);
  bob.send(batch_of({zeros_instr(4, 12288)}));
  CHECK(bob.request(v1::Request::SYNC).errors_size() == 0);
  // Non-admins see only their own tensors in stats.
  auto st = bob.worker_stats();
  REQUIRE(st.size() == 1);
  CHECK(st[0].tensors() == 1);  // bob holds id 4 only (alice's 4 MiB is not his business)
  CHECK(st[0].bytes() == 12288 * 4);
}

TEST_CASE("a flooding user does not starve a light user", "[hardening][fairness]") {
  // Small worker window: at most 4096 instructions of anyone in flight on the worker; the
  // flood's backlog (hundreds of thousands) waits in the dispatcher's fair scheduler.
  Daemons d(DaemonOptions{1, {"--worker-window", "4096", "--session-window", "2000000",
                              "--user-window", "4000000"}});
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> flood_sent{0};
  std::thread flooder([&] {
    RawClient f(d.address());
    REQUIRE(f.hello().kind_case() == v1::ServerMessage::kWelcome);
    f.send(batch_of({from_floats(1, std::vector<float>(256, 1.0f), Shape{16, 16})}));
    uint64_t id = 1;
    while (!stop) {
      v1::ClientMessage m;
      for (int i = 0; i < 2000; ++i) {
        *m.mutable_batch()->add_instrs() = make_instr(OpId::k_exp, id + 1, {id});
        m.mutable_batch()->add_frees(id);
        ++id;
      }
      f.send(m);  // blocks when the dispatcher stops reading (backpressure)
      flood_sent += 4000;
    }
  });
  // Let the flood build a deep backlog first.
  while (flood_sent < 200000) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  RawClient light(d.address());
  REQUIRE(light.hello().kind_case() == v1::ServerMessage::kWelcome);
  light.send(batch_of({from_floats(1, {1, 2, 3}, Shape{3})}));
  std::vector<double> lat;
  for (int i = 0; i < 20; ++i) {
    auto t0 = Clock::now();
    light.send(batch_of({make_instr(OpId::k_add, 100 + i, {1, 1})}));
    v1::Reply r = light.request(v1::Request::FETCH, 100 + i);
    lat.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    REQUIRE(r.errors_size() == 0);
    CHECK(floats_of(r) == std::vector<float>{2, 4, 6});
  }
  uint64_t backlog = flood_sent;
  stop = true;
  flooder.join();
  double p50 = median(lat), worst = *std::max_element(lat.begin(), lat.end());
  INFO("light user sync latency p50 " << p50 * 1e3 << " ms, max " << worst * 1e3
                                      << " ms; flood sent " << backlog << " instructions");
  // The flood's backlog (up to 2M instructions admitted by its session window) would take many
  // seconds to run; the light user waits for at most the worker's window plus its turn.
  CHECK(p50 < 0.5);
  CHECK(worst < 2.0);
}

TEST_CASE("a dead or hung worker: its sessions get an error, others go on, a new worker serves",
          "[hardening][faults]") {
  Daemons d(DaemonOptions{1, {"--heartbeat-interval-ms", "100", "--heartbeat-timeout-ms", "600"}});
  d.add_worker();  // one at a time, so process 0 is worker 0 and process 1 is worker 1
  d.wait_for_workers(2);
  // Sessions are homed on the least-loaded worker: a -> worker 0, b -> worker 1.
  RawClient a(d.address()), b(d.address());
  REQUIRE(a.hello().kind_case() == v1::ServerMessage::kWelcome);
  REQUIRE(b.hello().kind_case() == v1::ServerMessage::kWelcome);
  a.send(batch_of({from_floats(1, {1, 2}, Shape{2})}));
  b.send(batch_of({from_floats(1, {3, 4}, Shape{2})}));
  REQUIRE(a.request(v1::Request::SYNC).errors_size() == 0);
  REQUIRE(b.request(v1::Request::SYNC).errors_size() == 0);

  SECTION("hung (SIGSTOP): detected by heartbeats") {
    ::kill(d.worker_pid(0), SIGSTOP);
    auto t0 = Clock::now();
    v1::Reply r = a.request(v1::Request::SYNC);  // waits on the hung worker until it is declared dead
    double waited = std::chrono::duration<double>(Clock::now() - t0).count();
    REQUIRE(r.errors_size() >= 1);
    CHECK_THAT(r.errors(0).message(), Catch::Contains("worker 0"));
    CHECK(waited < 2 * 0.6 + 0.5);  // within 2x the heartbeat timeout (plus slack)
    ::kill(d.worker_pid(0), SIGCONT);
  }
  SECTION("killed (SIGKILL) mid-stream") {
    v1::ClientMessage m;
    for (int i = 0; i < 2000; ++i) *m.mutable_batch()->add_instrs() = make_instr(OpId::k_neg, 10 + i, {1});
    a.send(m);
    d.kill_worker(0, SIGKILL);
    v1::Reply r = a.request(v1::Request::SYNC);
    REQUIRE(r.errors_size() >= 1);
    CHECK_THAT(r.errors(0).message(), Catch::Contains("worker 0"));
  }
  // The other session is unaffected.
  v1::Reply rb = b.request(v1::Request::FETCH, 1);
  REQUIRE(rb.errors_size() == 0);
  CHECK(floats_of(rb) == std::vector<float>{3, 4});
  // a's old tensor is gone (an error, not a hang); new work goes to a live worker.
  CHECK(a.request(v1::Request::FETCH, 1).errors_size() == 1);
  d.kill_worker(0, SIGKILL);
  d.add_worker();
  d.wait_for_workers(2);
  a.send(batch_of({from_floats(5000, {7, 8}, Shape{2}), make_instr(OpId::k_mul, 5001, {5000, 5000})}));
  v1::Reply ra = a.request(v1::Request::FETCH, 5001);
  INFO((ra.errors_size() ? ra.errors(0).op() + ": " + ra.errors(0).message() : std::string()));
  REQUIRE(ra.errors_size() == 0);
  CHECK(floats_of(ra) == std::vector<float>{49, 64});
  CHECK(a.request(v1::Request::SYNC).errors_size() == 0);
}

TEST_CASE("a dispatcher restart: clients get 'session lost', workers come back", "[hardening][faults]") {
  Daemons d(DaemonOptions{1});
  RawClient c(d.address());
  REQUIRE(c.hello().kind_case() == v1::ServerMessage::kWelcome);
  d.kill_dispatcher(SIGKILL);
  CHECK(c.closed_by_peer(2000));  // a clean end of stream, not silence
  d.restart_dispatcher();
  d.wait_for_workers(1);  // the worker reconnected by itself (with backoff)
  RawClient c2(d.address());
  REQUIRE(c2.hello().kind_case() == v1::ServerMessage::kWelcome);
  c2.send(batch_of({from_floats(1, {1, 2}, Shape{2}), make_instr(OpId::k_add, 2, {1, 1})}));
  v1::Reply r = c2.request(v1::Request::FETCH, 2);
  REQUIRE(r.errors_size() == 0);
  CHECK(floats_of(r) == std::vector<float>{2, 4});
}

TEST_CASE("SIGTERM drains: queued work finishes, then the dispatcher exits", "[hardening][drain]") {
  // On a CPU worker, and on a sim worker: an asynchronous device acks work when it is issued and
  // answers the SYNC once it is done, so the drain must wait for the answer, not the acks.
  const std::vector<std::vector<std::string>> workers = {
      {}, {"--device", "sim", "--sim-kernel-us", "2000"}};  // sim: 300 kernels of 2 ms
  for (const auto& worker_args : workers) {
    INFO((worker_args.empty() ? "cpu" : "sim") << " worker");
    Daemons d(DaemonOptions{1, {}, worker_args});
    RawClient c(d.address());
    REQUIRE(c.hello().kind_case() == v1::ServerMessage::kWelcome);
    v1::ClientMessage m;
    *m.mutable_batch()->add_instrs() = from_floats(1, std::vector<float>(4096, 1.0f), Shape{64, 64});
    uint64_t id = 1;
    for (int i = 0; i < 300; ++i, ++id)
      *m.mutable_batch()->add_instrs() = make_instr(OpId::k_matmul, id + 1, {id, 1});
    auto* req = m.mutable_batch()->add_requests();
    req->set_request_id(77);
    req->set_kind(v1::Request::SYNC);
    c.send(m);
    ::kill(d.dispatcher_pid(), SIGTERM);
    bool got_reply = false;
    while (auto msg = c.read(10000)) {
      if (msg->kind_case() == v1::ServerMessage::kReply && msg->reply().request_id() == 77) {
        CHECK(msg->reply().errors_size() == 0);
        got_reply = true;
        break;
      }
    }
    CHECK(got_reply);
    CHECK(wait_process(d.dispatcher_pid(), 10000) == 0);
  }
}

TEST_CASE("the shipped configs load: etc/gt/dispatcher.yaml, worker.yaml, users.yaml",
          "[deploy]") {
  const std::string etc = std::string(GT_SOURCE_DIR) + "/etc/gt";
  // The shipped users file, extended by --add-user the way an operator would.
  AuthSetup auth({});
  std::filesystem::copy_file(etc + "/users.yaml", auth.users);
  std::string token = auth.add_user("ops");
  // The shipped files with only the port overridden (the rest are the documented defaults).
  Daemons d(DaemonOptions{0, {"--config", etc + "/dispatcher.yaml", "--users-file", auth.users}, {}, token});
  d.add_worker({"--config", etc + "/worker.yaml", "--dispatcher", d.unix_address(), "--device", "cpu"});
  d.wait_for_workers(1);
  RawClient c(d.address());
  REQUIRE(c.hello().kind_case() == v1::ServerMessage::kRefusal);  // users file set: token needed
  // A typo in a config is refused at startup, naming the key.
  std::string bad = d.dir() + "/bad.yaml";
  std::ofstream(bad) << "listen_adress: 127.0.0.1\n";
  std::string log = d.dir() + "/bad.log";
  pid_t p = spawn_process(bin_path("gt-dispatcherd"), {"--config", bad}, log);
  CHECK(wait_process(p, 10000) != 0);
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  CHECK_THAT(ss.str(), Catch::Contains("listen_adress") && Catch::Contains("bad.yaml"));
}
