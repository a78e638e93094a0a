// gt::compile (libgtclient/include/gt/compile.h, issue 11) against real daemons: a compiled
// function's instructions are a hot path at its first call (the session's hot_paths count in
// /api/status), later calls are hits, its results are the plain function's, and
// gt::compile(fn, false) is the plain function (nothing detected at first sight); a compiled
// training step's loss is fetched before the worker has run the step's backward pass.
#include <catch2/catch.hpp>

#include <gt/gt.h>

#include <chrono>
#include <string>
#include <thread>
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

// The one session's entry in the dispatcher's /api/status (no sync: what the client has sent
// so far).
std::string session_status(int port) {
  const HttpReply r = http_get(port, "/api/status");
  REQUIRE(r.code == 200);
  INFO(r.body);
  const size_t sessions = r.body.find("\"sessions\":[");
  REQUIRE(sessions != std::string::npos);
  return r.body.substr(sessions);
}

int session_figure(int port, const std::string& key) { return json_uint(session_status(port), key); }

HotCounts counts(int port) {
  gt::synchronize();  // everything sent so far has reached the dispatcher
  const std::string s = session_status(port);
  return HotCounts{json_uint(s, "hot_paths"), json_uint(s, "hot_path_hits")};
}

std::vector<float> values(const gt::Tensor& t) { return t.to_vector<float>(); }

// Daemons (one CPU worker, `dispatcher_args` added) with their HTTP port, this process's session
// connected to them (one session per process: each case runs in its own), and the cases' input.
struct Rig {
  explicit Rig(std::vector<std::string> dispatcher_args = {},
               std::vector<std::string> worker_args = {})
      : port_file(temp_dir() + "/http.port"),
        d(options(port_file, std::move(dispatcher_args), std::move(worker_args))) {
    port = read_port_file(port_file);
    gt::connect(d.address());
    x = gt::from_vector(std::vector<float>{-2, -1, 0, 1, 2, 3}, {2, 3});  // (once connected)
  }
  static DaemonOptions options(const std::string& port_file, std::vector<std::string> args,
                               std::vector<std::string> worker_args) {
    args.insert(args.begin(), {"--http-port", "0", "--http-port-file", port_file});
    return DaemonOptions{1, std::move(args), std::move(worker_args)};
  }
  std::string port_file;
  Daemons d;
  int port = 0;
  gt::Tensor x;
};

}  // namespace

