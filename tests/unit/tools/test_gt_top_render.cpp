// gt-top's screen from a hand-built StatusReport (tools/gt-top/render.h): the units, the meters
// and sparklines, the tables' columns and alignment, every sort key, what a narrow terminal
// drops, and text from the dispatcher that must not reach the terminal as control codes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "tools/gt-top/fetch_status.h"
#include "tools/gt-top/render.h"
#include "tools/gt-top/table.h"
#include "tools/gt-top/units.h"

using namespace gt;
using namespace gt::top;

namespace {

constexpr uint64_t kGiB = 1ull << 30, kMiB = 1ull << 20;

// Three workers, three sessions, two users, two recent errors: every figure chosen so each sort
// key gives a different order.
v1::StatusReport sample() {
  v1::StatusReport s;
  s.set_version("9.8.7");
  s.set_uptime_s(3725);  // 62 min
  s.set_sessions_started(9);
  s.set_bytes_from_clients(2048);
  s.set_bytes_to_clients(1024);
  auto worker = [&](uint32_t id, const char* dev, uint64_t used, uint64_t cap, double ops,
                    double busy, uint64_t queue, uint64_t in_flight, uint64_t errors) {
    v1::WorkerStatus* w = s.add_workers();
    w->set_id(id);
    w->set_device_kind("cpu");
    w->set_device_name(dev);
    w->set_memory_used_bytes(used);
    w->set_memory_capacity_bytes(cap);
    w->set_ops_per_s(ops);
    w->set_busy_fraction(busy);
    w->set_queue_depth(queue);
    w->set_instructions_in_flight(in_flight);
    w->set_errors(errors);
    w->set_tensors(id + 10);
    w->set_tensor_bytes(used);
    w->set_heartbeat_age_s(0.25);
  };
  // Deliberately not in id order.
  worker(1, "b-dev", 3 * kGiB, 4 * kGiB, 5000, 0.9, 0, 0, 2);
  worker(2, "c-dev", 0, 4 * kGiB, 0, 0, 1, 7, 0);
  worker(0, "a-dev", 1 * kGiB, 4 * kGiB, 10, 0.25, 5, 0, 0);
  s.mutable_workers(0)->set_peer_bytes_sent(3 * kMiB);
  s.mutable_workers(0)->set_peer_bytes_received(512);
  for (double v : {0.0, 1000.0, 5000.0, 2500.0}) s.mutable_workers(0)->add_ops_per_s_history(v);

  auto session = [&](uint64_t id, const char* user, const char* program, double ops,
                     uint64_t bytes, uint64_t queued, uint64_t errors, double p50, double p99) {
    v1::SessionStatus* x = s.add_sessions();
    x->set_id(id);
    x->set_user(user);
    x->set_program(program);
    x->set_ops_per_s(ops);
    x->set_tensor_bytes(bytes);
    x->set_tensors(bytes ? 4 : 0);
    x->set_instructions_queued(queued);
    x->set_instructions(1234);
    x->set_errors(errors);
    x->set_age_s(42);
    if (p99 > 0) {
      x->mutable_sync_latency()->set_count(10);
      x->mutable_sync_latency()->set_p50_s(p50);
      x->mutable_sync_latency()->set_p99_s(p99);
    }
  };
  session(101, "alice", "train.py", 2500, kMiB, 3, 0, 0.0012, 0.25);
  s.mutable_sessions(0)->set_hot_paths(2);  // hot paths / hits (issue 11)
  s.mutable_sessions(0)->set_hot_path_hits(230);
  session(7, "bob", "eval", 0, 5000, 0, 1, 0.0000152, 0.5);
  // Text from a client that must not move the cursor or clear the screen.
  session(55, "", "evil\x1b[2J\nprog\xc2\x9b", 0, 0, 9, 0, 0, 0);

  v1::UserStatus* a = s.add_users();
  a->set_name("alice");
  a->set_sessions(1);
  a->set_tensor_bytes(kMiB);
  a->set_ops_per_s(2500);
  v1::UserStatus* b = s.add_users();
  b->set_name("bob");
  b->set_sessions(1);
  b->set_tensor_bytes(5000);
  b->set_errors(1);

  v1::RecentError* e1 = s.add_recent_errors();  // oldest first, as the dispatcher keeps them
  e1->set_session(7);
  e1->set_user("bob");
  e1->set_op("add");
  e1->set_message("shapes [3] and [4]\ndo not broadcast");
  e1->set_unix_time_s(1.7e9);
  v1::RecentError* e2 = s.add_recent_errors();
  e2->set_session(7);
  e2->set_user("bob");
  e2->set_op("matmul");
  e2->set_message("matmul: the newest");  // the op already named: not twice
  e2->set_unix_time_s(1.7e9 + 5);
  s.set_unix_time_s(1.7e9 + 6);
  return s;
}

RenderOptions opts(size_t width = 0, SortKey key = SortKey::kOps, bool unicode = true) {
  return {width, key, unicode, "http://127.0.0.1:9"};
}

// The lines of the section titled `title` ("Workers: 3"): its header, then its rows.
std::vector<std::string> section(const std::vector<Line>& lines, const std::string& title) {
  std::vector<std::string> out;
  bool in = false;
  for (const auto& l : lines) {
    if (l.kind == LineKind::kSection) {
      in = l.text == title;
      continue;
    }
    if (in && (l.kind == LineKind::kHeader || l.kind == LineKind::kRow || l.kind == LineKind::kNote))
      out.push_back(l.text);
  }
  return out;
}

std::string first_word(const std::string& line) {
  std::istringstream in(line);
  std::string w;
  in >> w;
  return w;
}

// The first word of each row under `title` (ids), in order.
std::vector<std::string> ids(const std::vector<Line>& lines, const std::string& title) {
  auto rows = section(lines, title);
  std::vector<std::string> out;
  for (size_t i = 1; i < rows.size(); ++i) out.push_back(first_word(rows[i]));
  return out;
}

using V = std::vector<std::string>;

std::string row_of(const std::vector<Line>& lines, const std::string& title, const std::string& id) {
  for (const auto& r : section(lines, title))
    if (first_word(r) == id) return r;
  FAIL("no row " << id << " under " << title);
  return "";
}

bool has(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("gt-top units: bytes, rates, durations", "[gt-top]") {
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(1024) == "1.0 KiB");
  CHECK(format_bytes(4000) == "3.9 KiB");
  CHECK(format_bytes(kMiB) == "1.0 MiB");
  CHECK(format_bytes(kMiB - 1) == "1.0 MiB");  // not "1024.0 KiB"
  CHECK(format_bytes(3 * kGiB / 2) == "1.5 GiB");
  CHECK(format_bytes(5ull << 40) == "5.0 TiB");
  CHECK(format_rate(0) == "0");
  CHECK(format_rate(-1) == "0");
  CHECK(format_rate(999) == "999");
  CHECK(format_rate(999.7) == "1.0k");
  CHECK(format_rate(1500) == "1.5k");
  CHECK(format_rate(2.5e6) == "2.50M");
  CHECK(format_seconds(0, true) == "0 s");
  CHECK(format_seconds(15.2e-6, true) == "15 µs");
  CHECK(format_seconds(15.2e-6, false) == "15 us");
  CHECK(format_seconds(0.0012, true) == "1.2 ms");
  CHECK(format_seconds(3.44, true) == "3.4 s");
  CHECK(format_seconds(300, true) == "5 min");
  CHECK(format_seconds(3 * 3600, true) == "3.0 h");
  CHECK(format_seconds(3 * 86400, true) == "3.0 d");
}

TEST_CASE("gt-top meters, sparklines and text widths", "[gt-top]") {
  CHECK(format_bar(0.5, 10, "") == "[|||||     ]");
  CHECK(format_bar(0.75, 10, "75%") == "[|||||||75%]");
  CHECK(format_bar(0.2, 10, "20%") == "[||     20%]");
  CHECK(format_bar(2.0, 4, "") == "[||||]");   // clamped
  CHECK(format_bar(-1, 4, "") == "[    ]");
  CHECK(format_bar(0.5, 4, "toolong") == "[long]");  // the label's end, never wider
  CHECK(sparkline({0, 1, 2, 4, 8}, 5, false) == " .:=#");
  CHECK(sparkline({8, 8}, 4, false) == "  ##");  // short history: blanks first
  CHECK(sparkline({0, 0.5, 8}, 3, true) == " ▁█");
  CHECK(sparkline({1, 2, 3, 4, 5, 6}, 3, false) == "+*#");  // the last `cells` samples
  CHECK(display_width("µs ▁█") == 5);
  CHECK(clamp_width("ab▁█cd", 3) == "ab▁");
  CHECK(clamp_width("abc", 10) == "abc");
  CHECK(pad("µ", 3, true) == "µ  ");
  CHECK(pad("7", 3, false) == "  7");
  CHECK(printable("a\x1b[2Jb\nc\x7f") == "a [2Jb c ");
  CHECK(printable("caf\xc3\xa9") == "caf\xc3\xa9");     // UTF-8 kept
  CHECK(printable("x\xc2\x9b" "1m") == "x 1m");         // C1 CSI dropped
  CHECK(printable("\xff\xc3") == "??");                 // invalid UTF-8
  CHECK(printable("\xe0\x80\xaf") == "???");            // overlong
}

TEST_CASE("gt-top tables: sized to their cells, aligned, fitted by dropping columns", "[gt-top]") {
  const std::vector<Column> cols = {{"ID", false, 100}, {"NAME", true, 50}, {"EXTRA", false, 10},
                                    {"N", false, 60}};
  const std::vector<std::vector<std::string>> rows = {{"1", "alpha", "x", "10"},
                                                      {"200", "b", "yyyyyy", "7"}};
  const auto all = layout_table(cols, rows, 0);
  REQUIRE(all.size() == 3);
  CHECK(all[0] == "  ID  NAME    EXTRA   N");
  CHECK(all[1] == "   1  alpha       x  10");
  CHECK(all[2] == " 200  b      yyyyyy   7");
  // 20 columns: EXTRA (lowest keep) goes first.
  const auto narrow = layout_table(cols, rows, 20);
  CHECK(narrow[0] == "  ID  NAME    N");
  CHECK(narrow[2] == " 200  b       7");
  // 12: NAME goes too; 3: the first column stays, cut at the width.
  CHECK(layout_table(cols, rows, 12)[0] == "  ID   N");
  CHECK(layout_table(cols, rows, 3)[2] == " 20");
}

TEST_CASE("gt-top renders a status: header, tables, errors", "[gt-top]") {
  const v1::StatusReport s = sample();
  const auto lines = render_status(s, opts());
  const std::string text = to_text(lines);
  INFO(text);
  REQUIRE(lines.size() > 10);
  CHECK(lines[0].kind == LineKind::kTitle);
  CHECK(has(lines[0].text, "dispatcher 9.8.7"));
  CHECK(has(lines[0].text, "http://127.0.0.1:9"));
  CHECK(has(lines[0].text, "up 62 min"));
  CHECK(has(lines[0].text, "sort: ops"));
  CHECK(lines[1].kind == LineKind::kSummary);
  CHECK(has(lines[1].text, "workers 3"));
  CHECK(has(lines[1].text, "sessions 3 (9 started)"));
  CHECK(has(lines[1].text, "users 2"));
  CHECK(has(lines[1].text, "ops/s 5.0k"));            // 5000 + 10 + 0
  CHECK(has(lines[1].text, "memory 4.0 GiB / 12.0 GiB"));
  CHECK(has(lines[1].text, "held 1.0 MiB"));           // 1 MiB + 5000 B
  CHECK(has(lines[1].text, "clients in/out 2.0 KiB / 1.0 KiB"));
  CHECK(has(lines[1].text, "recent errors 2"));
  CHECK(!has(lines[1].text, "workers in/out"));        // zero: not shown

  const auto w = section(lines, "Workers: 3");
  REQUIRE(w.size() == 4);
  for (const char* h : {"WORKER", "DEVICE", "MEMORY", "BUSY", "OPS/S", "LAST MINUTE", "QUEUE",
                        "IN FLIGHT", "TENSORS", "HELD", "PEER OUT/IN", "ERRORS", "HEARTBEAT"})
    CHECK(has(w[0], h));
  const std::string w1 = row_of(lines, "Workers: 3", "1");
  CHECK(has(w1, "b-dev"));
  CHECK(has(w1, "[|||||||||||3.0GiB/4.0GiB]"));  // 18 of 24 cells, the label over the last 13
  CHECK(has(w1, "[|||||||90%]"));
  CHECK(has(w1, "5.0k"));
  CHECK(has(w1, "3.0 MiB / 512 B"));
  CHECK(has(w1, "  ▂█▄"));  // 0, 1000, 5000, 2500 of max 5000
  CHECK(has(w1, "250.0 ms"));
  const std::string w2 = row_of(lines, "Workers: 3", "2");
  CHECK(has(w2, "[               0B/4.0GiB]"));
  // Numbers are right-aligned: the header's right edge is the cells' right edge.
  const size_t ops_end = w[0].find("OPS/S") + 5;
  CHECK(w1.substr(ops_end - 4, 4) == "5.0k");
  CHECK(w2.substr(ops_end - 1, 1) == "0");

  const std::string a = row_of(lines, "Sessions: 3", "101");
  CHECK(has(a, "alice"));
  CHECK(has(a, "train.py"));
  CHECK(has(a, "2.5k"));
  CHECK(has(a, "1.0 MiB"));
  CHECK(has(a, "1.2 ms"));
  CHECK(has(a, "250.0 ms"));
  CHECK(has(a, "42.0 s"));
  CHECK(has(a, " 2/230 "));
  CHECK(has(section(lines, "Sessions: 3")[0], "HOT"));
  const std::string b = row_of(lines, "Sessions: 3", "7");
  CHECK(has(b, "bob"));
  CHECK(has(b, "4.9 KiB"));
  CHECK(has(b, "15 µs"));
  const std::string e = row_of(lines, "Sessions: 3", "55");
  CHECK(has(e, " -  "));  // no user
  CHECK(has(e, "evil [2J prog "));  // ESC, newline and the C1 CSI made spaces
  CHECK(has(e, "       -         -"));  // no syncs: no latencies
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find("\xc2\x9b") == std::string::npos);

