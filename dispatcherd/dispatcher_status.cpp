// Dispatcher::status(): the live status snapshot (status.h), from what the dispatcher keeps
// anyway. O(workers + sessions + their tensors) per call: a scrape, not a per-op cost.
#include <chrono>

#include "dispatcherd/client_session.h"
#include "dispatcherd/dispatcher.h"
#include "libgtcore/version.h"

namespace gt::dispatcher {

DispatcherStatus Dispatcher::status(const std::string& only_user) const {
  using Seconds = std::chrono::duration<double>;
  const auto now = std::chrono::steady_clock::now();
  DispatcherStatus s;
  s.version = kVersion;
  s.uptime_s = Seconds(now - started_at_).count();
  s.sessions_started = sessions_started_;
  v1::DispatcherStats d;
  fill_dispatcher_stats(&d);
  s.bytes_from_clients = d.bytes_from_clients();
  s.bytes_to_clients = d.bytes_to_clients();
  s.bytes_from_workers = d.bytes_from_workers();
  s.bytes_to_workers = d.bytes_to_workers();

  std::map<uint32_t, WorkerStatus> workers;
  for (const auto& [wid, w] : pool_.all()) {
    WorkerStatus& ws = workers[wid];
    ws.id = wid;
    ws.device_kind = w.info.device_kind();
    ws.device_name = w.info.device_name();
    ws.memory_capacity_bytes = w.info.memory_bytes();
    ws.instructions_sent = w.sent_seq;
    ws.instructions_executed = w.acked_seq;
    ws.instructions_in_flight = w.inflight_count;
    ws.sessions_homed = w.sessions_homed;
    ws.heartbeat_age_s = Seconds(now - w.last_heard).count();
  }
  for (const auto& [sid, session] : sessions_) {
    const bool shown = only_user.empty() || session->user().name == only_user;
    SessionStatus ss;
    ss.id = sid;
    ss.user = session->user().name;
    ss.program = session->name();
    ss.instructions = session->instructions_received();
    ss.errors = session->errors_reported();
    for (const auto& [id, e] : session->tensors()) {
      if (!e.live()) continue;
      ++ss.tensors;
      ss.tensor_bytes += static_cast<uint64_t>(e.charged);
      for (size_t m = 0; m < e.placement.workers.size(); ++m) {
        auto it = workers.find(e.placement.workers[m]);
        if (it == workers.end() || !shown) continue;  // what others hold is not a non-admin's
        ++it->second.tensors;
        it->second.tensor_bytes +=
            static_cast<uint64_t>(e.placement.local_meta(e.meta, static_cast<int>(m)).nbytes());
      }
    }
    if (shown) s.sessions.push_back(std::move(ss));
  }
  for (auto& [wid, ws] : workers) s.workers.push_back(std::move(ws));
  if (!only_user.empty()) {  // a non-admin sees no one else's traffic either
    s.bytes_from_clients = s.bytes_to_clients = s.bytes_from_workers = s.bytes_to_workers = 0;
    s.sessions_started = 0;
  }
  return s;
}

}  // namespace gt::dispatcher