TEST_CASE("gt::compile: a hot path at the first call, hits after, results unchanged",
          "[hot][client]") {
  Rig rig;
  const int port = rig.port;
  const gt::Tensor& x = rig.x;
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

namespace {

// The one session's hot-path replays so far (the dispatcher's /api/status; no sync: what the
// client has sent may still be on its way), once it reaches `want` or after `wait_ms`.
int replays_when(int port, int want, int wait_ms) {
  int got = -1;
  for (int waited = 0; waited <= wait_ms; waited += 10) {
    got = session_figure(port, "hot_path_replays");
    if (got >= want) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return got;
}

// The dispatcher cuts stretches after 2 instructions, then 4 more, ... (`segment` 2): a compiled
// function of 5 instructions is two hot paths, and the client sends the first as soon as it is
// whole (when the third instruction comes, not at the function's end), so it is replayed while
// the function is still being built.
// With no segments (`segment` 0) nothing goes before the function's end. (One session per
// process: each case runs in its own.)
void check_segments(int segment) {
  Rig rig({"--hot-path-segment", std::to_string(segment)});
  const int port = rig.port;
  const gt::Tensor& x = rig.x;
  int replays_before = 0, replays_inside = -1;
  bool watch = false;
  auto body = [&](const gt::Tensor& t) {
    const gt::Tensor a = t * 2.0 + 1.0;  // the first segment: 2 instructions
    const gt::Tensor r = a.relu();        // the third: the first segment goes
    if (watch) replays_inside = replays_when(port, replays_before + 1, segment ? 5000 : 300);
    return (r * 3.0).sum(1);
  };
  const std::vector<float> want = values(body(x));  // eager
  auto step = gt::compile(body);
  watch = true;
  // (These cases failed once under a full `ctest -j2`, a replay not counted within 5 s: a
  // failure shows the session's counters, which say whether the stretch ran eagerly.)
  auto check_replays = [&](int got, int want, const char* what) {
    if (got != want) UNSCOPED_INFO(what << "; the session in /api/status: " << session_status(port));
    CHECK(got == want);
  };
  for (int call = 0; call < 3; ++call) {
    gt::synchronize();
    replays_before = replays_when(port, 0, 0);
    const std::vector<float> got = values(step(x));
    CHECK(got == want);
    if (segment) {
      check_replays(replays_inside, replays_before + 1, "the first segment, alone");
      check_replays(replays_when(port, replays_before + 2, 5000), replays_before + 2, "the rest");
    } else {
      check_replays(replays_inside, replays_before, "nothing replayed before the function's end");
      check_replays(replays_when(port, replays_before + 1, 5000), replays_before + 1, "one path");
    }
  }
}

}  // namespace

TEST_CASE("gt::compile with hot_path_segment: the first segment runs while the rest is built",
          "[hot][client]") {
  check_segments(2);
}

TEST_CASE("gt::compile without segments: nothing runs before the function's end",
          "[hot][client]") {
  check_segments(0);
}

TEST_CASE("gt::compile whose uploads fill the client's queue sends it in parts instead of hanging",
          "[hot][client]") {
  // Over TCP (no shared memory) uploads under 1 MiB travel queued, and the queue holds at most
  // 16 MiB of them: a compiled scope that held its queue past that waited for a flush it
  // blocked (the client hung in its upload). 24 MiB of uploads in one call, twice.
  Daemons d(DaemonOptions{1});
  gt::connect(d.address());
  constexpr int kUploads = 30;
  constexpr int64_t kElems = 200000;  // 0.8 MB each
  std::vector<std::vector<float>> host;
  for (int i = 0; i < kUploads; ++i) host.emplace_back(kElems, static_cast<float>(i));
  auto body = [&] {
    gt::Tensor total = gt::zeros({});
    for (const auto& h : host) total = total + gt::from_vector(h, {kElems}).sum();
    return total;
  };
  auto step = gt::compile(body);
  const float want = static_cast<float>(kElems) * (kUploads * (kUploads - 1) / 2);  // sum of i
  for (int call = 0; call < 2; ++call) CHECK(step().item<float>() == want);
}

TEST_CASE("a plain loop whose step is replayed is sent a step at a time, and held 2 ms at most",
          "[hot][client]") {
  // Once the dispatcher says it held a step to its end and replayed it (Reply.hot_stretch),
  // the client holds the next one too and sends it whole: a step built slowly (as from Python)
  // is one frame, not a frame per flush. Results stay the eager loop's.
  Rig rig;
  const int port = rig.port;
  const gt::Tensor& x = rig.x;
  auto slow = [] { std::this_thread::sleep_for(std::chrono::microseconds(300)); };
  auto step = [&] {
    gt::Tensor a = x * 2.0 + 1.0;
    slow();
    gt::Tensor r = a.relu();
    slow();
    gt::Tensor s = (r * 3.0).sum(1);
    slow();
    return (s - 1.0).sum();
  };
  const float want = step().item<float>();  // rows 3 + 45, less 1 each
  CHECK(want == 46.0f);
  for (int i = 0; i < 4; ++i) CHECK(step().item<float>() == want);  // detected, replayed
  const int frames_before = session_figure(port, "frames");
  constexpr int kSteps = 10;
  for (int i = 0; i < kSteps; ++i) CHECK(step().item<float>() == want);
  const int frames = session_figure(port, "frames") - frames_before;
  INFO(frames << " frames for " << kSteps << " steps");
  CHECK(frames <= 3 * kSteps);  // the step whole, its fetch, at times its frees (as it comes: >= 4 a step)

  // A stretch that stops short of a whole step, with no sync after it, still goes: the client
  // holds it at most kAutoHoldMax (2 ms) after its flusher sees it.
  const int received = session_figure(port, "instructions");
  gt::Tensor partial = x * 2.0 + 1.0;
  int now = received;
  for (int waited = 0; waited < 2000 && now == received; waited += 5) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    now = session_figure(port, "instructions");
  }
  CHECK(now > received);
  CHECK(partial.sum().item<float>() == 12.0f);  // 2x + 1 over -2 .. 3
}

namespace {

// The worker's figure `key` in the dispatcher's /api/status once it reaches `want` (workers
// report with their heartbeats) or after 5 s.
int worker_figure_when(int port, const std::string& key, int want) {
  int got = -1;
  for (int waited = 0; waited <= 5000; waited += 20) {
    const HttpReply r = http_get(port, "/api/status");
    REQUIRE(r.code == 200);
    const size_t workers = r.body.find("\"workers\":[");
    REQUIRE(workers != std::string::npos);
    got = json_uint(r.body.substr(workers), key);
    if (got >= want) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return got;
}

// Losses of `steps` SGD steps of a small MLP on fixed data, each step's loss fetched at its
// end (loss.item()): in a `compile: false` scope (eager), as a plain loop (replayed from its
// third step) or under gt::compile.
enum class Mode { kEager, kLoop, kCompiled };
std::vector<float> train(Mode mode, int steps) {
  gt::manual_seed(3);
  gt::nn::Sequential model(gt::nn::Linear(6, 8), gt::nn::ReLU(), gt::nn::Linear(8, 3));
  const gt::Tensor x = gt::randn({5, 6});
  const gt::Tensor y = gt::from_vector(std::vector<int64_t>{0, 2, 1, 1, 0}, {5}, gt::kInt64);
  gt::optim::SGD opt(model->parameters(), 0.1);
  auto body = [&] {
    opt.zero_grad();
    gt::Tensor loss = gt::nn::functional::cross_entropy(model(x), y);
    loss.backward();
    opt.step();
    return loss;
  };
  gt::SignalConfig eager;
  eager.compile = false;
  gt::register_config("test.eager", eager);
  auto compiled = gt::compile(body);
  std::vector<float> losses;
  for (int i = 0; i < steps; ++i) {
    gt::Tensor loss;
    if (mode == Mode::kCompiled) {
      loss = compiled();
    } else if (mode == Mode::kLoop) {
      loss = body();
    } else {
      gt::signal::Scope scope("test.eager");
      loss = body();
    }
    losses.push_back(loss.item<float>());
  }
  return losses;
}

void check_early_fetches(bool on) {
  Rig rig({}, on ? std::vector<std::string>{} : std::vector<std::string>{"--early-fetches=false"});
  constexpr int kSteps = 8;
  const std::vector<float> eager = train(Mode::kEager, kSteps);
  CHECK(train(Mode::kLoop, kSteps) == eager);  // bitwise, step by step
  CHECK(train(Mode::kCompiled, kSteps) == eager);
  CHECK(eager.back() < eager.front());  // (it trains)
  // A replayed step's loss (made by its forward pass) is answered while the worker still runs
  // its backward pass and update -- or, with the option off, after them. (A plain loop's fetch
  // goes with its step, replayed from the third; a compiled step's follows it in a frame of its
  // own, answered early when it reaches the worker before the run ends: not for sure here,
  // where a step runs for microseconds. test_executor_early_fetch covers it.)
  const int hits = worker_figure_when(rig.port, "hot_path_hits", 2 * kSteps - 2);
  CHECK(hits >= 2 * kSteps - 2);
  const int early = worker_figure_when(rig.port, "early_fetches", on ? kSteps / 2 : 0);
  if (on) CHECK(early >= kSteps / 2);
  else CHECK(early == 0);
}

}  // namespace

TEST_CASE("gt::compile: a training step's loss is answered before its backward pass has run, "
          "the losses unchanged", "[hot][client][early]") {
  check_early_fetches(true);
}

TEST_CASE("gt::compile with early_fetches off: losses unchanged, no fetch answered early",
          "[hot][client][early]") {
  check_early_fetches(false);
}
