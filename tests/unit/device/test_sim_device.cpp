// The sim device keeps CUDA's semantics (workerd/device/device_api.h): stream order, independent
// streams, event captures, host functions, lagging completion, bounded launch queues, device
// memory, sticky errors, graph capture. Everything the device-generic worker code relies on is checked here.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "require_ok.h"
#include "workerd/sim/sim_device.h"

using namespace gt;
using namespace gt::worker;
using Clock = std::chrono::steady_clock;

namespace {
int64_t ms_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}
void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }
}  // namespace

TEST_CASE("sim device: completion lags issue, synchronize waits for the stream", "[sim]") {
  sim::SimDevice dev({.launch_us = 30000});
  auto s = dev.create_stream();
  GT_REQUIRE_OK(s.status());
  std::atomic<int> ran{0};
  const auto t0 = Clock::now();
  GT_REQUIRE_OK(dev.launch(*s, [&] { ran = 1; }));
  CHECK(ran == 0);  // enqueued, not run
  CHECK(ms_since(t0) < 20);
  GT_REQUIRE_OK(dev.synchronize_stream(*s));
  CHECK(ran == 1);
  CHECK(ms_since(t0) >= 29);
  dev.destroy_stream(*s);
}

TEST_CASE("sim device: a stream runs in order, streams run independently", "[sim]") {
  sim::SimDevice dev({.launch_us = 0});
  auto a = dev.create_stream(), b = dev.create_stream();
  GT_REQUIRE_OK(a.status());
  GT_REQUIRE_OK(b.status());
  std::vector<int> order;
  std::mutex mu;
  for (int i = 0; i < 50; ++i)
    GT_REQUIRE_OK(dev.launch(*a, [&, i] {
      std::lock_guard<std::mutex> lk(mu);
      order.push_back(i);
    }));
  // A backlog on a does not delay b.
  GT_REQUIRE_OK(dev.launch(*a, [] { sleep_ms(400); }));
  auto e = dev.create_event();
  GT_REQUIRE_OK(e.status());
  GT_REQUIRE_OK(dev.launch(*b, [] {}));
  GT_REQUIRE_OK(dev.record_event(*e, *b));
  const auto t0 = Clock::now();
  GT_REQUIRE_OK(dev.synchronize_event(*e));
  CHECK(ms_since(t0) < 300);
  GT_REQUIRE_OK(dev.synchronize_stream(*a));
  REQUIRE(order.size() == 50);
  for (int i = 0; i < 50; ++i) CHECK(order[i] == i);
  dev.destroy_event(*e);
  dev.destroy_stream(*a);
  dev.destroy_stream(*b);
}

TEST_CASE("sim device: stream_wait_event waits for the capture made at the call", "[sim]") {
  sim::SimDevice dev({.launch_us = 0});
  auto a = dev.create_stream(), b = dev.create_stream();
  auto e = dev.create_event();
  GT_REQUIRE_OK(e.status());
  std::atomic<int> x{0};
  std::atomic<int> seen{-1};
  GT_REQUIRE_OK(dev.launch(*a, [&] {
    sleep_ms(150);
    x = 1;
  }));
  GT_REQUIRE_OK(dev.record_event(*e, *a));
  CHECK_FALSE(*dev.event_done(*e));
  GT_REQUIRE_OK(dev.stream_wait_event(*b, *e));
  // Re-recording after the wait was issued captures later work; b still waits for x = 1 only.
  GT_REQUIRE_OK(dev.launch(*a, [&] {
    sleep_ms(1500);
    x = 2;
  }));
  GT_REQUIRE_OK(dev.record_event(*e, *a));
  GT_REQUIRE_OK(dev.launch(*b, [&] { seen = x.load(); }));
  const auto t0 = Clock::now();
  GT_REQUIRE_OK(dev.synchronize_stream(*b));
  CHECK(seen == 1);
  CHECK(ms_since(t0) < 1200);
  CHECK_FALSE(*dev.event_done(*e));
  GT_REQUIRE_OK(dev.synchronize_event(*e));
  CHECK(x == 2);
  // An event never recorded is complete.
  auto fresh = dev.create_event();
  CHECK(*dev.event_done(*fresh));
  dev.destroy_event(*fresh);
  dev.destroy_event(*e);
  dev.destroy_stream(*a);
  dev.destroy_stream(*b);
}

