// The service's live status from inside a program (ARCHITECTURE §9): what the dispatcher's
// /api/status and gt-top show — workers, sessions, users — as one snapshot. A sync point (it
// waits for the dispatcher's answer, like gt::worker_stats). An admin sees every session; any
// other user sees only their own sessions, users and errors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gt {

struct ServiceStatus {
  struct Worker {
    uint32_t id = 0;
    std::string device_kind, device_name;
    uint64_t memory_capacity_bytes = 0, memory_used_bytes = 0, memory_reserved_bytes = 0;
    uint64_t tensors = 0, tensor_bytes = 0;  // held for the sessions you may see
    uint64_t ops_executed = 0, queue_depth = 0, instructions_in_flight = 0;
    uint64_t peer_bytes_sent = 0, peer_bytes_received = 0, errors = 0;
    double ops_per_s = 0, busy_fraction = 0;  // over the last second
  };
  struct Session {
    uint64_t id = 0;
    std::string user, program;
    uint64_t tensors = 0, tensor_bytes = 0, instructions = 0, instructions_queued = 0, errors = 0;
    double ops_per_s = 0, age_s = 0;
    uint64_t syncs = 0;                         // SYNC / FETCH answered
    double sync_p50_s = 0, sync_p99_s = 0;      // their latency in the dispatcher
  };
  struct User {
    std::string name;
    uint64_t sessions = 0, tensors = 0, tensor_bytes = 0, instructions = 0, errors = 0;
    double ops_per_s = 0;
  };
  std::string version;
  double uptime_s = 0;
  std::vector<Worker> workers;
  std::vector<Session> sessions;
  std::vector<User> users;
  // The whole report as /api/status prints it (every field, recent errors and histograms too).
  std::string json;
};

// The dispatcher's live status (a sync point).
ServiceStatus status();

}  // namespace gt
