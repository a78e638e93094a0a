// What a live recording (GET /api/trace) starts from: the workers and sessions that exist, named
// as their WORKER_JOIN and CONNECT lines named them, so gt-trace can label their tracks.
#include <fmt/format.h>

#include "dispatcherd/client_session.h"
#include "dispatcherd/dispatcher.h"

namespace gt::dispatcher {

void Dispatcher::describe_for_trace(InstructionLog::Tap& tap) const {
  for (const auto& [id, w] : pool_.all())
    log_->write_to(tap, "WORKER_INFO", fmt::format("WORKER:{}", id), "-", 0,
                   fmt::format("device={} name={}", w.info.device_kind(), w.info.device_name()));
  for (const auto& [id, s] : sessions_)
    log_->write_to(tap, "SESSION_INFO", fmt::format("CLIENT:{}", id), "-", 0,
                   fmt::format("name={} user={} via={} home=worker{}", s->name(), s->user().name,
                               s->conn()->transport, s->home_worker()));
}

}  // namespace gt::dispatcher
