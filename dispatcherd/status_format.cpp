// Text forms of the dispatcher status (status.h): Prometheus exposition and JSON.
#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>

#include <map>
#include <string>

#include "dispatcherd/status.h"

namespace gt::dispatcher {
namespace {

// A label value with \, " and newlines escaped (Prometheus text format).
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

struct Metrics {
  std::string out;
  void family(const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  template <typename V>
  void sample(const char* name, const std::string& labels, V v) {
    out += labels.empty() ? fmt::format("{} {}\n", name, v)
                          : fmt::format("{}{{{}}} {}\n", name, labels, v);
  }
};

std::string worker_labels(const v1::WorkerStatus& w) {
  return fmt::format("worker=\"{}\",device=\"{}\"", w.id(), label(w.device_name()));
}
std::string session_labels(const v1::SessionStatus& s) {
  return fmt::format("session=\"{}\",user=\"{}\",program=\"{}\"", s.id(), label(s.user()),
                     label(s.program()));
}
std::string user_labels(const v1::UserStatus& u) {
  return fmt::format("user=\"{}\"", label(u.name()));
}
std::string seconds(double v) { return fmt::format("{:.6g}", v); }

// One gauge or counter family with a sample per element of `items`.
template <typename Items, typename Labels, typename Value>
void per_item(Metrics& m, const char* name, const char* type, const char* help, const Items& items,
              Labels labels, Value value) {
  m.family(name, type, help);
  for (const auto& x : items) m.sample(name, labels(x), value(x));
}

// A histogram family: cumulative _bucket{le=...}, _sum, _count per element of `items`.
template <typename Items, typename Labels, typename Hist>
void histogram(Metrics& m, const std::string& name, const char* help,
               const v1::StatusReport& s, const Items& items, Labels labels, Hist hist) {
  m.family(name.c_str(), "histogram", help);
  for (const auto& x : items) {
    const v1::LatencyHistogram& h = hist(x);
    const std::string l = labels(x);
    uint64_t cumulative = 0;
    for (int i = 0; i < h.counts_size(); ++i) {
      cumulative += h.counts(i);
      const std::string le = i < s.latency_bounds_s_size() ? seconds(s.latency_bounds_s(i)) : "+Inf";
      m.sample((name + "_bucket").c_str(), fmt::format("{},le=\"{}\"", l, le), cumulative);
    }
    m.sample((name + "_sum").c_str(), l, seconds(h.sum_s()));
    m.sample((name + "_count").c_str(), l, h.count());
  }
}

}  // namespace

std::string format_prometheus(const v1::StatusReport& s) {
  Metrics m;
  m.family("gt_dispatcher_info", "gauge", "The dispatcher's version (value 1).");
  m.sample("gt_dispatcher_info", fmt::format("version=\"{}\"", label(s.version())), 1);
  m.family("gt_dispatcher_uptime_seconds", "gauge", "Seconds since the dispatcher started.");
  m.sample("gt_dispatcher_uptime_seconds", "", fmt::format("{:.3f}", s.uptime_s()));
  m.family("gt_dispatcher_bytes_total", "counter", "Bytes through the dispatcher's sockets.");
  m.sample("gt_dispatcher_bytes_total", "peer=\"clients\",direction=\"in\"", s.bytes_from_clients());
  m.sample("gt_dispatcher_bytes_total", "peer=\"clients\",direction=\"out\"", s.bytes_to_clients());
  m.sample("gt_dispatcher_bytes_total", "peer=\"workers\",direction=\"in\"", s.bytes_from_workers());
  m.sample("gt_dispatcher_bytes_total", "peer=\"workers\",direction=\"out\"", s.bytes_to_workers());
  m.family("gt_dispatcher_upload_bytes_unparsed_total", "counter",
           "Client upload payload bytes read straight into their instruction, never parsed.");
  m.sample("gt_dispatcher_upload_bytes_unparsed_total", "", s.upload_bytes_unparsed());
  m.family("gt_dispatcher_sessions_started_total", "counter", "Client sessions started.");
  m.sample("gt_dispatcher_sessions_started_total", "", s.sessions_started());
  m.family("gt_dispatcher_sessions", "gauge", "Client sessions connected now.");
  m.sample("gt_dispatcher_sessions", "", s.sessions_size());
  m.family("gt_dispatcher_workers", "gauge", "Workers registered now.");
  m.sample("gt_dispatcher_workers", "", s.workers_size());

  const auto& ws = s.workers();
  using W = v1::WorkerStatus;
  per_item(m, "gt_worker_memory_capacity_bytes", "gauge", "Device memory the worker reported.", ws,
           worker_labels, [](const W& w) { return w.memory_capacity_bytes(); });
  per_item(m, "gt_worker_memory_used_bytes", "gauge", "Bytes allocated by the worker's allocator.",
           ws, worker_labels, [](const W& w) { return w.memory_used_bytes(); });
  per_item(m, "gt_worker_memory_reserved_bytes", "gauge",
           "Bytes held by the worker's caching allocator, used or not.", ws, worker_labels,
           [](const W& w) { return w.memory_reserved_bytes(); });
  per_item(m, "gt_worker_tensor_bytes", "gauge", "Bytes of session tensors held on the worker.", ws,
           worker_labels, [](const W& w) { return w.tensor_bytes(); });
  per_item(m, "gt_worker_tensors", "gauge", "Session tensors (pieces) held on the worker.", ws,
           worker_labels, [](const W& w) { return w.tensors(); });
  per_item(m, "gt_worker_instructions_sent_total", "counter", "Instructions sent to the worker.",
           ws, worker_labels, [](const W& w) { return w.instructions_sent(); });
  per_item(m, "gt_worker_instructions_executed_total", "counter",
           "Instructions the worker acknowledged as executed.", ws, worker_labels,
           [](const W& w) { return w.instructions_executed(); });
  per_item(m, "gt_worker_instructions_in_flight", "gauge", "Instructions sent, not yet executed.",
           ws, worker_labels, [](const W& w) { return w.instructions_in_flight(); });
  per_item(m, "gt_worker_queue_depth", "gauge",
           "Instructions the worker has received and not yet started.", ws, worker_labels,
           [](const W& w) { return w.queue_depth(); });
  per_item(m, "gt_worker_ops_executed_total", "counter",
           "Instructions the worker executed (worker-reported, since it started).", ws,
           worker_labels, [](const W& w) { return w.ops_executed(); });
  per_item(m, "gt_worker_busy_seconds_total", "counter",
           "Time the worker's executor spent running work.", ws, worker_labels,
           [](const W& w) { return seconds(w.busy_s()); });
  per_item(m, "gt_worker_ops_per_second", "gauge", "Instructions executed per second (last 1 s).",
           ws, worker_labels, [](const W& w) { return fmt::format("{:.1f}", w.ops_per_s()); });
  per_item(m, "gt_worker_busy_ratio", "gauge",
           "Share of the last second the worker's executor was running work.", ws, worker_labels,
           [](const W& w) { return fmt::format("{:.4f}", w.busy_fraction()); });
  per_item(m, "gt_worker_peer_sent_bytes_total", "counter", "Shard bytes sent to other workers.",
           ws, worker_labels, [](const W& w) { return w.peer_bytes_sent(); });
  per_item(m, "gt_worker_peer_received_bytes_total", "counter",
           "Shard bytes received from other workers.", ws, worker_labels,
           [](const W& w) { return w.peer_bytes_received(); });
  per_item(m, "gt_worker_errors_total", "counter", "Instructions that failed on the worker.", ws,
           worker_labels, [](const W& w) { return w.errors(); });
  per_item(m, "gt_worker_hot_path_hits_total", "counter", "Hot-path replays on the worker.", ws,
           worker_labels, [](const W& w) { return w.hot_path_hits(); });
  per_item(m, "gt_worker_hot_paths", "gauge", "Hot paths the worker holds.", ws, worker_labels,
           [](const W& w) { return w.hot_paths(); });
  per_item(m, "gt_worker_fused_ops_total", "counter",
           "Ops the worker ran inside fused elementwise chains.", ws, worker_labels,
           [](const W& w) { return w.fused_ops(); });
  per_item(m, "gt_worker_graph_launches_total", "counter",
           "Hot-path segments the worker launched as device graphs.", ws, worker_labels,
           [](const W& w) { return w.graph_launches(); });
  per_item(m, "gt_worker_graph_instantiations_total", "counter",
           "Device graphs instantiated anew (the rest were updates).", ws, worker_labels,
           [](const W& w) { return w.graph_instantiations(); });
  per_item(m, "gt_worker_graph_fallbacks_total", "counter",
           "Device graph captures that failed and ran eagerly.", ws, worker_labels,
           [](const W& w) { return w.graph_fallbacks(); });
  per_item(m, "gt_worker_fused_kernels_compiled_total", "counter",
           "Fused-chain kernels the worker compiled at run time.", ws, worker_labels,
           [](const W& w) { return w.fused_kernels_compiled(); });
  per_item(m, "gt_worker_fused_kernels_from_disk_total", "counter",
           "Fused-chain kernels the worker read from its kernel_cache_dir.", ws, worker_labels,
           [](const W& w) { return w.fused_kernels_from_disk(); });
  per_item(m, "gt_worker_fused_kernels_failed_total", "counter",
           "Fused-chain kernels that failed to compile or load (run op by op).", ws,
           worker_labels, [](const W& w) { return w.fused_kernels_failed(); });
  per_item(m, "gt_worker_early_fetches_total", "counter",
           "Fetches answered while the hot path before them still ran (their values final).", ws,
           worker_labels, [](const W& w) { return w.early_fetches(); });
  per_item(m, "gt_worker_heartbeat_age_seconds", "gauge", "Seconds since the worker was heard from.",
           ws, worker_labels, [](const W& w) { return fmt::format("{:.3f}", w.heartbeat_age_s()); });

  const auto& ss = s.sessions();
  using S = v1::SessionStatus;
  per_item(m, "gt_session_tensor_bytes", "gauge", "Bytes of tensors the session holds.", ss,
           session_labels, [](const S& x) { return x.tensor_bytes(); });
  per_item(m, "gt_session_tensors", "gauge", "Tensors the session holds.", ss, session_labels,
           [](const S& x) { return x.tensors(); });
  per_item(m, "gt_session_instructions_total", "counter", "Instructions the session sent.", ss,
           session_labels, [](const S& x) { return x.instructions(); });
  per_item(m, "gt_session_frames_total", "counter",
           "Frames the session's client sent (its instructions came in these).", ss,
           session_labels, [](const S& x) { return x.frames(); });
  per_item(m, "gt_session_instructions_queued", "gauge",
           "The session's instructions sent to workers, not yet executed.", ss, session_labels,
           [](const S& x) { return x.instructions_queued(); });
  per_item(m, "gt_session_ops_per_second", "gauge", "Instructions received per second (last 1 s).",
           ss, session_labels, [](const S& x) { return fmt::format("{:.1f}", x.ops_per_s()); });
  per_item(m, "gt_session_errors_total", "counter", "Errors raised to the session's results.", ss,
           session_labels, [](const S& x) { return x.errors(); });
  per_item(m, "gt_session_hot_paths_total", "counter",
           "Instruction stretches of the session that became hot paths.", ss, session_labels,
           [](const S& x) { return x.hot_paths(); });
  per_item(m, "gt_session_hot_path_hits_total", "counter",
           "Repetitions of the session's hot paths.", ss, session_labels,
           [](const S& x) { return x.hot_path_hits(); });
  per_item(m, "gt_session_hot_path_replays_total", "counter",
           "Stretches of the session sent to their worker as one hot-path run.", ss,
           session_labels, [](const S& x) { return x.hot_path_replays(); });
  per_item(m, "gt_session_hot_path_plans_reused_total", "counter",
           "Replays of the session sent from the path's cached plan (not planned again).", ss,
           session_labels, [](const S& x) { return x.hot_path_plans_reused(); });
  per_item(m, "gt_session_hot_path_bytes_saved", "gauge",
           "Worker-batch bytes the session's hot-path replays did not send.", ss, session_labels,
           [](const S& x) { return x.hot_path_bytes_saved(); });
  per_item(m, "gt_session_shm_arena_bytes", "gauge",
           "Shared-memory arenas the session's client registered (local clients).", ss,
           session_labels, [](const S& x) { return x.shm_arena_bytes(); });
  per_item(m, "gt_session_shm_bytes_total", "counter",
           "Payload bytes of fetches and uploads that went through shared memory.", ss,
           session_labels, [](const S& x) { return x.shm_bytes(); });
  histogram(m, "gt_session_sync_latency_seconds",
            "SYNC and FETCH requests: received to answered, in the dispatcher.", s, ss,
            session_labels, [](const S& x) -> const v1::LatencyHistogram& { return x.sync_latency(); });

  const auto& us = s.users();
  using U = v1::UserStatus;
  per_item(m, "gt_user_tensor_bytes", "gauge", "Bytes of tensors the user's sessions hold.", us,
           user_labels, [](const U& u) { return u.tensor_bytes(); });
  per_item(m, "gt_user_sessions", "gauge", "The user's connected sessions.", us, user_labels,
           [](const U& u) { return u.sessions(); });
  per_item(m, "gt_user_ops_per_second", "gauge",
           "Instructions the user's sessions sent per second (last 1 s).", us, user_labels,
           [](const U& u) { return fmt::format("{:.1f}", u.ops_per_s()); });
  per_item(m, "gt_user_errors_total", "counter",
           "Errors raised to the user's connected sessions.", us, user_labels,
           [](const U& u) { return u.errors(); });
  histogram(m, "gt_user_sync_latency_seconds",
            "SYNC and FETCH requests of the user's connected sessions.", s, us, user_labels,
            [](const U& u) -> const v1::LatencyHistogram& { return u.sync_latency(); });
  return m.out;
}

std::string format_status_json(const v1::StatusReport& s) {
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;  // a zero is a figure, not a missing one
  std::string out;
  // Cannot fail for a message without Any fields; an empty object if it ever did.
  if (!google::protobuf::util::MessageToJsonString(s, &out, o).ok()) out = "{}";
  return out;
}

}  // namespace gt::dispatcher
