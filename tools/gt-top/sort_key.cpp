#include "tools/gt-top/sort_key.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <tuple>

namespace gt::top {
namespace {

constexpr SortKey kAll[] = {SortKey::kOps, SortKey::kMem,  SortKey::kBusy, SortKey::kQueue,
                            SortKey::kErrors, SortKey::kId, SortKey::kUser};
constexpr const char* kNames[] = {"ops", "mem", "busy", "queue", "errors", "id", "user"};

// A sort value: the figure (largest first, so negated) or the text (ascending), then the id.
using Rank = std::tuple<double, std::string, uint64_t>;

template <typename Items, typename RankOf>
std::vector<int> order(const Items& items, RankOf rank_of) {
  std::vector<int> idx(static_cast<size_t>(items.size()));
  std::iota(idx.begin(), idx.end(), 0);
  std::vector<Rank> ranks;
  ranks.reserve(idx.size());
  for (const auto& x : items) ranks.push_back(rank_of(x));
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return ranks[a] < ranks[b]; });
  return idx;
}

Rank most(double v, uint64_t id) { return {-v, std::string(), id}; }
Rank text(const std::string& t, uint64_t id) { return {0, t, id}; }
double d(uint64_t v) { return static_cast<double>(v); }

}  // namespace

std::optional<SortKey> parse_sort_key(std::string_view name) {
  for (size_t i = 0; i < std::size(kAll); ++i)
    if (name == kNames[i]) return kAll[i];
  return std::nullopt;
}

const char* sort_key_name(SortKey key) { return kNames[static_cast<size_t>(key)]; }

const char* sort_key_names() { return "ops, mem, busy, queue, errors, id, user"; }

SortKey next_sort_key(SortKey key, int step) {
  const int n = static_cast<int>(std::size(kAll));
  return kAll[((static_cast<int>(key) + step) % n + n) % n];
}

std::vector<int> sorted_workers(const v1::StatusReport& s, SortKey key) {
  return order(s.workers(), [key](const v1::WorkerStatus& w) -> Rank {
    switch (key) {
      case SortKey::kOps: return most(w.ops_per_s(), w.id());
      case SortKey::kMem: return most(d(w.memory_used_bytes()), w.id());
      case SortKey::kBusy: return most(w.busy_fraction(), w.id());
      case SortKey::kQueue: return most(d(w.queue_depth() + w.instructions_in_flight()), w.id());
      case SortKey::kErrors: return most(d(w.errors()), w.id());
      case SortKey::kUser:
        return text(w.device_name().empty() ? w.device_kind() : w.device_name(), w.id());
      case SortKey::kId: break;
    }
    return text("", w.id());
  });
}

std::vector<int> sorted_sessions(const v1::StatusReport& s, SortKey key) {
  return order(s.sessions(), [key](const v1::SessionStatus& x) -> Rank {
    switch (key) {
      case SortKey::kOps: return most(x.ops_per_s(), x.id());
      case SortKey::kMem: return most(d(x.tensor_bytes()), x.id());
      case SortKey::kBusy: return most(x.sync_latency().p99_s(), x.id());
      case SortKey::kQueue: return most(d(x.instructions_queued()), x.id());
      case SortKey::kErrors: return most(d(x.errors()), x.id());
      case SortKey::kUser: return text(x.user(), x.id());
      case SortKey::kId: break;
    }
    return text("", x.id());
  });
}

std::vector<int> sorted_users(const v1::StatusReport& s, SortKey key) {
  return order(s.users(), [key](const v1::UserStatus& u) -> Rank {
    switch (key) {
      case SortKey::kOps: return {-u.ops_per_s(), u.name(), 0};
      case SortKey::kMem: return {-d(u.tensor_bytes()), u.name(), 0};
      case SortKey::kBusy: return {-u.sync_latency().p99_s(), u.name(), 0};
      case SortKey::kQueue: return {-d(u.instructions_queued()), u.name(), 0};
      case SortKey::kErrors: return {-d(u.errors()), u.name(), 0};
      case SortKey::kId:
      case SortKey::kUser: break;
    }
    return text(u.name(), 0);
  });
}

}  // namespace gt::top
