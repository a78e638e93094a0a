// The dispatcher's live status (issue 12): what operators see in /metrics, /api/status and
// gt-top. A snapshot taken on the dispatcher's thread from what it already keeps (no per-op
// work): workers, sessions and their users, and the bytes through its sockets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gt::dispatcher {

struct WorkerStatus {
  uint32_t id = 0;
  std::string device_kind, device_name;
  uint64_t memory_capacity_bytes = 0;  // what the worker reported at registration
  uint64_t tensors = 0, tensor_bytes = 0;  // held for sessions (the dispatcher's bookkeeping)
  uint64_t instructions_sent = 0, instructions_executed = 0, instructions_in_flight = 0;
  uint64_t sessions_homed = 0;
  double heartbeat_age_s = 0;  // since the worker was last heard from
};

struct SessionStatus {
  uint64_t id = 0;
  std::string user, program;
  uint64_t tensors = 0, tensor_bytes = 0;
  uint64_t instructions = 0;  // received from the client
  uint64_t errors = 0;        // poisoned results and worker failures reported to it
};

struct DispatcherStatus {
  std::string version;
  double uptime_s = 0;
  uint64_t bytes_from_clients = 0, bytes_to_clients = 0;
  uint64_t bytes_from_workers = 0, bytes_to_workers = 0;
  uint64_t sessions_started = 0;
  std::vector<WorkerStatus> workers;
  std::vector<SessionStatus> sessions;
};

// Prometheus text exposition format (version 0.0.4): gt_* metrics with worker / session / user
// labels; counters end in _total.
std::string format_prometheus(const DispatcherStatus& s);
// The same as one JSON object (the /api/status body, read by gt-top and the dashboard).
std::string format_status_json(const DispatcherStatus& s);

}  // namespace gt::dispatcher
