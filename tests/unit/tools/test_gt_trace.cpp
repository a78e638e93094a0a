// gt-trace's converter on a log written by hand, so every expected number is known: tracks and
// their names, slices placed on one clock per worker (the least ack offset of the whole log),
// request and peer flows, lines that are not log lines skipped, and an older log without the
// worker's own clock.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <sstream>
#include <string>

#include "trace_json.h"
#include "tools/gt-trace/trace_builder.h"

using namespace gt::testing;

namespace {

std::string line(double t, int seq, const char* event, const std::string& source,
                 const char* command, const char* size, const std::string& details) {
  return fmt::format("{:14.6f}s | #{:06d} | {:<14} | {:<27} | {:<14} | {:>9} | {}\n", t, seq, event,
                     source, command, size, details);
}

const std::string kClient = "CLIENT:18446744073709551615";
// Worker clocks (ns) run far from the log's: log time = worker time + offset (+ the ack's transit).
constexpr int64_t kOff0 = -5'000'000'000, kOff1 = 7'000'000'000;

std::string exec(double t, int seq, int worker, int64_t off, int64_t transit, int64_t w0, int64_t w1,
                 const std::string& extra) {
  return line(t, seq, "EXEC", fmt::format("WORKER:{}", worker), "add", "0B",
              fmt::format("session=18446744073709551615 batch=0 instrs=0-3 start=0 end=0 "
                          "queued_us=1.0{} wstart={} wend={} ack_offset={}",
                          extra, w0, w1, off + transit));
}

std::string peer(double t, int seq, int worker, const char* comm, const char* peers, int tag,
                 int64_t off, int64_t w0, int64_t w1) {
  return line(t, seq, "PEER", fmt::format("WORKER:{}", worker), comm, "40.0KB",
              fmt::format("session=18446744073709551615 tag={} peers={} start=0 end=0 wstart={} "
                          "wend={} ack_offset={}",
                          tag, peers, w0, w1, off + 3000));
}

}  // namespace

