#include "tools/gt-top/render.h"

#include <fmt/format.h>

#include <algorithm>

#include "tools/gt-top/table.h"
#include "tools/gt-top/units.h"

namespace gt::top {
namespace {

constexpr size_t kSparkCells = 20;
constexpr size_t kMemoryBarCells = 24;
constexpr size_t kBusyBarCells = 10;
constexpr size_t kProgramWidth = 24;

// "1.0MiB": the compact form inside a meter.
std::string compact_bytes(uint64_t n) {
  std::string b = format_bytes(n);
  b.erase(b.find(' '), 1);
  return b;
}
std::string count(uint64_t v) { return std::to_string(v); }
std::string history(const google::protobuf::RepeatedField<double>& h, bool unicode) {
  return sparkline(std::vector<double>(h.begin(), h.end()), kSparkCells, unicode);
}
std::string latency(const v1::LatencyHistogram& h, double v, bool unicode) {
  return h.count() ? format_seconds(v, unicode) : "-";
}
struct Screen {
  const RenderOptions& o;
  std::vector<Line> lines;

  void add(LineKind kind, std::string text) {
    lines.push_back({kind, o.width ? clamp_width(text, o.width) : std::move(text)});
  }
  // Segments joined by two spaces, wrapped at segment boundaries to the width.
  void segments(LineKind kind, const std::vector<std::string>& parts) {
    std::string cur;
    for (const auto& p : parts) {
      if (!cur.empty() && o.width && display_width(cur) + 2 + display_width(p) > o.width) {
        add(kind, cur);
        cur.clear();
      }
      cur += (cur.empty() ? "" : "  ") + p;
    }
    if (!cur.empty()) add(kind, cur);
  }
  void table(const std::string& title, const std::vector<Column>& cols,
             const std::vector<std::vector<std::string>>& rows) {
    add(LineKind::kBlank, "");
    add(LineKind::kSection, title);
    if (rows.empty()) {
      add(LineKind::kNote, " none");
      return;
    }
    const auto text = layout_table(cols, rows, o.width);
    add(LineKind::kHeader, text[0]);
    for (size_t i = 1; i < text.size(); ++i) add(LineKind::kRow, text[i]);
  }
};

void header(Screen& sc, const v1::StatusReport& s) {
  const RenderOptions& o = sc.o;
  std::vector<std::string> title = {"gt-top", "dispatcher " + (s.version().empty() ? "?" : s.version())};
  if (!o.source.empty()) title.push_back(o.source);
  title.push_back("up " + format_seconds(s.uptime_s(), o.unicode));
  if (s.unix_time_s() > 0) title.push_back("at " + format_clock(s.unix_time_s()));
  title.push_back(std::string("sort: ") + sort_key_name(o.sort));
  sc.segments(LineKind::kTitle, title);

  double ops = 0;
  uint64_t used = 0, capacity = 0, tensor_bytes = 0;
  for (const auto& w : s.workers()) {
    ops += w.ops_per_s();
    used += w.memory_used_bytes();
    capacity += w.memory_capacity_bytes();
  }
  for (const auto& x : s.sessions()) tensor_bytes += x.tensor_bytes();
  std::vector<std::string> summary = {
      fmt::format("workers {}", s.workers_size()),
      fmt::format("sessions {} ({} started)", s.sessions_size(), s.sessions_started()),
      fmt::format("users {}", s.users_size()),
      "ops/s " + format_rate(ops),
      "memory " + format_bytes(used) + " / " + format_bytes(capacity),
      "held " + format_bytes(tensor_bytes),
      fmt::format("recent errors {}", s.recent_errors_size()),
  };
  // The dispatcher's traffic is shown to admins only (0 for others).
  if (s.bytes_from_clients() || s.bytes_to_clients())
    summary.push_back("clients in/out " + format_bytes(s.bytes_from_clients()) + " / " +
                      format_bytes(s.bytes_to_clients()));
  if (s.bytes_from_workers() || s.bytes_to_workers())
    summary.push_back("workers in/out " + format_bytes(s.bytes_from_workers()) + " / " +
                      format_bytes(s.bytes_to_workers()));
  sc.segments(LineKind::kSummary, summary);
}

void workers(Screen& sc, const v1::StatusReport& s) {
  const bool u = sc.o.unicode;
  // keep: drop order when the terminal is narrow (lowest first).
  const std::vector<Column> cols = {
      {"WORKER", false, 100},   {"DEVICE", true, 60},   {"MEMORY", true, 90},
      {"BUSY", true, 85},       {"OPS/S", false, 95},   {"LAST MINUTE", true, 10},
      {"QUEUE", false, 80},     {"IN FLIGHT", false, 50}, {"TENSORS", false, 30},
      {"HELD", false, 40},      {"PEER OUT/IN", false, 20}, {"ERRORS", false, 70},
      {"HEARTBEAT", false, 15},
  };
  std::vector<std::vector<std::string>> rows;
  for (int i : sorted_workers(s, sc.o.sort)) {
    const v1::WorkerStatus& w = s.workers(i);
    const uint64_t cap = w.memory_capacity_bytes(), used = w.memory_used_bytes();
    const double mem = cap ? static_cast<double>(used) / static_cast<double>(cap) : 0;
    rows.push_back({
        count(w.id()),
        printable(w.device_name().empty() ? w.device_kind() : w.device_name()),
        format_bar(mem, kMemoryBarCells, compact_bytes(used) + "/" + compact_bytes(cap)),
        format_bar(w.busy_fraction(), kBusyBarCells,
                   fmt::format("{:.0f}%", std::clamp(w.busy_fraction(), 0.0, 1.0) * 100)),
        format_rate(w.ops_per_s()),
        history(w.ops_per_s_history(), u),
        count(w.queue_depth()),
        count(w.instructions_in_flight()),
        count(w.tensors()),
        format_bytes(w.tensor_bytes()),
        format_bytes(w.peer_bytes_sent()) + " / " + format_bytes(w.peer_bytes_received()),
        count(w.errors()),
        format_seconds(w.heartbeat_age_s(), u),
    });
  }
  sc.table(fmt::format("Workers: {}", s.workers_size()), cols, rows);
}

void sessions(Screen& sc, const v1::StatusReport& s) {
  const bool u = sc.o.unicode;
  const std::vector<Column> cols = {
      {"SESSION", false, 100}, {"USER", true, 90},     {"PROGRAM", true, 60},
      {"OPS/S", false, 95},    {"LAST MINUTE", true, 10}, {"INSTR", false, 35},
      {"QUEUED", false, 80},   {"TENSORS", false, 30}, {"HELD", false, 85},
      {"SYNC P50", false, 45}, {"SYNC P99", false, 75}, {"ERRORS", false, 70},
      {"HOT", false, 15},      {"AGE", false, 40},
  };
  std::vector<std::vector<std::string>> rows;
  for (int i : sorted_sessions(s, sc.o.sort)) {
    const v1::SessionStatus& x = s.sessions(i);
    const v1::LatencyHistogram& h = x.sync_latency();
    rows.push_back({
        count(x.id()),
        printable(x.user().empty() ? "-" : x.user()),
        clamp_width(printable(x.program().empty() ? "-" : x.program()), kProgramWidth),
        format_rate(x.ops_per_s()),
        history(x.ops_per_s_history(), u),
        count(x.instructions()),
        count(x.instructions_queued()),
        count(x.tensors()),
        format_bytes(x.tensor_bytes()),
        latency(h, h.p50_s(), u),
        latency(h, h.p99_s(), u),
        count(x.errors()),
        // hot paths / their hits (issue 11): "-" for a session with none
        x.hot_paths() == 0 ? "-" : fmt::format("{}/{}", x.hot_paths(), x.hot_path_hits()),
        format_seconds(x.age_s(), u),
    });
  }
  sc.table(fmt::format("Sessions: {}", s.sessions_size()), cols, rows);
}

void users(Screen& sc, const v1::StatusReport& s) {
  const bool u = sc.o.unicode;
  const std::vector<Column> cols = {
      {"USER", true, 100},    {"SESSIONS", false, 90}, {"OPS/S", false, 95},
      {"INSTR", false, 35},   {"QUEUED", false, 80},   {"TENSORS", false, 30},
      {"HELD", false, 85},    {"SYNC P99", false, 75}, {"ERRORS", false, 70},
  };
  std::vector<std::vector<std::string>> rows;
  for (int i : sorted_users(s, sc.o.sort)) {
    const v1::UserStatus& x = s.users(i);
    rows.push_back({
        printable(x.name().empty() ? "-" : x.name()),
        count(x.sessions()),
        format_rate(x.ops_per_s()),
        count(x.instructions()),
        count(x.instructions_queued()),
        count(x.tensors()),
        format_bytes(x.tensor_bytes()),
        latency(x.sync_latency(), x.sync_latency().p99_s(), u),
        count(x.errors()),
    });
  }
  sc.table(fmt::format("Users: {}", s.users_size()), cols, rows);
}

void errors(Screen& sc, const v1::StatusReport& s) {
  sc.add(LineKind::kBlank, "");
  sc.add(LineKind::kSection, fmt::format("Recent errors: {}", s.recent_errors_size()));
  if (s.recent_errors_size() == 0) sc.add(LineKind::kNote, " none");
  for (int i = s.recent_errors_size() - 1; i >= 0; --i) {  // newest first
    const v1::RecentError& e = s.recent_errors(i);
    // "op: message", unless the message starts so already (the dispatcher's usually do).
    std::string what = printable(e.message());
    if (!e.op().empty() && what.rfind(e.op() + ":", 0) != 0) what = printable(e.op()) + ": " + what;
    sc.add(LineKind::kRow, fmt::format(" {}  session {} ({})  {}", format_clock(e.unix_time_s()),
                                       e.session(), printable(e.user().empty() ? "-" : e.user()), what));
  }
}

}  // namespace

std::vector<Line> render_status(const v1::StatusReport& s, const RenderOptions& options) {
  Screen sc{options, {}};
  header(sc, s);
  workers(sc, s);
  sessions(sc, s);
  users(sc, s);
  errors(sc, s);
  return std::move(sc.lines);
}

std::string to_text(const std::vector<Line>& lines) {
  std::string out;
  for (const auto& l : lines) out += l.text + "\n";
  return out;
}

}  // namespace gt::top