TEST_CASE("sim device: copies read and write host memory when the stream reaches them", "[sim]") {
  sim::SimDevice dev({.launch_us = 20000, .gbps = 1.0});
  auto s = dev.create_stream();
  auto p = dev.malloc(4096);
  GT_REQUIRE_OK(p.status());
  CHECK(dev.is_device_pointer(*p));
  CHECK_FALSE(dev.is_device_pointer(&dev));
  std::vector<unsigned char> src(4096, 7), dst(4096, 0);
  GT_REQUIRE_OK(dev.copy_to_device(*p, src.data(), src.size(), *s));
  GT_REQUIRE_OK(dev.copy_to_host(dst.data(), *p, dst.size(), *s));
  CHECK(dst[0] == 0);  // not yet
  GT_REQUIRE_OK(dev.synchronize_stream(*s));
  CHECK(dst[0] == 7);
  CHECK(dst[4095] == 7);
  // Host pointers are refused where device memory is expected.
  CHECK(dev.copy_to_host(dst.data(), src.data(), 16, *s).code() == Code::kInvalidArgument);
  CHECK(dev.copy_to_device(src.data(), dst.data(), 16, *s).code() == Code::kInvalidArgument);
  dev.free(*p);
  dev.destroy_stream(*s);
}

TEST_CASE("sim device: memory is a separate pool, uninitialized, with its own capacity", "[sim]") {
  sim::SimDevice dev({.memory_bytes = 1 << 20, .launch_us = 0});
  auto a = dev.malloc(600 << 10);
  GT_REQUIRE_OK(a.status());
  auto b = dev.malloc(600 << 10);
  CHECK(b.status().code() == Code::kResourceExhausted);
  CHECK(dev.bytes_in_use() >= (600u << 10));
  // New device memory is not zero (0xff bytes: NaN as floats).
  auto s = dev.create_stream();
  unsigned char first = 0;
  GT_REQUIRE_OK(dev.copy_to_host(&first, *a, 1, *s));
  GT_REQUIRE_OK(dev.synchronize_stream(*s));
  CHECK(first == 0xff);
  dev.free(*a);
  CHECK(dev.bytes_in_use() == 0);
  GT_REQUIRE_OK(dev.malloc(600 << 10).status());
  dev.destroy_stream(*s);
}

TEST_CASE("sim device: a full launch queue blocks the caller until the device drains", "[sim]") {
  sim::SimDevice dev({.launch_us = 0, .max_queued = 2});
  auto s = dev.create_stream();
  const auto t0 = Clock::now();
  for (int i = 0; i < 4; ++i) GT_REQUIRE_OK(dev.launch(*s, [] { sleep_ms(100); }));
  // Two fit; the 3rd and 4th waited for the first two to finish.
  CHECK(ms_since(t0) >= 150);
  GT_REQUIRE_OK(dev.synchronize_stream(*s));
  dev.destroy_stream(*s);
}

TEST_CASE("sim device: a sticky error fails every later call, host functions still run", "[sim]") {
  sim::SimDevice dev({.launch_us = 0});
  auto s = dev.create_stream();
  std::atomic<int> kernels{0}, callbacks{0};
  GT_REQUIRE_OK(dev.launch(*s, [&] {
    sleep_ms(100);
    ++kernels;
  }));
  GT_REQUIRE_OK(dev.launch(*s, [&] { ++kernels; }));
  GT_REQUIRE_OK(dev.launch_host_func(*s, [&] { ++callbacks; }));
  dev.inject_sticky_error("illegal address (test)");
  CHECK(dev.sticky_error().code() == Code::kInternal);
  CHECK(dev.launch(*s, [&] { ++kernels; }).code() == Code::kInternal);
  CHECK(dev.malloc(512).status().code() == Code::kInternal);
  CHECK(dev.synchronize_stream(*s).code() == Code::kInternal);
  // The completion callback already queued still ran (whoever waits on it hears of the loss).
  CHECK(callbacks == 1);
  CHECK(kernels <= 1);
  dev.destroy_stream(*s);
}

// ---- graph capture (device_api.h; CUDA graphs) ----