TEST_CASE("gt-trace: tracks, slices on each worker's clock, request and peer flows", "[trace]") {
  // Log times (s): request at 1.000000; worker 0 runs 1.000050-1.000080 and 1.000100-1.000120
  // (log ns 1'000'050'000 ...), worker 1 runs 1.000060-1.000090; the reply at 1.000200. Each
  // is placed 3 µs later: the least transit of the workers' acks.
  const int64_t a0 = 1'000'050'000 - kOff0, a1 = 1'000'080'000 - kOff0;  // worker 0's clock
  const int64_t b0 = 1'000'100'000 - kOff0, b1 = 1'000'120'000 - kOff0;
  const int64_t c0 = 1'000'060'000 - kOff1, c1 = 1'000'090'000 - kOff1;  // worker 1's clock
  std::string log;
  log += line(0.5, 1, "WORKER_JOIN", "WORKER:0", "Hello", "0B", "device=cpu name=CPU (2 cores)");
  log += line(0.5, 2, "WORKER_JOIN", "WORKER:1", "Hello", "0B", "device=cuda name=GPU 1");
  log += "# a comment line\n";
  log += line(0.9, 3, "CONNECT", kClient, "Hello", "0B", "name=my prog user=alice via=tcp home=worker0");
  log += line(0.999990, 4, "RECV", kClient, "ones", "64B", "id=1 shape=[4, 4] dtype=float32 -> worker0");
  log += line(0.999994, 5, "RECV", kClient, "add", "64B", "id=2 shape=[4, 4] dtype=float32 -> worker0");
  log += line(1.0, 6, "REQUEST", kClient, "SYNC", "0B", "request=7 id=0 workers=0:11,1:12");
  // Acks: the first one's transit was 40 µs, the others' 3 µs: the least one places them all.
  log += exec(1.0001, 7, 0, kOff0, 40'000, a0, a1, "");
  log += exec(1.0002, 8, 1, kOff1, 3'000, c0, c1, " requests=12");
  log += exec(1.0002, 9, 0, kOff0, 3'000, b0, b1, " requests=11");
  log += peer(1.0002, 10, 0, "send", "1", 5, kOff0, b0 + 1000, b0 + 5000);
  log += peer(1.0002, 11, 1, "recv", "0", 5, kOff1, c0 + 38000, c0 + 43000);
  log += peer(1.0002, 12, 0, "all_gather", "0,1", 6, kOff0, b0 + 6000, b0 + 9000);
  log += peer(1.0002, 13, 1, "all_gather", "0,1", 6, kOff1, c0 + 45000, c0 + 51000);
  log += line(1.0002, 14, "REPLY", kClient, "SYNC", "0B", "request=7 errors=0");
  log += "    1.000300s | #000015 | RECV   | CLIENT:1";  // cut off mid-line
  std::istringstream in(log);
  gt::trace::TraceSummary sum;
  const ParsedTrace t = parse_trace(gt::trace::convert_log(in, &sum));
  CHECK(sum.lines == 14);
  CHECK(sum.skipped == 2);
  CHECK(sum.workers == 2);
  CHECK(sum.sessions == 1);

  const int64_t w0 = t.pid_named("worker 0 (cpu)"), w1 = t.pid_named("worker 1 (cuda)");
  const int64_t s = t.pid_named("session 18446744073709551615 alice/my prog");
  REQUIRE(w0 > 0);
  REQUIRE(w1 > 0);
  REQUIRE(s > 0);
  CHECK(t.thread_names.at({w0, 1}) == "executor");
  CHECK(t.thread_names.at({w0, 2}) == "peer exchange");
  CHECK(t.thread_names.at({s, 1}) == "instructions");
  CHECK(t.thread_names.at({s, 2}) == "requests");
  check_trace_rules(t, {{w0, 1}, {w1, 1}});

  // Time 0 is the first event: the session's CONNECT mark at 0.9 s.
  auto e0 = t.slices(w0, 1), e1 = t.slices(w1, 1);
  REQUIRE(e0.size() == 2);
  REQUIRE(e1.size() == 1);
  // Placed at the least offset: worker 0's ack transit (3 µs) is the only error.
  CHECK(e0[0]->ts == Approx(100'053.0).epsilon(0).margin(1e-3));
  CHECK(e0[0]->dur == Approx(30.0).epsilon(0).margin(1e-3));
  CHECK(e0[1]->ts == Approx(100'103.0).epsilon(0).margin(1e-3));
  CHECK(e1[0]->ts == Approx(100'063.0).epsilon(0).margin(1e-3));
  CHECK(e0[0]->name == "add +2");
  // Received instructions: until the next one (4 µs), the last one 10 µs.
  auto recv = t.slices(s, 1);
  REQUIRE(recv.size() == 2);
  CHECK(recv[0]->ts == Approx(99'990.0).epsilon(0).margin(1e-3));
  CHECK(recv[0]->dur == Approx(4.0).epsilon(0).margin(1e-3));
  CHECK(recv[1]->dur == Approx(10.0).epsilon(0).margin(1e-3));
  auto req = t.slices(s, 2);
  REQUIRE(req.size() == 1);
  CHECK(req[0]->name == "SYNC");
  CHECK(req[0]->ts == Approx(100'000.0).epsilon(0).margin(1e-3));
  CHECK(req[0]->dur == Approx(200.0).epsilon(0).margin(1e-3));

  // Flows: to each worker and back (4), send -> recv (1), the all_gather both ways (2).
  std::map<std::string, int> by_cat;
  for (const TraceEvent* f : t.of("s")) by_cat[f->cat]++;
  CHECK(by_cat["request"] == 2);
  CHECK(by_cat["reply"] == 2);
  CHECK(by_cat["peer"] == 3);
  for (const TraceEvent* f : t.of("f")) {
    if (f->cat != "request") continue;
    // Each request flow ends in the turn that answered it, on that worker's executor.
    const TraceEvent* turn = slice_at(t, f->pid, 1, f->ts);
    REQUIRE(turn != nullptr);
    CHECK(turn->arg("requests") == (f->pid == w0 ? "11" : "12"));
  }
  auto peers = t.slices(w0, 2);
  REQUIRE(peers.size() == 2);
  CHECK(peers[0]->name == "send 40.0KB");
  CHECK(peers[0]->ts == Approx(100'104.0).epsilon(0).margin(1e-3));
}

TEST_CASE("gt-trace: a log without the workers' clocks uses the dispatcher's placement",
          "[trace]") {
  std::string log;
  log += line(1.0, 1, "EXEC", "WORKER:3", "matmul", "0B",
              "session=5 batch=9 instrs=0-1 start=1.000010 end=1.000030 queued_us=2.0");
  log += line(1.0, 2, "EXEC", "WORKER:3", "add", "0B",
              "session=5 batch=10 instrs=0-1 start=1.000040 end=1.000045 queued_us=2.0");
  std::istringstream in(log);
  const ParsedTrace t = parse_trace(gt::trace::convert_log(in));
  const int64_t w = t.pid_named("worker 3");
  REQUIRE(w > 0);
  CHECK(t.pid_named("session 5") > 0);
  check_trace_rules(t, {{w, 1}});
  auto e = t.slices(w, 1);
  REQUIRE(e.size() == 2);
  CHECK(e[0]->ts == Approx(0.0).epsilon(0).margin(1e-3));
  CHECK(e[0]->dur == Approx(20.0).epsilon(0).margin(1e-3));
  CHECK(e[1]->ts == Approx(30.0).epsilon(0).margin(1e-3));
}
