// The dispatcher's HTTP endpoint (issue 12): /metrics parsed as Prometheus text exposition
// (every sample under a # TYPE, counters named _total, values numbers) and checked against the
// workload the test ran; /api/status; authorization with a users file (admin sees all, a user
// only their own sessions); what the endpoint refuses.
#include <catch2/catch.hpp>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "auth_setup.h"
#include "daemons.h"
#include "instr_builder.h"
#include "raw_client.h"

using namespace gt;
using namespace gt::testing;

namespace {

struct HttpReply {
  int code = 0;
  std::string headers, body;
};

// A plain HTTP/1.1 request over a blocking socket (the endpoint closes after each answer).
HttpReply http_get(int port, const std::string& path, const std::string& token = "",
                   const std::string& method = "GET") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: localhost\r\n";
  if (!token.empty()) req += "Authorization: Bearer " + token + "\r\n";
  req += "\r\n";
  REQUIRE(::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size()));
  std::string all;
  char buf[65536];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) all.append(buf, static_cast<size_t>(n));
  ::close(fd);
  HttpReply r;
  const size_t end = all.find("\r\n\r\n");
  REQUIRE(end != std::string::npos);
  r.headers = all.substr(0, end);
  r.body = all.substr(end + 4);
  r.code = std::atoi(all.substr(9, 3).c_str());
  return r;
}

int read_port_file(const std::string& path) {
  for (int i = 0; i < 200; ++i) {
    std::ifstream f(path);
    int port = 0;
    if (f >> port && port > 0) return port;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  FAIL("no http port file " << path);
  return 0;
}

// Prometheus text exposition, as a scraper reads it: families by # TYPE, samples
// name{labels} value. Fails the test on anything a scraper would reject.
struct Scrape {
  std::map<std::string, std::string> types;               // family -> counter / gauge
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
        REQUIRE((type == "counter" || type == "gauge"));
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
      REQUIRE(types.count(name) == 1);  // every sample is under its family's # TYPE
      char* endp = nullptr;
      const double v = std::strtod(line.c_str() + space + 1, &endp);
      REQUIRE(*endp == '\0');
      samples[name][labels] = v;
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

std::string temp_dir() {
  char tmpl[] = "/tmp/gt-http-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  return tmpl;
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

  // A free is seen at once (the tensors of a session are gauges, not counters).
  v1::ClientMessage fr;
  fr.mutable_batch()->add_frees(3);
  c.send(fr);
  REQUIRE(c.request(v1::Request::SYNC).errors_size() == 0);
  CHECK(Scrape(http_get(port, "/metrics").body).sum("gt_session_tensor_bytes") == 12000);

  const HttpReply j = http_get(port, "/api/status?x=1");
  REQUIRE(j.code == 200);
  CHECK(j.headers.find("application/json") != std::string::npos);
  CHECK(j.body.rfind("{\"version\": ", 0) == 0);
  CHECK(j.body.find("\"tensor_bytes\": 12000") != std::string::npos);
  CHECK(j.body.find("\"id\": 0, \"device_kind\": \"cpu\"") != std::string::npos);
  CHECK(j.body.find("\"id\": 1, \"device_kind\": \"cpu\"") != std::string::npos);

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

TEST_CASE("with a users file the endpoint needs a token; a user sees their own sessions",
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
  CHECK(http_get(port, "/api/status", auth.tokens.at("bob")).body.find("\"user\": \"alice\"") ==
        std::string::npos);
  std::system(("rm -rf " + dir).c_str());
}
