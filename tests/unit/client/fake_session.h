// A fake gt::detail::Session for client API unit tests: records every emitted instruction and
// free, and answers fetch() from a map the test fills in. Linked only into test_client_api.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "libgtclient/session.h"

namespace gt::test {

struct Recorded {
  OpId op;
  OpAttrs attrs;     // attrs.data is cleared: see `data`
  std::string data;  // copy of the emitted attrs.data
  std::vector<uint64_t> inputs;
  uint64_t result = 0;  // 0 for in-place ops
};

class FakeSession : public detail::Session {
 public:
  uint64_t emit(OpId op, const OpAttrs& attrs, std::span<const uint64_t> inputs) override;
  void free(uint64_t id) override { frees.push_back(id); }
  detail::HostTensor fetch(uint64_t id) override;
  void synchronize() override { ++syncs; }
  std::vector<detail::WorkerStatsInfo> worker_stats() override { return stats; }
  std::string status_report() override { return {}; }
  uint64_t seed() const override { return seed_; }
  uint64_t next_rng_counter() override { return counter_++; }
  void manual_seed(uint64_t s) override {
    seed_ = s;
    counter_ = 0;
  }
  uint64_t session_id() const override { return 1; }

  // Clears the record (ids keep counting up so they stay unique).
  void reset();

  std::vector<Recorded> instrs;
  std::vector<uint64_t> frees;
  std::map<uint64_t, std::string> fetch_bytes;  // id -> bytes returned by fetch
  std::vector<detail::WorkerStatsInfo> stats;
  int syncs = 0;
  std::string connected_to;
  bool alive = true;

 private:
  uint64_t next_id_ = 1;
  uint64_t seed_ = 1234;
  uint64_t counter_ = 0;
};

FakeSession& fake();

}  // namespace gt::test