  CHECK(ids(lines, "Users: 2") == V{"alice", "bob"});
  CHECK(has(row_of(lines, "Users: 2", "bob"), "4.9 KiB"));

  const auto errs = section(lines, "Recent errors: 2");
  REQUIRE(errs.size() == 2);
  CHECK(has(errs[0], "session 7 (bob)  matmul: the newest"));  // newest first
  CHECK(!has(errs[0], "matmul: matmul"));
  CHECK(has(errs[1], "add: shapes [3] and [4] do not broadcast"));
  CHECK(has(errs[0], format_clock(1.7e9 + 5)));
}

TEST_CASE("gt-top sort keys order workers, sessions and users", "[gt-top]") {
  const v1::StatusReport s = sample();
  auto order = [&](SortKey k) {
    const auto lines = render_status(s, opts(0, k));
    return std::vector<V>{ids(lines, "Workers: 3"), ids(lines, "Sessions: 3"), ids(lines, "Users: 2")};
  };
  // Largest first, ties by id.
  CHECK(order(SortKey::kOps) == std::vector<V>{{"1", "0", "2"}, {"101", "7", "55"}, {"alice", "bob"}});
  CHECK(order(SortKey::kMem) == std::vector<V>{{"1", "0", "2"}, {"101", "7", "55"}, {"alice", "bob"}});
  CHECK(order(SortKey::kBusy) == std::vector<V>{{"1", "0", "2"}, {"7", "101", "55"}, {"alice", "bob"}});
  CHECK(order(SortKey::kQueue) == std::vector<V>{{"2", "0", "1"}, {"55", "101", "7"}, {"alice", "bob"}});
  CHECK(order(SortKey::kErrors) == std::vector<V>{{"1", "0", "2"}, {"7", "55", "101"}, {"bob", "alice"}});
  CHECK(order(SortKey::kId) == std::vector<V>{{"0", "1", "2"}, {"7", "55", "101"}, {"alice", "bob"}});
  CHECK(order(SortKey::kUser) == std::vector<V>{{"0", "1", "2"}, {"55", "101", "7"}, {"alice", "bob"}});
  CHECK(has(render_status(s, opts(0, SortKey::kQueue))[0].text, "sort: queue"));

  CHECK(parse_sort_key("mem") == SortKey::kMem);
  CHECK(!parse_sort_key("memory"));
  CHECK(next_sort_key(SortKey::kOps, 1) == SortKey::kMem);
  CHECK(next_sort_key(SortKey::kUser, 1) == SortKey::kOps);
  CHECK(next_sort_key(SortKey::kOps, -1) == SortKey::kUser);
}

