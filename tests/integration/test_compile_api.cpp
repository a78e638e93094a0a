// gt::compile (libgtclient/include/gt/compile.h, issue 11) against real daemons: a compiled
// function's instructions are a hot path at its first call (the session's hot_paths count in
// /api/status), later calls are hits, its results are the plain function's, and
// gt::compile(fn, false) is the plain function (nothing detected at first sight).
#include <catch2/catch.hpp>

#include <gt/gt.h>

#include <string>
#include <vector>

#include "daemons.h"
#include "http_client.h"

using namespace gt::testing;

namespace {

// The one session's hot-path counters, from the dispatcher's /api/status.
struct HotCounts {
  int paths = -1, hits = -1;
};

int json_uint(const std::string& body, const std::string& key) {
  const std::string k = "\"" + key + "\":\"";  // uint64 fields are JSON strings
  const size_t at = body.find(k);
  if (at == std::string::npos) return body.find("\"" + key + "\":0") != std::string::npos ? 0 : -1;
  return std::atoi(body.c_str() + at + k.size());
}

HotCounts counts(int port) {
  gt::synchronize();  // everything sent so far has reached the dispatcher
  const HttpReply r = http_get(port, "/api/status");
  REQUIRE(r.code == 200);
  INFO(r.body);
  const size_t sessions = r.body.find("\"sessions\":[");
  REQUIRE(sessions != std::string::npos);
  const std::string s = r.body.substr(sessions);
  return HotCounts{json_uint(s, "hot_paths"), json_uint(s, "hot_path_hits")};
}

std::vector<float> values(const gt::Tensor& t) { return t.to_vector<float>(); }

}  // namespace

TEST_CASE("gt::compile: a hot path at the first call, hits after, results unchanged",
          "[hot][client]") {
  const std::string dir = temp_dir(), port_file = dir + "/http.port";
  Daemons d(DaemonOptions{1, {"--http-port", "0", "--http-port-file", port_file}});
  const int port = read_port_file(port_file);
  gt::connect(d.address());
  const gt::Tensor x = gt::from_vector(std::vector<float>{-2, -1, 0, 1, 2, 3}, {2, 3});
  auto body = [](const gt::Tensor& t) { return ((t * 2.0 + 1.0).relu() * 3.0).sum(1); };
  const std::vector<float> want = values(body(x));  // eager, before anything is compiled
  CHECK(want == std::vector<float>{3, 45});  // rows of relu(2t + 1) * 3, summed
  const HotCounts before = counts(port);
  REQUIRE(before.paths == 0);

  auto step = gt::compile(body);
  CHECK(values(step(x)) == want);
  const HotCounts first = counts(port);
  CHECK(first.paths == 1);  // at first sight, not after two repetitions
  CHECK(first.hits == 0);
  CHECK(values(step(x)) == want);
  CHECK(values(step(x)) == want);
  const HotCounts later = counts(port);
  CHECK(later.paths == 1);
  CHECK(later.hits == 2);

  auto plain = gt::compile(body, false);
  CHECK_FALSE(plain.enabled());
  CHECK(plain.signal_name().empty());
  const gt::Tensor y = gt::from_vector(std::vector<float>{5, -5, 1, 1, 0, 0}, {3, 2});
  CHECK(values(plain(y)) == std::vector<float>{33, 18, 6});
  CHECK(counts(port).paths == 1);  // a first sight of a new stretch, not compiled
}