TEST_CASE("sim device: a captured graph runs nothing until launched, then all of it per launch "
          "after one launch latency", "[sim][graph]") {
  sim::SimDevice dev({.launch_us = 20000});
  auto s = dev.create_stream();
  GT_REQUIRE_OK(s.status());
  std::atomic<int> count{0};
  std::vector<int> order;
  GT_REQUIRE_OK(dev.begin_capture(*s));
  for (int i = 0; i < 10; ++i)
    GT_REQUIRE_OK(dev.launch(*s, [&, i] {
      ++count;
      order.push_back(i);
    }));
  GT_REQUIRE_OK(dev.launch_host_func(*s, [&] { order.push_back(100); }));
  auto g = dev.end_capture(*s, nullptr);
  GT_REQUIRE_OK(g.status());
  sleep_ms(60);
  CHECK(count == 0);  // recorded, not run
  const auto t0 = Clock::now();
  GT_REQUIRE_OK(dev.launch_graph(*g, *s));
  GT_REQUIRE_OK(dev.synchronize_stream(*s));
  CHECK(count == 10);
  // One launch latency for the graph, not one per kernel (10 x 20 ms eagerly).
  CHECK(ms_since(t0) >= 19);
  CHECK(ms_since(t0) < 150);
  REQUIRE(order.size() == 11);
  for (int i = 0; i < 10; ++i) CHECK(order[i] == i);
  CHECK(order[10] == 100);
  // A graph runs again at each launch.
  GT_REQUIRE_OK(dev.launch_graph(*g, *s));
  GT_REQUIRE_OK(dev.synchronize_stream(*s));
  CHECK(count == 20);
  CHECK(dev.graphs() == 1);
  dev.destroy_graph(*g);
  CHECK(dev.graphs() == 0);
  dev.destroy_stream(*s);
}

TEST_CASE("sim device: an update keeps the executable graph for the same topology only",
          "[sim][graph]") {
  sim::SimDevice dev({.launch_us = 0});
  auto s = dev.create_stream();
  auto p = dev.malloc(512);
  GT_REQUIRE_OK(p.status());
  std::atomic<int> sum{0};
  auto record = [&](int add, bool with_copy) -> Result<device::Graph> {
    GT_RETURN_IF_ERROR(dev.begin_capture(*s));
    GT_RETURN_IF_ERROR(dev.launch(*s, [&, add] { sum += add; }));
    if (with_copy) GT_RETURN_IF_ERROR(dev.copy_on_device(*p, *p, 16, *s));
    GT_RETURN_IF_ERROR(dev.launch(*s, [&, add] { sum += add; }));
    return dev.end_capture(*s, nullptr);
  };
  auto first = record(1, false);
  GT_REQUIRE_OK(first.status());
  // The same nodes with other arguments: updated in place (the same handle, the new work).
  GT_REQUIRE_OK(dev.begin_capture(*s));
  GT_REQUIRE_OK(dev.launch(*s, [&] { sum += 100; }));
  GT_REQUIRE_OK(dev.launch(*s, [&] { sum += 100; }));
  auto updated = dev.end_capture(*s, *first);
  GT_REQUIRE_OK(updated.status());
  CHECK(*updated == *first);
  GT_REQUIRE_OK(dev.launch_graph(*updated, *s));
  GT_REQUIRE_OK(dev.synchronize_stream(*s));
  CHECK(sum == 200);
  // Another topology (a copy between the kernels): a new executable graph, the old one gone.
  GT_REQUIRE_OK(dev.begin_capture(*s));
  GT_REQUIRE_OK(dev.launch(*s, [&] { sum += 1000; }));
  GT_REQUIRE_OK(dev.copy_on_device(*p, *p, 16, *s));
  GT_REQUIRE_OK(dev.launch(*s, [&] { sum += 1000; }));
  auto other = dev.end_capture(*s, *updated);
  GT_REQUIRE_OK(other.status());
  CHECK(*other != *updated);
  CHECK(dev.graphs() == 1);
  CHECK(dev.launch_graph(*updated, *s).code() == Code::kInvalidArgument);  // destroyed
  GT_REQUIRE_OK(dev.launch_graph(*other, *s));
  GT_REQUIRE_OK(dev.synchronize_stream(*s));
  CHECK(sum == 2200);
  // A launched graph destroyed before it ran still runs (its nodes go with the launch).
  sim::SimDevice slow({.launch_us = 50000});
  auto t = slow.create_stream();
  GT_REQUIRE_OK(slow.begin_capture(*t));
  GT_REQUIRE_OK(slow.launch(*t, [&] { sum += 5; }));
  auto g = slow.end_capture(*t, nullptr);
  GT_REQUIRE_OK(g.status());
  GT_REQUIRE_OK(slow.launch_graph(*g, *t));
  slow.destroy_graph(*g);
  GT_REQUIRE_OK(slow.synchronize_stream(*t));
  CHECK(sum == 2205);
  slow.destroy_stream(*t);
  dev.free(*p);
  dev.destroy_stream(*s);
}