TEST_CASE("gt-top fits the width: low-priority columns dropped, every line cut", "[gt-top]") {
  const v1::StatusReport s = sample();
  const auto full = render_status(s, opts());
  size_t widest = 0;
  for (const auto& l : full) widest = std::max(widest, display_width(l.text));
  CHECK(widest > 150);  // every column: wider than a terminal
  for (size_t width : {200, 160, 120, 100, 80, 60, 40, 20}) {
    INFO("width " << width);
    const auto lines = render_status(s, opts(width));
    for (const auto& l : lines) CHECK(display_width(l.text) <= width);
    // The same rows in the same order whatever the width.
    CHECK(ids(lines, "Workers: 3") == V{"1", "0", "2"});
    CHECK(ids(lines, "Sessions: 3") == V{"101", "7", "55"});
    if (width >= 80) {
      const auto w = section(lines, "Workers: 3");
      CHECK(has(w[0], "MEMORY"));
      CHECK(has(w[0], "OPS/S"));
      CHECK(has(w[0], "ERRORS"));
      CHECK(has(w[0], "LAST MINUTE") == (width >= 158));  // the first to go (158: all of them)
      CHECK(has(w[0], "TENSORS") == (width >= 108));
      const auto x = section(lines, "Sessions: 3");
      CHECK(has(x[0], "USER"));
      CHECK(has(x[0], "HELD"));
    }
  }
  // The summary wraps at its separators rather than being cut.
  const auto narrow = render_status(s, opts(60));
  size_t summary_lines = 0;
  std::string summary;
  for (const auto& l : narrow)
    if (l.kind == LineKind::kSummary) ++summary_lines, summary += l.text + " ";
  CHECK(summary_lines >= 2);
  CHECK(has(summary, "memory 4.0 GiB / 12.0 GiB"));
}

