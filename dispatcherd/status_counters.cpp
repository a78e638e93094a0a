// RateWindow and LatencyHistogram (status_counters.h).
#include "dispatcherd/status_counters.h"

#include <algorithm>

namespace gt::dispatcher {

void RateWindow::sample(uint64_t counter, std::chrono::steady_clock::time_point now) {
  if (primed_) {
    const double dt = std::chrono::duration<double>(now - last_at_).count();
    // A counter that went back (a worker that restarted) starts a new window, not a negative rate.
    rate_ = dt > 0 && counter >= last_ ? static_cast<double>(counter - last_) / dt : 0;
    ring_[next_] = static_cast<float>(rate_);
    next_ = (next_ + 1) % kHistory;
    filled_ = std::min(filled_ + 1, kHistory);
  }
  primed_ = true;
  last_ = counter;
  last_at_ = now;
}

void RateWindow::history(google::protobuf::RepeatedField<double>* out) const {
  out->Reserve(static_cast<int>(filled_));
  const size_t first = (next_ + kHistory - filled_) % kHistory;
  for (size_t i = 0; i < filled_; ++i) out->Add(ring_[(first + i) % kHistory]);
}

void LatencyHistogram::observe(double seconds) {
  if (!(seconds >= 0)) seconds = 0;  // NaN or a clock step: counted, as no time
  const size_t b = static_cast<size_t>(
      std::lower_bound(kBounds.begin(), kBounds.end(), seconds) - kBounds.begin());
  ++counts_[b];
  sum_ += seconds;
  ++count_;
}

void LatencyHistogram::add(const LatencyHistogram& other) {
  for (size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  sum_ += other.sum_;
  count_ += other.count_;
}

double LatencyHistogram::quantile(double q) const {
  if (count_ == 0) return 0;
  const double rank = q * static_cast<double>(count_);
  uint64_t below = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    if (counts_[i] == 0 || static_cast<double>(below + counts_[i]) < rank) {
      below += counts_[i];
      continue;
    }
    if (i == kBounds.size()) return kBounds.back();
    const double lo = i == 0 ? 0 : kBounds[i - 1], hi = kBounds[i];
    const double within = (rank - static_cast<double>(below)) / static_cast<double>(counts_[i]);
    return lo + (hi - lo) * std::clamp(within, 0.0, 1.0);
  }
  return kBounds.back();
}

void LatencyHistogram::fill(v1::LatencyHistogram* out) const {
  out->mutable_counts()->Reserve(static_cast<int>(kBuckets));
  for (uint64_t c : counts_) out->add_counts(c);
  out->set_sum_s(sum_);
  out->set_count(count_);
  out->set_p50_s(quantile(0.50));
  out->set_p99_s(quantile(0.99));
}

}  // namespace gt::dispatcher