TEST_CASE("sim device: waiting for or asking about a capturing stream invalidates the capture, "
          "nothing of it runs", "[sim][graph]") {
  sim::SimDevice dev({.launch_us = 0});
  auto s = dev.create_stream();
  auto e = dev.create_event();
  std::atomic<int> ran{0};
  using Call = std::function<Status()>;
  const std::vector<std::pair<const char*, Call>> calls = {
      {"synchronize_stream", [&] { return dev.synchronize_stream(*s); }},
      {"stream_idle", [&] { return dev.stream_idle(*s).status(); }},
      {"record_event", [&] { return dev.record_event(*e, *s); }},
  };
  for (const auto& [name, call] : calls) {
    INFO(name);
    GT_REQUIRE_OK(dev.begin_capture(*s));
    GT_REQUIRE_OK(dev.launch(*s, [&] { ++ran; }));
    CHECK(call().code() == Code::kFailedPrecondition);
    auto g = dev.end_capture(*s, nullptr);
    CHECK(g.status().code() == Code::kFailedPrecondition);
    CHECK(g.status().message().find(name) != std::string::npos);
    // The stream is an ordinary stream again; what was recorded never runs.
    GT_REQUIRE_OK(dev.launch(*s, [&] { ran += 10; }));
    GT_REQUIRE_OK(dev.synchronize_stream(*s));
    CHECK(ran == 10);
    ran = 0;
  }
  CHECK(dev.graphs() == 0);
  CHECK(dev.end_capture(*s, nullptr).status().code() == Code::kFailedPrecondition);  // none
  dev.destroy_event(*e);
  dev.destroy_stream(*s);
}

TEST_CASE("sim device: a wait recorded in a graph waits, when the graph runs, for the other "
          "stream's work", "[sim][graph]") {
  sim::SimDevice dev({.launch_us = 0});
  auto a = dev.create_stream(), b = dev.create_stream();
  auto e = dev.create_event();
  std::atomic<int> x{0}, seen{-1};
  GT_REQUIRE_OK(dev.launch(*b, [&] {
    sleep_ms(200);
    x = 1;
  }));
  GT_REQUIRE_OK(dev.record_event(*e, *b));  // b is not capturing: allowed
  GT_REQUIRE_OK(dev.begin_capture(*a));
  GT_REQUIRE_OK(dev.stream_wait_event(*a, *e));
  GT_REQUIRE_OK(dev.launch(*a, [&] { seen = x.load(); }));
  auto g = dev.end_capture(*a, nullptr);
  GT_REQUIRE_OK(g.status());
  GT_REQUIRE_OK(dev.launch_graph(*g, *a));
  GT_REQUIRE_OK(dev.synchronize_stream(*a));
  CHECK(seen == 1);
  dev.destroy_graph(*g);
  dev.destroy_event(*e);
  dev.destroy_stream(*a);
  dev.destroy_stream(*b);
}

TEST_CASE("sim device: fail_capture_every invalidates every Nth capture", "[sim][graph]") {
  sim::SimDevice dev({.launch_us = 0, .fail_capture_every = 2});
  auto s = dev.create_stream();
  std::vector<bool> ok;
  for (int i = 0; i < 4; ++i) {
    GT_REQUIRE_OK(dev.begin_capture(*s));
    GT_REQUIRE_OK(dev.launch(*s, [] {}));
    auto g = dev.end_capture(*s, nullptr);
    ok.push_back(g.is_ok());
    if (g.is_ok()) dev.destroy_graph(*g);
  }
  CHECK(ok == std::vector<bool>{true, false, true, false});
  dev.destroy_stream(*s);
}

TEST_CASE("sim device: launch_cpu_us and capture_cpu_us charge the calling thread",
          "[sim][graph]") {
  sim::SimDevice dev({.launch_us = 0, .launch_cpu_us = 2000, .capture_cpu_us = 1000});
  auto s = dev.create_stream();
  auto t0 = Clock::now();
  for (int i = 0; i < 10; ++i) GT_REQUIRE_OK(dev.launch(*s, [] {}));
  CHECK(ms_since(t0) >= 19);  // 10 launches x 2 ms, on this thread
  t0 = Clock::now();
  GT_REQUIRE_OK(dev.begin_capture(*s));
  for (int i = 0; i < 10; ++i) GT_REQUIRE_OK(dev.launch(*s, [] {}));
  auto g = dev.end_capture(*s, nullptr);
  GT_REQUIRE_OK(g.status());
  CHECK(ms_since(t0) >= 9);  // 10 nodes x 1 ms
  t0 = Clock::now();
  GT_REQUIRE_OK(dev.launch_graph(*g, *s));
  CHECK(ms_since(t0) >= 1);  // one launch
  GT_REQUIRE_OK(dev.synchronize_stream(*s));
  dev.destroy_graph(*g);
  dev.destroy_stream(*s);
}