TEST_CASE("gt-top ASCII mode writes no byte above 0x7f", "[gt-top]") {
  const std::string text = to_text(render_status(sample(), opts(0, SortKey::kOps, false)));
  INFO(text);
  CHECK(std::none_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }));
  CHECK(has(text, "15 us"));
}

TEST_CASE("gt-top renders an empty status", "[gt-top]") {
  v1::StatusReport s;
  const auto lines = render_status(s, opts(80));
  CHECK(section(lines, "Workers: 0") == V{" none"});
  CHECK(section(lines, "Sessions: 0") == V{" none"});
  CHECK(section(lines, "Recent errors: 0") == V{" none"});
  CHECK(has(lines[0].text, "dispatcher ?"));
}

TEST_CASE("gt-top reads /api/status JSON, ignoring fields it does not know", "[gt-top]") {
  auto r = parse_status_json(
      R"({"version":"0.1.0","uptime_s":1.5,"workers":[{"id":3,"memory_used_bytes":"123456789012",)"
      R"("a_newer_field":{"x":1}}],"sessions":[{"id":"18446744073709551615","user":"u"}],)"
      R"("something_else":[1,2]})");
  REQUIRE(r.is_ok());
  CHECK(r->workers(0).id() == 3);
  CHECK(r->workers(0).memory_used_bytes() == 123456789012ull);
  CHECK(r->sessions(0).id() == 18446744073709551615ull);
  CHECK(!parse_status_json("<html>").is_ok());
  CHECK(!parse_status_json(R"({"workers":"no"})").is_ok());
}
