// The small live figures behind the status page (ARCHITECTURE §9): a rate over the last sampling
// window with a short history (sparklines), and a fixed-bucket latency histogram. Both are plain
// values updated in place: no allocation per operation, so the instruction path stays as fast.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <span>

#include "proto/status.pb.h"

namespace gt::dispatcher {

// A counter turned into a rate by sampling it (the dispatcher's 1 Hz status tick).
class RateWindow {
 public:
  static constexpr size_t kHistory = 60;  // one minute of 1 Hz samples

  // A counter that starts at zero now (a new session's).
  static RateWindow from_zero() {
    RateWindow r;
    r.prime(0, std::chrono::steady_clock::now());
    return r;
  }
  // The counter's value when counting starts: the first window's rate is measured from here.
  void prime(uint64_t counter, std::chrono::steady_clock::time_point now) {
    primed_ = true;
    last_ = counter;
    last_at_ = now;
  }
  // `counter` is the counter's value at `now`; the rate is over the time since the last sample.
  void sample(uint64_t counter, std::chrono::steady_clock::time_point now);
  double rate() const { return rate_; }
  // Oldest first, only the samples taken so far.
  void history(google::protobuf::RepeatedField<double>* out) const;

 private:
  bool primed_ = false;
  uint64_t last_ = 0;
  std::chrono::steady_clock::time_point last_at_{};
  double rate_ = 0;
  std::array<float, kHistory> ring_{};
  size_t next_ = 0, filled_ = 0;
};

// Latencies in fixed buckets (the Prometheus histogram's `le` bounds).
class LatencyHistogram {
 public:
  // Upper bounds in seconds, 50 µs .. 10 s; one more bucket counts what is above the last.
  static constexpr std::array<double, 17> kBounds = {
      50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3,
      50e-3, 100e-3, 250e-3, 500e-3, 1.0,  2.5,    5.0,  10.0};
  static constexpr size_t kBuckets = kBounds.size() + 1;

  void observe(double seconds);
  void add(const LatencyHistogram& other);
  // Buckets, sum, count and p50 / p99 estimates into `out`.
  void fill(v1::LatencyHistogram* out) const;
  uint64_t count() const { return count_; }
  // The q-quantile (0 < q < 1), linear within its bucket; 0 when empty. Above the last bound
  // it answers the last bound (the histogram cannot say more).
  double quantile(double q) const;

 private:
  std::array<uint64_t, kBuckets> counts_{};
  double sum_ = 0;
  uint64_t count_ = 0;
};

}  // namespace gt::dispatcher
