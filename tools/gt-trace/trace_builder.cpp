#include "tools/gt-trace/trace_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace gt::trace {
namespace {

// Track ids. Workers are processes 1 + id, sessions 1000000 + their order of appearance (worker
// ids are u32 from 0; a box has a few).
constexpr int64_t kSessionPidBase = 1000000;
constexpr int kExecutorTid = 1, kPeerTid = 2;        // a worker's threads
constexpr int kInstructionsTid = 1, kRequestsTid = 2;  // a session's threads
// A received instruction is shown until the session's next one, at most this long (µs): the
// log says when the dispatcher took it, not how long it took.
constexpr double kRecvSliceUs = 10;
// Collectives over more members draw flows around the ring only (not every pair).
constexpr size_t kAllPairsMembers = 8;

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += c;
    }
  }
  return out + "\"";
}

struct Event {
  double ts = 0;
  int order = 0;  // at equal ts: slices before the flows that bind to them
  std::string json;  // everything but "ts"
};

struct Slice {
  int64_t pid = 0;
  int tid = 0;
  double ts = 0, dur = 0;  // µs
  std::string name, cat, args;  // args: a JSON object's members, without braces
};

// A worker slice (EXEC or PEER) before its placement on the trace's clock.
struct WorkerSlice {
  uint32_t worker = 0;
  bool peer = false;
  std::optional<int64_t> wstart, wend, ack_offset;  // ns (see the header)
  double start_s = 0, end_s = 0;                     // fallback: the dispatcher's placement
  Slice slice;
  std::vector<uint64_t> requests;  // EXEC: request ids answered after it
  uint64_t tag = 0;                // PEER
  std::string comm;
  std::vector<uint32_t> peers;
};

struct Request {
  uint64_t session = 0, id = 0;
  std::string kind;
  double t_req = 0;
  std::optional<double> t_rep;
  std::vector<std::pair<uint32_t, uint64_t>> routes;  // worker, its request id
  size_t slice = SIZE_MAX;                            // in slices_
};

struct Instant {
  int64_t pid = 0;
  int tid = 0;
  double ts = 0;
  std::string name, args;
};

