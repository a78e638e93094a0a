// Dispatcher::status(): the live status snapshot (proto/status.proto), from what the dispatcher
// keeps anyway, and the 1 Hz tick that turns counters into rates. O(workers + sessions + their
// tensors) per call: a scrape's cost, not a per-op one.
#include <chrono>

#include "dispatcherd/client_session.h"
#include "dispatcherd/dispatcher.h"
#include "libgtcore/version.h"

namespace gt::dispatcher {
namespace {

constexpr size_t kRecentErrors = 20;
constexpr auto kStatusInterval = std::chrono::seconds(1);

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// At most `n` bytes of `s` as valid UTF-8: a cut sequence or any invalid byte becomes '?'
// (protobuf's JSON printer refuses invalid UTF-8, and the whole report would be lost).
std::string utf8_prefix(const std::string& s, size_t n) {
  std::string out;
  size_t i = 0;
  while (i < s.size() && out.size() < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size() && out.size() + len <= n;
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}

}  // namespace

void Dispatcher::status_tick() {
  const auto now = std::chrono::steady_clock::now();
  for (auto& [wid, w] : pool_.all()) {
    w.ops_rate.sample(w.load.ops_executed(), now);
    w.busy_rate.sample(w.load.busy_ns(), now);
  }
  for (auto& [sid, session] : sessions_) session->sample_rates(now);
  for (auto& [name, u] : usage_) u.instruction_rate.sample(u.instructions, now);
  status_timer_->expires_after(kStatusInterval);
  status_timer_->async_wait([this](boost::system::error_code ec) {
    if (!ec) status_tick();
  });
}

void Dispatcher::note_error(const ClientSession& s, const std::string& op,
                            const std::string& message) {
  if (recent_errors_.size() == kRecentErrors) recent_errors_.pop_front();
  v1::RecentError& e = recent_errors_.emplace_back();
  e.set_unix_time_s(unix_now());
  e.set_session(s.id());
  e.set_user(s.user().name);
  e.set_op(utf8_prefix(op, 100));
  e.set_message(utf8_prefix(message, 500));  // the page shows a line, not a dump
}

void Dispatcher::fill_status(const ClientSession& s, v1::StatusReport* r) const {
  *r = status(s.admin() ? "" : s.user().name);
}

v1::StatusReport Dispatcher::status(const std::string& only_user) const {
  using Seconds = std::chrono::duration<double>;
  const auto now = std::chrono::steady_clock::now();
  v1::StatusReport s;
  s.set_version(kVersion);
  s.set_uptime_s(Seconds(now - started_at_).count());
  s.set_unix_time_s(unix_now());
  for (double b : LatencyHistogram::kBounds) s.add_latency_bounds_s(b);
  if (only_user.empty()) {  // a non-admin sees no one else's traffic
    s.set_sessions_started(sessions_started_);
    v1::DispatcherStats d;
    fill_dispatcher_stats(&d);
    s.set_bytes_from_clients(d.bytes_from_clients());
    s.set_bytes_to_clients(d.bytes_to_clients());
    s.set_bytes_from_workers(d.bytes_from_workers());
    s.set_bytes_to_workers(d.bytes_to_workers());
    s.set_upload_bytes_unparsed(upload_bytes_unparsed_);
  }

  std::map<uint32_t, v1::WorkerStatus*> workers;
  for (const auto& [wid, w] : pool_.all()) {
    v1::WorkerStatus* ws = s.add_workers();
    workers[wid] = ws;
    ws->set_id(wid);
    ws->set_device_kind(w.info.device_kind());
    ws->set_device_name(w.info.device_name());
    ws->set_memory_capacity_bytes(w.info.memory_bytes());
    ws->set_memory_used_bytes(w.load.allocated_bytes());
    ws->set_memory_reserved_bytes(w.load.reserved_bytes());
    ws->set_instructions_sent(w.sent_seq);
    ws->set_instructions_executed(w.acked_seq);
    ws->set_instructions_in_flight(w.inflight_count);
    ws->set_sessions_homed(w.sessions_homed);
    ws->set_heartbeat_age_s(Seconds(now - w.last_heard).count());
    ws->set_ops_executed(w.load.ops_executed());
    ws->set_busy_s(static_cast<double>(w.load.busy_ns()) * 1e-9);
    ws->set_ops_per_s(w.ops_rate.rate());
    ws->set_busy_fraction(std::min(1.0, w.busy_rate.rate() * 1e-9));
    ws->set_queue_depth(w.load.queue_depth());
    ws->set_peer_bytes_sent(w.load.peer_bytes_sent());
    ws->set_peer_bytes_received(w.load.peer_bytes_received());
    ws->set_errors(w.load.errors());
    ws->set_hot_path_hits(w.load.hot_path_hits());
    ws->set_hot_paths(w.load.hot_paths());
    ws->set_fused_ops(w.load.fused_ops());
    ws->set_graph_launches(w.load.graph_launches());
    ws->set_graph_instantiations(w.load.graph_instantiations());
    ws->set_graph_fallbacks(w.load.graph_fallbacks());
    ws->set_fused_kernels_compiled(w.load.fused_kernels_compiled());
    ws->set_fused_kernels_from_disk(w.load.fused_kernels_from_disk());
    ws->set_fused_kernels_failed(w.load.fused_kernels_failed());
    ws->set_early_fetches(w.load.early_fetches());
    w.ops_rate.history(ws->mutable_ops_per_s_history());
  }
  for (const auto& [sid, session] : sessions_) {
    const bool shown = only_user.empty() || session->user().name == only_user;
    if (!shown) continue;  // nor what others hold, per worker
    v1::SessionStatus* ss = s.add_sessions();
    ss->set_id(sid);
    ss->set_user(session->user().name);
    ss->set_program(session->name());
    ss->set_instructions(session->instructions_received());
    ss->set_errors(session->errors_reported());
    ss->set_ops_per_s(session->instruction_rate().rate());
    session->instruction_rate().history(ss->mutable_ops_per_s_history());
    ss->set_instructions_queued(session->instructions_outstanding());
    ss->set_age_s(Seconds(now - session->started_at()).count());
    const HotPathDetector::Stats& hot = session->hot_path_stats();
    ss->set_hot_paths(hot.defined);
    ss->set_hot_path_hits(hot.hits);
    ss->set_hot_path_misses(hot.misses);
    ss->set_hot_path_replays(session->hot_path_replays());
    ss->set_hot_path_bytes_saved(session->hot_path_bytes_saved());
    ss->set_hot_path_plans_reused(session->hot_path_plans_reused());
    ss->set_shm_arena_bytes(session->shm_arena_bytes());
    ss->set_shm_bytes(session->shm_bytes());
    ss->set_frames(session->frames_received());
    session->sync_latency().fill(ss->mutable_sync_latency());
    for (const auto& [id, e] : session->tensors()) {
      if (!e.live()) continue;
      ss->set_tensors(ss->tensors() + 1);
      ss->set_tensor_bytes(ss->tensor_bytes() + static_cast<uint64_t>(e.charged));
      for (size_t m = 0; m < e.placement.workers.size(); ++m) {
        auto it = workers.find(e.placement.workers[m]);
        if (it == workers.end()) continue;
        v1::WorkerStatus* ws = it->second;
        ws->set_tensors(ws->tensors() + 1);
        ws->set_tensor_bytes(ws->tensor_bytes() + static_cast<uint64_t>(
            e.placement.local_meta(e.meta, static_cast<int>(m)).nbytes()));
      }
    }
  }
  for (const auto& [name, u] : usage_) {
    if (!only_user.empty() && name != only_user) continue;
    v1::UserStatus* us = s.add_users();
    us->set_name(name);
    us->set_sessions(u.sessions);
    us->set_tensor_bytes(u.bytes);
    us->set_instructions(u.instructions);
    us->set_errors(u.errors);
    us->set_ops_per_s(u.instruction_rate.rate());
    us->set_instructions_queued(u.outstanding);
    u.sync_latency.fill(us->mutable_sync_latency());
  }
  for (const auto& ss : s.sessions())
    for (auto& us : *s.mutable_users())
      if (us.name() == ss.user()) us.set_tensors(us.tensors() + ss.tensors());
  for (const auto& e : recent_errors_)
    if (only_user.empty() || e.user() == only_user) *s.add_recent_errors() = e;
  return s;
}

}  // namespace gt::dispatcher
