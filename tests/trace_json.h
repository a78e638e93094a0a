// gt-trace's output as a test reads it: Chrome trace-event JSON parsed with protobuf's JSON parser
// (into google.protobuf.Struct, no JSON library of our own), and the structural rules every
// trace must keep (tests/unit/tools, tests/integration/test_trace.cpp).
#pragma once

#include <catch2/catch.hpp>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gt::testing {

struct TraceEvent {
  std::string ph, name, cat, bp;
  int64_t pid = 0, tid = 0;
  double ts = 0, dur = 0;
  bool has_ts = false, has_dur = false;
  int64_t id = 0;
  google::protobuf::Struct args;
  std::string arg(const std::string& key) const {
    auto it = args.fields().find(key);
    if (it == args.fields().end()) return "";
    if (it->second.has_string_value()) return it->second.string_value();
    return std::to_string(it->second.number_value());
  }
  double end() const { return ts + dur; }
};

struct ParsedTrace {
  std::vector<TraceEvent> events;  // in file order
  std::map<int64_t, std::string> process_names;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
  std::string display_time_unit;

  int64_t pid_named(const std::string& name) const {
    for (const auto& [pid, n] : process_names)
      if (n == name) return pid;
    return -1;
  }
  std::vector<const TraceEvent*> of(const std::string& ph) const {
    std::vector<const TraceEvent*> out;
    for (const auto& e : events)
      if (e.ph == ph) out.push_back(&e);
    return out;
  }
  // The complete events of one track, in file order.
  std::vector<const TraceEvent*> slices(int64_t pid, int64_t tid) const {
    std::vector<const TraceEvent*> out;
    for (const auto& e : events)
      if (e.ph == "X" && e.pid == pid && e.tid == tid) out.push_back(&e);
    return out;
  }
};

inline ParsedTrace parse_trace(const std::string& json) {
  google::protobuf::Struct root;
  auto st = google::protobuf::util::JsonStringToMessage(json, &root);
  INFO(json.substr(0, 2000));
  REQUIRE(st.ok());
  ParsedTrace t;
  const auto& f = root.fields();
  REQUIRE(f.count("traceEvents") == 1);
  REQUIRE(f.at("traceEvents").has_list_value());
  if (f.count("displayTimeUnit")) t.display_time_unit = f.at("displayTimeUnit").string_value();
  for (const auto& v : f.at("traceEvents").list_value().values()) {
    REQUIRE(v.has_struct_value());
    const auto& ef = v.struct_value().fields();
    TraceEvent e;
    auto str = [&](const char* k) { return ef.count(k) ? ef.at(k).string_value() : std::string(); };
    auto num = [&](const char* k) { return ef.count(k) ? ef.at(k).number_value() : 0.0; };
    e.ph = str("ph");
    e.name = str("name");
    e.cat = str("cat");
    e.bp = str("bp");
    e.pid = static_cast<int64_t>(num("pid"));
    e.tid = static_cast<int64_t>(num("tid"));
    e.has_ts = ef.count("ts") != 0;
    e.has_dur = ef.count("dur") != 0;
    e.ts = num("ts");
    e.dur = num("dur");
    e.id = static_cast<int64_t>(num("id"));
    if (ef.count("args")) e.args = ef.at("args").struct_value();
    REQUIRE(!e.ph.empty());
    if (e.ph == "M" && e.name == "process_name") t.process_names[e.pid] = e.arg("name");
    if (e.ph == "M" && e.name == "thread_name") t.thread_names[{e.pid, e.tid}] = e.arg("name");
    t.events.push_back(std::move(e));
  }
  return t;
}

// What every trace keeps: slices with ts >= 0 and dur >= 0, each track's events in time order,
// every flow a start and a finish (bound to the enclosing slice) between two tracks, never
// backwards. Tracks in `exclusive` (pid, tid) hold slices that do not overlap (one executor).
inline void check_trace_rules(const ParsedTrace& t,
                              const std::vector<std::pair<int64_t, int64_t>>& exclusive) {
  REQUIRE(t.display_time_unit == "ms");
  std::map<std::pair<int64_t, int64_t>, double> last_ts;
  for (const auto& e : t.events) {
    if (e.ph == "M") continue;
    INFO(e.ph << " " << e.name << " pid " << e.pid << " tid " << e.tid << " ts " << e.ts);
    REQUIRE(e.has_ts);
    CHECK(e.ts >= 0);
    auto [it, fresh] = last_ts.try_emplace({e.pid, e.tid}, e.ts);
    CHECK(e.ts >= it->second);  // monotonic per track
    it->second = e.ts;
    if (e.ph == "X") {
      REQUIRE(e.has_dur);
      CHECK(e.dur >= 0);
    }
  }
  for (const auto& track : exclusive) {
    auto s = t.slices(track.first, track.second);
    for (size_t i = 1; i < s.size(); ++i) {
      INFO("track " << track.first << "/" << track.second << ": " << s[i - 1]->name << " ["
                    << s[i - 1]->ts << ", " << s[i - 1]->end() << "] then " << s[i]->name << " ["
                    << s[i]->ts << ", " << s[i]->end() << "]");
      CHECK(s[i - 1]->end() <= s[i]->ts + 1e-3);  // one executor: no overlap
    }
  }
  std::map<int64_t, const TraceEvent*> starts, finishes;
  for (const auto& e : t.events) {
    if (e.ph == "s") CHECK(starts.emplace(e.id, &e).second);
    if (e.ph == "f") {
      CHECK(finishes.emplace(e.id, &e).second);
      CHECK(e.bp == "e");
    }
  }
  CHECK(starts.size() == finishes.size());
  for (const auto& [id, s] : starts) {
    auto f = finishes.find(id);
    REQUIRE(f != finishes.end());
    INFO("flow " << id << " " << s->name << ": " << s->ts << " -> " << f->second->ts);
    CHECK(s->ts <= f->second->ts);
    CHECK(s->pid != f->second->pid);  // between two tracks
  }
}

// The slice of track (pid, tid) that holds `ts` (nullptr: none).
inline const TraceEvent* slice_at(const ParsedTrace& t, int64_t pid, int64_t tid, double ts) {
  for (const TraceEvent* s : t.slices(pid, tid))
    if (s->ts <= ts + 1e-3 && ts <= s->end() + 1e-3) return s;
  return nullptr;
}

}  // namespace gt::testing