template <typename T>
std::vector<T> split_list(std::string_view s, T (*conv)(std::string_view)) {
  std::vector<T> out;
  while (!s.empty()) {
    size_t comma = s.find(',');
    out.push_back(conv(s.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}
uint64_t u64_or0(std::string_view s) { return to_u64(s).value_or(0); }
uint32_t u32_or0(std::string_view s) { return static_cast<uint32_t>(to_u64(s).value_or(0)); }

class Builder {
 public:
  void add(const LogLine& l);
  std::string finish(TraceSummary* summary);

 private:
  int64_t session_pid(uint64_t session) {
    auto [it, fresh] = sessions_.try_emplace(session);
    if (fresh) it->second.pid = kSessionPidBase + static_cast<int64_t>(sessions_.size());
    return it->second.pid;
  }
  void note_worker(uint32_t w) { workers_.try_emplace(w); }
  std::string args_of(const LogLine& l) const {
    return fmt::format("\"details\": {}", json_string(l.details));
  }

  struct SessionInfo {
    int64_t pid = 0;
    std::string user, name;
  };
  struct WorkerInfo {
    std::string device;
  };
  std::map<uint64_t, SessionInfo> sessions_;
  std::map<uint32_t, WorkerInfo> workers_;
  std::vector<WorkerSlice> worker_slices_;
  std::vector<std::pair<uint64_t, Slice>> recvs_;  // session, slice (dur set at the end)
  std::vector<Request> requests_;
  std::map<std::pair<uint64_t, uint64_t>, size_t> open_requests_;  // (session, id) -> index
  std::vector<Instant> instants_;
};

void Builder::add(const LogLine& l) {
  const double us = l.t * 1e6;
  if (auto w = l.source_id("WORKER")) {
    const uint32_t wid = static_cast<uint32_t>(*w);
    note_worker(wid);
    if (l.event == "WORKER_JOIN" || l.event == "WORKER_INFO") {
      workers_[wid].device = l.field("device");
      return;
    }
    if (l.event == "EXEC" || l.event == "PEER") {
      WorkerSlice ws;
      ws.worker = wid;
      ws.peer = l.event == "PEER";
      ws.wstart = to_i64(l.field("wstart"));
      ws.wend = to_i64(l.field("wend"));
      ws.ack_offset = to_i64(l.field("ack_offset"));
      ws.start_s = to_double(l.field("start")).value_or(l.t);
      ws.end_s = to_double(l.field("end")).value_or(ws.start_s);
      const uint64_t session = u64_or0(l.field("session"));
      if (session != 0) session_pid(session);
      Slice& s = ws.slice;
      s.pid = 1 + static_cast<int64_t>(wid);
      if (ws.peer) {
        ws.tag = u64_or0(l.field("tag"));
        ws.comm = l.command;
        ws.peers = split_list<uint32_t>(l.field("peers"), u32_or0);
        s.tid = kPeerTid;
        s.cat = "peer";
        s.name = fmt::format("{} {}", l.command, l.size);
        s.args = fmt::format("\"session\": \"{}\", \"tag\": \"{}\", \"peers\": {}, \"bytes\": {}",
                             session, ws.tag, json_string(l.field("peers")), json_string(l.size));
      } else {
        const std::string range = l.field("instrs");  // "B-E": instructions [B, E) ran
        const size_t dash = range.find('-');
        uint64_t n = 0;
        if (dash != std::string::npos) {
          const uint64_t b = u64_or0(std::string_view(range).substr(0, dash));
          const uint64_t e = u64_or0(std::string_view(range).substr(dash + 1));
          n = e > b ? e - b : 0;
        }
        const std::string reqs = l.field("requests");
        if (!reqs.empty()) ws.requests = split_list<uint64_t>(reqs, u64_or0);
        s.tid = kExecutorTid;
        s.cat = "exec";
        s.name = n == 1 || n == 0 ? l.command : fmt::format("{} +{}", l.command, n - 1);
        s.args = fmt::format(
            "\"session\": \"{}\", \"batch\": \"{}\", \"instrs\": {}, \"queued_us\": {}, "
            "\"requests\": {}",
            session, l.field("batch"), json_string(range),
            to_double(l.field("queued_us")).value_or(0), json_string(reqs));
      }
      worker_slices_.push_back(std::move(ws));
      return;
    }
    // Anything else about a worker (its departure, an error it reported): a mark on its track.
    instants_.push_back({1 + static_cast<int64_t>(wid), kExecutorTid, us,
                         l.event + " " + l.command, args_of(l)});
    return;
  }
  auto c = l.source_id("CLIENT");
  if (!c) return;  // CONN:<id> (refused before it was anyone): no track
  const uint64_t session = *c;
  const int64_t pid = session_pid(session);
  if (l.event == "CONNECT" || l.event == "SESSION_INFO") {
    sessions_[session].name = l.field("name", " user=");
    sessions_[session].user = l.field("user");
    if (l.event == "SESSION_INFO") return;
  }
  if (l.event == "RECV") {
    Slice s{pid, kInstructionsTid, us, 0, l.command, "recv",
            fmt::format("\"size\": {}, {}", json_string(l.size), args_of(l))};
    recvs_.emplace_back(session, std::move(s));
    return;
  }
  if (l.event == "REQUEST") {
    Request r;
    r.session = session;
    r.id = u64_or0(l.field("request"));
    r.kind = l.command;
    r.t_req = us;
    const std::string routes = l.field("workers");
    for (const std::string& part : split_list<std::string>(
             routes == "-" ? "" : routes, [](std::string_view s) { return std::string(s); })) {
      const size_t colon = part.find(':');
      if (colon == std::string::npos) continue;
      r.routes.emplace_back(u32_or0(std::string_view(part).substr(0, colon)),
                            u64_or0(std::string_view(part).substr(colon + 1)));
    }
    open_requests_[{session, r.id}] = requests_.size();
    requests_.push_back(std::move(r));
    return;
  }
  if (l.event == "REPLY") {
    auto it = open_requests_.find({session, u64_or0(l.field("request"))});
    if (it != open_requests_.end()) {
      requests_[it->second].t_rep = us;
      open_requests_.erase(it);
    }
    return;
  }
  instants_.push_back({pid, kInstructionsTid, us, l.event + " " + l.command, args_of(l)});
}

std::string Builder::finish(TraceSummary* summary) {
  // Worker clocks: one offset per worker, the least ack sample of the whole log.
  std::map<uint32_t, int64_t> offset;
  for (const WorkerSlice& ws : worker_slices_)
    if (ws.ack_offset) {
      auto [it, fresh] = offset.try_emplace(ws.worker, *ws.ack_offset);
      if (!fresh) it->second = std::min(it->second, *ws.ack_offset);
    }
  std::vector<Slice> slices;
  std::map<std::pair<uint32_t, uint64_t>, size_t> exec_by_request;  // (worker, rid) -> slice
  std::map<uint64_t, std::vector<size_t>> peer_by_tag;               // tag -> worker_slices_
  std::vector<size_t> slice_of(worker_slices_.size());
  for (size_t i = 0; i < worker_slices_.size(); ++i) {
    WorkerSlice& ws = worker_slices_[i];
    auto off = offset.find(ws.worker);
    if (ws.wstart && ws.wend && off != offset.end()) {
      ws.slice.ts = static_cast<double>(*ws.wstart + off->second) * 1e-3;
      ws.slice.dur = static_cast<double>(std::max<int64_t>(*ws.wend - *ws.wstart, 0)) * 1e-3;
    } else {
      ws.slice.ts = ws.start_s * 1e6;
      ws.slice.dur = std::max(ws.end_s - ws.start_s, 0.0) * 1e6;
    }
    slice_of[i] = slices.size();
    slices.push_back(ws.slice);
    for (uint64_t rid : ws.requests) exec_by_request[{ws.worker, rid}] = slice_of[i];
    if (ws.peer) peer_by_tag[ws.tag].push_back(i);
  }
  // Received instructions: until the session's next one, at most kRecvSliceUs.
  std::stable_sort(recvs_.begin(), recvs_.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.ts < b.second.ts;
  });
  for (size_t i = 0; i < recvs_.size(); ++i) {
    Slice& s = recvs_[i].second;
    const bool next_same = i + 1 < recvs_.size() && recvs_[i + 1].first == recvs_[i].first;
    s.dur = next_same ? std::min(kRecvSliceUs, recvs_[i + 1].second.ts - s.ts) : kRecvSliceUs;
    slices.push_back(s);
  }
  double end_of_log = 0;
  for (const Slice& s : slices) end_of_log = std::max(end_of_log, s.ts + s.dur);
  for (const Request& r : requests_) end_of_log = std::max(end_of_log, r.t_rep.value_or(r.t_req));
  for (const Instant& i : instants_) end_of_log = std::max(end_of_log, i.ts);
  // Requests, from REQUEST to REPLY (one still open when the log ends: to its end).
  for (Request& r : requests_) {
    r.slice = slices.size();
    const double end = r.t_rep.value_or(end_of_log);
    slices.push_back(Slice{sessions_[r.session].pid, kRequestsTid, r.t_req, end - r.t_req, r.kind,
                           "request",
                           fmt::format("\"request\": \"{}\", \"answered\": {}", r.id,
                                       r.t_rep ? "true" : "false")});
  }

  // Flows: from inside one slice to inside another, never backwards in time (the two ends may
  // come from different clocks: a worker's is placed within the ack's transit time).
  struct Flow {
    size_t from, to;  // slices: it starts near the beginning of `from`, ends near the end of `to`
    std::string name, cat;
  };
  std::vector<Flow> flows;
  for (const Request& r : requests_)
    for (const auto& [w, rid] : r.routes) {
      auto it = exec_by_request.find({w, rid});
      if (it == exec_by_request.end()) continue;  // not timed (recording began or ended between)
      flows.push_back({r.slice, it->second, r.kind, "request"});
      if (r.t_rep) flows.push_back({it->second, r.slice, r.kind, "reply"});
    }
  for (const auto& [tag, members] : peer_by_tag) {
    std::vector<size_t> senders, receivers;
    for (size_t i : members) {
      const WorkerSlice& ws = worker_slices_[i];
      if (ws.comm == "send") senders.push_back(i);
      else if (ws.comm == "recv") receivers.push_back(i);
    }
    for (size_t s : senders)  // a send names its receiver, the recv its sender
      for (size_t r : receivers)
        if (worker_slices_[s].peers == std::vector<uint32_t>{worker_slices_[r].worker} &&
            worker_slices_[r].peers == std::vector<uint32_t>{worker_slices_[s].worker})
          flows.push_back({slice_of[s], slice_of[r], "send", "peer"});
    std::vector<size_t> group;  // a collective: every member sends to every other
    std::set<uint32_t> seen;
    for (size_t i : members)
      if (worker_slices_[i].comm != "send" && worker_slices_[i].comm != "recv" &&
          seen.insert(worker_slices_[i].worker).second)
        group.push_back(i);
    for (size_t a = 0; a < group.size(); ++a)
      for (size_t b = 0; b < group.size(); ++b) {
        if (a == b || (group.size() > kAllPairsMembers && b != (a + 1) % group.size())) continue;
        flows.push_back({slice_of[group[a]], slice_of[group[b]], worker_slices_[group[a]].comm,
                         "peer"});
      }
  }

  // Everything on one time base starting at 0.
  double base = std::numeric_limits<double>::infinity();
  for (const Slice& s : slices) base = std::min(base, s.ts);
  for (const Instant& i : instants_) base = std::min(base, i.ts);
  if (!std::isfinite(base)) base = 0;

  std::vector<Event> events;
  auto place = [&](double ts) { return ts - base; };
  for (const Slice& s : slices)
    events.push_back({place(s.ts), 0,
                      fmt::format("\"ph\": \"X\", \"name\": {}, \"cat\": \"{}\", \"pid\": {}, "
                                  "\"tid\": {}, \"dur\": {:.3f}, \"args\": {{{}}}",
                                  json_string(s.name), s.cat, s.pid, s.tid, s.dur, s.args)});
  for (const Instant& i : instants_)
    events.push_back({place(i.ts), 1,
                      fmt::format("\"ph\": \"i\", \"s\": \"t\", \"name\": {}, \"pid\": {}, "
                                  "\"tid\": {}, \"args\": {{{}}}",
                                  json_string(i.name), i.pid, i.tid, i.args)});
  // Inside a slice: a quarter of it (at most 1 µs) from the chosen end.
  auto inset = [](const Slice& s) { return std::min(1.0, s.dur * 0.25); };
  uint64_t flow_id = 0;
  for (const Flow& f : flows) {
    const Slice &a = slices[f.from], &b = slices[f.to];
    const double start = place(a.ts) + inset(a);
    const double finish = std::max(start, place(b.ts + b.dur) - inset(b));
    ++flow_id;
    events.push_back({start, 2,
                      fmt::format("\"ph\": \"s\", \"id\": {}, \"name\": {}, \"cat\": \"{}\", "
                                  "\"pid\": {}, \"tid\": {}",
                                  flow_id, json_string(f.name), f.cat, a.pid, a.tid)});
    events.push_back({finish, 3,
                      fmt::format("\"ph\": \"f\", \"bp\": \"e\", \"id\": {}, \"name\": {}, "
                                  "\"cat\": \"{}\", \"pid\": {}, \"tid\": {}",
                                  flow_id, json_string(f.name), f.cat, b.pid, b.tid)});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.order < b.order;
  });

  // Metadata: names and order of the tracks.
  std::string out = "{\"traceEvents\": [\n";
  bool first = true;
  auto emit = [&](const std::string& e) {
    out += first ? "  " : ",\n  ";
    out += e;
    first = false;
  };
  auto meta = [&](int64_t pid, std::optional<int> tid, const char* what, const std::string& arg) {
    emit(fmt::format("{{\"ph\": \"M\", \"name\": \"{}\", \"pid\": {}{}, \"args\": {{{}}}}}", what,
                     pid, tid ? fmt::format(", \"tid\": {}", *tid) : "", arg));
  };
  for (const auto& [w, info] : workers_) {
    const int64_t pid = 1 + static_cast<int64_t>(w);
    meta(pid, std::nullopt, "process_name",
         "\"name\": " + json_string(fmt::format("worker {}{}", w,
                                                info.device.empty() ? "" : " (" + info.device + ")")));
    meta(pid, std::nullopt, "process_sort_index", fmt::format("\"sort_index\": {}", w));
    meta(pid, kExecutorTid, "thread_name", "\"name\": \"executor\"");
    meta(pid, kPeerTid, "thread_name", "\"name\": \"peer exchange\"");
  }
  for (const auto& [id, s] : sessions_) {
    std::string label = fmt::format("session {}", id);
    if (!s.user.empty() || !s.name.empty()) label += fmt::format(" {}/{}", s.user, s.name);
    meta(s.pid, std::nullopt, "process_name", "\"name\": " + json_string(label));
    meta(s.pid, std::nullopt, "process_sort_index", fmt::format("\"sort_index\": {}", s.pid));
    meta(s.pid, kInstructionsTid, "thread_name", "\"name\": \"instructions\"");
    meta(s.pid, kRequestsTid, "thread_name", "\"name\": \"requests\"");
  }
  for (const Event& e : events) emit(fmt::format("{{\"ts\": {:.3f}, {}}}", e.ts, e.json));
  out += "\n], \"displayTimeUnit\": \"ms\"}\n";
  if (summary) {
    summary->workers = workers_.size();
    summary->sessions = sessions_.size();
    summary->slices = slices.size();
    summary->flows = flows.size();
  }
  return out;
}

}  // namespace

std::string convert_log(std::istream& in, TraceSummary* summary) {
  Builder b;
  TraceSummary local;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto l = parse_log_line(line);
    if (!l) {
      ++local.skipped;
      continue;
    }
    ++local.lines;
    b.add(*l);
  }
  std::string json = b.finish(&local);
  if (summary) *summary = local;
  return json;
}

}  // namespace gt::trace
