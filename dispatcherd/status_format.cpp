// Text forms of the dispatcher status (status.h): Prometheus exposition and JSON.
#include <fmt/format.h>

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

// A JSON string (quotes included), control characters escaped.
std::string json_string(const std::string& v) {
  std::string out = "\"";
  for (unsigned char c : v) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
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

std::string worker_labels(const WorkerStatus& w) {
  return fmt::format("worker=\"{}\",device=\"{}\"", w.id, label(w.device_name));
}
std::string session_labels(const SessionStatus& s) {
  return fmt::format("session=\"{}\",user=\"{}\",program=\"{}\"", s.id, label(s.user),
                     label(s.program));
}

}  // namespace

std::string format_prometheus(const DispatcherStatus& s) {
  Metrics m;
  m.family("gt_dispatcher_info", "gauge", "The dispatcher's version (value 1).");
  m.sample("gt_dispatcher_info", fmt::format("version=\"{}\"", label(s.version)), 1);
  m.family("gt_dispatcher_uptime_seconds", "gauge", "Seconds since the dispatcher started.");
  m.sample("gt_dispatcher_uptime_seconds", "", fmt::format("{:.3f}", s.uptime_s));
  m.family("gt_dispatcher_bytes_total", "counter", "Bytes through the dispatcher's sockets.");
  m.sample("gt_dispatcher_bytes_total", "peer=\"clients\",direction=\"in\"", s.bytes_from_clients);
  m.sample("gt_dispatcher_bytes_total", "peer=\"clients\",direction=\"out\"", s.bytes_to_clients);
  m.sample("gt_dispatcher_bytes_total", "peer=\"workers\",direction=\"in\"", s.bytes_from_workers);
  m.sample("gt_dispatcher_bytes_total", "peer=\"workers\",direction=\"out\"", s.bytes_to_workers);
  m.family("gt_dispatcher_sessions_started_total", "counter", "Client sessions started.");
  m.sample("gt_dispatcher_sessions_started_total", "", s.sessions_started);
  m.family("gt_dispatcher_sessions", "gauge", "Client sessions connected now.");
  m.sample("gt_dispatcher_sessions", "", s.sessions.size());
  m.family("gt_dispatcher_workers", "gauge", "Workers registered now.");
  m.sample("gt_dispatcher_workers", "", s.workers.size());

  m.family("gt_worker_memory_capacity_bytes", "gauge", "Device memory the worker reported.");
  for (const auto& w : s.workers)
    m.sample("gt_worker_memory_capacity_bytes", worker_labels(w), w.memory_capacity_bytes);
  m.family("gt_worker_tensor_bytes", "gauge", "Bytes of session tensors held on the worker.");
  for (const auto& w : s.workers) m.sample("gt_worker_tensor_bytes", worker_labels(w), w.tensor_bytes);
  m.family("gt_worker_tensors", "gauge", "Session tensors (pieces) held on the worker.");
  for (const auto& w : s.workers) m.sample("gt_worker_tensors", worker_labels(w), w.tensors);
  m.family("gt_worker_instructions_sent_total", "counter", "Instructions sent to the worker.");
  for (const auto& w : s.workers)
    m.sample("gt_worker_instructions_sent_total", worker_labels(w), w.instructions_sent);
  m.family("gt_worker_instructions_executed_total", "counter",
           "Instructions the worker acknowledged as executed.");
  for (const auto& w : s.workers)
    m.sample("gt_worker_instructions_executed_total", worker_labels(w), w.instructions_executed);
  m.family("gt_worker_instructions_in_flight", "gauge", "Instructions sent, not yet executed.");
  for (const auto& w : s.workers)
    m.sample("gt_worker_instructions_in_flight", worker_labels(w), w.instructions_in_flight);
  m.family("gt_worker_heartbeat_age_seconds", "gauge", "Seconds since the worker was heard from.");
  for (const auto& w : s.workers)
    m.sample("gt_worker_heartbeat_age_seconds", worker_labels(w),
             fmt::format("{:.3f}", w.heartbeat_age_s));

  m.family("gt_session_tensor_bytes", "gauge", "Bytes of tensors the session holds.");
  for (const auto& x : s.sessions) m.sample("gt_session_tensor_bytes", session_labels(x), x.tensor_bytes);
  m.family("gt_session_tensors", "gauge", "Tensors the session holds.");
  for (const auto& x : s.sessions) m.sample("gt_session_tensors", session_labels(x), x.tensors);
  m.family("gt_session_instructions_total", "counter", "Instructions the session sent.");
  for (const auto& x : s.sessions)
    m.sample("gt_session_instructions_total", session_labels(x), x.instructions);
  m.family("gt_session_errors_total", "counter", "Errors raised to the session's results.");
  for (const auto& x : s.sessions) m.sample("gt_session_errors_total", session_labels(x), x.errors);

  std::map<std::string, std::pair<uint64_t, uint64_t>> users;  // bytes, sessions
  for (const auto& x : s.sessions) {
    users[x.user].first += x.tensor_bytes;
    users[x.user].second += 1;
  }
  m.family("gt_user_tensor_bytes", "gauge", "Bytes of tensors the user's sessions hold.");
  for (const auto& [u, v] : users)
    m.sample("gt_user_tensor_bytes", fmt::format("user=\"{}\"", label(u)), v.first);
  m.family("gt_user_sessions", "gauge", "The user's connected sessions.");
  for (const auto& [u, v] : users)
    m.sample("gt_user_sessions", fmt::format("user=\"{}\"", label(u)), v.second);
  return m.out;
}

std::string format_status_json(const DispatcherStatus& s) {
  std::string out = fmt::format(
      "{{\"version\": {}, \"uptime_s\": {:.3f}, \"bytes_from_clients\": {}, "
      "\"bytes_to_clients\": {}, \"bytes_from_workers\": {}, \"bytes_to_workers\": {}, "
      "\"sessions_started\": {}, \"workers\": [",
      json_string(s.version), s.uptime_s, s.bytes_from_clients, s.bytes_to_clients,
      s.bytes_from_workers, s.bytes_to_workers, s.sessions_started);
  const char* sep = "";
  for (const auto& w : s.workers) {
    out += fmt::format(
        "{}{{\"id\": {}, \"device_kind\": {}, \"device_name\": {}, "
        "\"memory_capacity_bytes\": {}, \"tensors\": {}, \"tensor_bytes\": {}, "
        "\"instructions_sent\": {}, \"instructions_executed\": {}, "
        "\"instructions_in_flight\": {}, \"sessions_homed\": {}, \"heartbeat_age_s\": {:.3f}}}",
        sep, w.id, json_string(w.device_kind), json_string(w.device_name),
        w.memory_capacity_bytes, w.tensors, w.tensor_bytes, w.instructions_sent,
        w.instructions_executed, w.instructions_in_flight, w.sessions_homed, w.heartbeat_age_s);
    sep = ", ";
  }
  out += "], \"sessions\": [";
  sep = "";
  for (const auto& x : s.sessions) {
    out += fmt::format(
        "{}{{\"id\": {}, \"user\": {}, \"program\": {}, \"tensors\": {}, \"tensor_bytes\": {}, "
        "\"instructions\": {}, \"errors\": {}}}",
        sep, x.id, json_string(x.user), json_string(x.program), x.tensors, x.tensor_bytes,
        x.instructions, x.errors);
    sep = ", ";
  }
  return out + "]}";
}

}  // namespace gt::dispatcher
