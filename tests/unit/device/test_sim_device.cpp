// The sim device keeps CUDA's semantics (workerd/device/device_api.h): stream order, independent
// streams, event captures, host functions, lagging completion, bounded launch queues, device
// memory, sticky errors. Everything the device-generic worker code relies on is checked here.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
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
