// RateWindow and LatencyHistogram (dispatcherd/status_counters.h), against closed forms.
#include <catch2/catch.hpp>

#include <chrono>

#include "dispatcherd/status_counters.h"

using namespace gt::dispatcher;
using Clock = std::chrono::steady_clock;

TEST_CASE("a rate is the counter's increase over the window, with a history",
          "[dispatcher][status]") {
  RateWindow r;
  const Clock::time_point t0{};
  r.prime(100, t0);
  r.sample(600, t0 + std::chrono::milliseconds(500));  // 500 in 0.5 s
  CHECK(r.rate() == Approx(1000));
  r.sample(600, t0 + std::chrono::milliseconds(1500));
  CHECK(r.rate() == 0);
  r.sample(50, t0 + std::chrono::milliseconds(2500));  // went back (a restart): no negative rate
  CHECK(r.rate() == 0);
  r.sample(250, t0 + std::chrono::milliseconds(4500));
  CHECK(r.rate() == Approx(100));
  google::protobuf::RepeatedField<double> h;
  r.history(&h);
  REQUIRE(h.size() == 4);
  CHECK(h[0] == Approx(1000));
  CHECK(h[3] == Approx(100));
  // The history keeps the last minute, oldest first.
  for (int i = 0; i < 100; ++i) r.sample(250 + 10 * (i + 1), t0 + std::chrono::seconds(5 + i));
  h.Clear();
  r.history(&h);
  CHECK(h.size() == static_cast<int>(RateWindow::kHistory));
  CHECK(h[0] == Approx(10));
}

TEST_CASE("latency histogram: buckets, sum, count and quantiles", "[dispatcher][status]") {
  LatencyHistogram h;
  CHECK(h.quantile(0.5) == 0);
  for (int i = 0; i < 98; ++i) h.observe(0.0003);  // (250 us, 500 us]
  h.observe(0.02);                                  // (10 ms, 25 ms]
  h.observe(60);                                    // above the last bound
  gt::v1::LatencyHistogram out;
  h.fill(&out);
  REQUIRE(out.counts_size() == static_cast<int>(LatencyHistogram::kBuckets));
  CHECK(out.counts(3) == 98);
  CHECK(out.counts(8) == 1);
  CHECK(out.counts(LatencyHistogram::kBuckets - 1) == 1);
  CHECK(out.count() == 100);
  CHECK(out.sum_s() == Approx(98 * 0.0003 + 0.02 + 60));
  // The median lies in (250 us, 500 us]: linear within it, rank 50 of 98.
  CHECK(out.p50_s() == Approx(250e-6 + 250e-6 * 50.0 / 98));
  CHECK(out.p99_s() == Approx(0.025));  // rank 99: the top of the 10-25 ms bucket
  LatencyHistogram twice = h;
  twice.add(h);
  CHECK(twice.count() == 200);
  CHECK(twice.quantile(0.5) == Approx(h.quantile(0.5)));
}
