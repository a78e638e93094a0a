// gt-top (tools/gt-top, issue 12) against real daemons: --once shows both workers and both
// sessions with what they hold, in the order asked; --json is the StatusReport; the failures an
// operator meets (nothing listening, a silent port, no token, a wrong token, bad options) exit
// non-zero with a message; batch output and the dispatcher.yaml fallback; and the live view in a
// real terminal (tmux): its screen read back with capture-pane, keys sent with send-keys, the
// terminal's modes checked after q, Ctrl-C and SIGTERM.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "auth_setup.h"
#include "daemons.h"
#include "http_client.h"
#include "instr_builder.h"
#include "raw_client.h"
#include "test_text.h"

using namespace gt;
using namespace gt::testing;

namespace {

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Run {
  int rc;
  std::string out, err;
  double seconds;
};

// gt-top with `args`, standard output a file (not a terminal), no GT_HTTP / GT_TOKEN from the
// test's environment unless `env` sets them ("GT_TOKEN=..."), and never this machine's
// /etc/gt/dispatcher.yaml unless args name a --config.
Run gt_top(std::vector<std::string> args, const std::string& env = "") {
  if (std::find(args.begin(), args.end(), "--config") == args.end()) {
    args.push_back("--config");
    args.push_back("/nonexistent/dispatcher.yaml");
  }
  char tmpl[] = "/tmp/gt-top-err-XXXXXX";
  const int fd = ::mkstemp(tmpl);
  REQUIRE(fd >= 0);
  ::close(fd);
  std::string cmd = "env -u GT_HTTP -u GT_TOKEN " + env + " timeout 60 " + quote(bin_path("gt-top"));
  for (const auto& a : args) cmd += " " + quote(a);
  cmd += " 2>" + std::string(tmpl);
  const auto t0 = std::chrono::steady_clock::now();
  auto [rc, out] = shell(cmd);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Run r{rc, out, slurp(tmpl), secs};
  ::unlink(tmpl);
  return r;
}

bool has(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

std::string first_word(const std::string& line) {
  std::istringstream in(line);
  std::string w;
  in >> w;
  return w;
}

// The rows of the section whose title starts with `title` ("Workers:"): the lines after its
// column header (the recent errors have none), up to the next blank line.
std::vector<std::string> rows(const std::string& text, const std::string& title) {
  const auto ls = lines_of(text);
  std::vector<std::string> out;
  const size_t header = title == "Recent errors:" ? 0 : 1;
  for (size_t i = 0; i < ls.size(); ++i) {
    if (ls[i].rfind(title, 0) != 0) continue;
    for (size_t j = i + 1 + header; j < ls.size() && !ls[j].empty() && ls[j].find_first_not_of(' ') != std::string::npos; ++j)
      out.push_back(ls[j]);
    break;
  }
  return out;
}

std::vector<std::string> ids(const std::string& text, const std::string& title) {
  std::vector<std::string> out;
  for (const auto& r : rows(text, title)) out.push_back(first_word(r));
  return out;
}

std::string row(const std::string& text, const std::string& title, const std::string& id) {
  for (const auto& r : rows(text, title))
    if (first_word(r) == id) return r;
  return "";
}

size_t columns(const std::string& line) {
  return static_cast<size_t>(std::count_if(line.begin(), line.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// Two workers; session a holds a 1 MiB tensor, session b 1000 floats (3.9 KiB) and one failed add.
struct TwoSessions {
  std::string dir = temp_dir();
  Daemons d{DaemonOptions{2, {"--http-port", "0", "--http-port-file", dir + "/http.port"}, {}, {}}};
  int port = 0;
  std::string url;
  RawClient a{d.address()}, b{d.address()};
  std::string ida, idb;

  TwoSessions() {
    d.wait_for_workers(2);
    port = read_port_file(dir + "/http.port");
    url = "http://127.0.0.1:" + std::to_string(port);
    const v1::ServerMessage wa = a.hello(), wb = b.hello();
    REQUIRE(wa.has_welcome());
    REQUIRE(wb.has_welcome());
    ida = std::to_string(wa.welcome().session_id());
    idb = std::to_string(wb.welcome().session_id());
    a.send(batch_of({make_instr(OpId::k_ones, 1, {}, make_shape_dtype(Shape{262144}, DType::kFloat32))}));
    REQUIRE(a.request(v1::Request::SYNC).errors_size() == 0);
    b.send(batch_of({make_instr(OpId::k_ones, 1, {}, make_shape_dtype(Shape{1000}, DType::kFloat32)),
                     make_instr(OpId::k_ones, 2, {}, make_shape_dtype(Shape{3}, DType::kFloat32)),
                     make_instr(OpId::k_ones, 3, {}, make_shape_dtype(Shape{4}, DType::kFloat32)),
                     make_instr(OpId::k_add, 4, {2, 3})}));
    REQUIRE(b.request(v1::Request::SYNC).errors_size() == 1);
  }
  ~TwoSessions() { std::system(("rm -rf " + dir).c_str()); }
};

// A port nothing listens on (bound, then closed).
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// A tmux server of this test's own (its socket in `dir`), killed at the end.
struct Tmux {
  std::string sock;
  explicit Tmux(const std::string& dir) : sock(dir + "/tmux.sock") {
    if (shell("command -v tmux >/dev/null").first != 0)
      FAIL("no tmux: scripts/deps.sh installs the Debian package `tmux` this test needs");
  }
  ~Tmux() { shell("tmux -S " + quote(sock) + " kill-server >/dev/null 2>&1"); }
  std::string tmux(const std::string& args) const { return "tmux -S " + quote(sock) + " " + args; }
  // A 160 x 40 terminal running `command` (through the shell).
  void start(const std::string& name, const std::string& command) const {
    REQUIRE(shell(tmux("new-session -d -s " + name + " -x 160 -y 40 " + quote(command))).first == 0);
  }
  std::string screen(const std::string& name) const {
    return shell(tmux("capture-pane -p -t " + name + " 2>/dev/null")).second;
  }
  void keys(const std::string& name, const std::string& keys) const {
    shell(tmux("send-keys -t " + name + " " + keys));
  }
  bool alive(const std::string& name) const {
    return shell(tmux("has-session -t " + name + " 2>/dev/null")).first == 0;
  }
  pid_t pane_pid(const std::string& name) const {
    return std::atoi(shell(tmux("list-panes -t " + name + " -F '#{pane_pid}'")).second.c_str());
  }
  // The screen once `ok` holds for it (or the last one, after `seconds`).
  std::string wait_for(const std::string& name, const std::function<bool(const std::string&)>& ok,
                       double seconds = 20) const {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::string s;
    while (std::chrono::steady_clock::now() < end) {
      s = screen(name);
      if (ok(s)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return s;
  }
};

// The file `path` once it has content (what the shell wrapped around gt-top wrote after it).
std::string wait_file(const std::string& path, double seconds = 20) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::string s;
  while (std::chrono::steady_clock::now() < end) {
    s = slurp(path);
    if (!s.empty() && s.back() == '\n') break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return s;
}

// gt-top in a terminal, then (after it exits) its exit status and the terminal's modes.
std::string live_command(const std::string& args, const std::string& dir, const std::string& tag) {
  return "env -u GT_HTTP -u GT_TOKEN " + quote(bin_path("gt-top")) +
         " --config /nonexistent/dispatcher.yaml " + args + " 2>" + dir + "/" + tag + ".err; echo rc=$? >" +
         dir + "/" + tag + ".rc; stty -a >" + dir + "/" + tag + ".stty";
}

// After gt-top: line editing and echo back on (not "-icanon" / "-echo").
void check_terminal_restored(const std::string& stty) {
  INFO(stty);
  CHECK(has(stty, " icanon"));
  CHECK(!has(stty, "-icanon"));
  CHECK(has(stty, " echo "));
  CHECK(!has(stty, "-echo "));
}

}  // namespace

TEST_CASE("gt-top --once shows both workers and both sessions, in the order asked", "[gt-top]") {
  TwoSessions f;
  const Run r = gt_top({"--once", "--url", f.url});
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find('\x1b') == std::string::npos);  // plain text
  CHECK(has(r.out, "workers 2"));
  CHECK(has(r.out, "sessions 2"));
  CHECK(has(r.out, f.url));
  auto w = ids(r.out, "Workers:");
  std::sort(w.begin(), w.end());
  CHECK(w == std::vector<std::string>{"0", "1"});
  for (const char* id : {"0", "1"}) CHECK(has(row(r.out, "Workers:", id), "CPU"));
  const std::string ra = row(r.out, "Sessions:", f.ida), rb = row(r.out, "Sessions:", f.idb);
  CHECK(has(ra, "raw-test-client"));
  CHECK(has(ra, "1.0 MiB"));
  CHECK(has(rb, "raw-test-client"));
  CHECK(has(rb, "3.9 KiB"));
  // The worker holding a's tensor shows it (the workers' HELD column sums to both sessions).
  bool held = false;
  for (const auto& l : rows(r.out, "Workers:")) held = held || has(l, "1.0 MiB");
  CHECK(held);
  CHECK(has(r.out, "Recent errors: 1"));
  const auto errs = rows(r.out, "Recent errors:");
  REQUIRE(errs.size() == 1);
  CHECK(has(errs[0], "session " + f.idb));
  CHECK(has(errs[0], "add: shapes [3] and [4]"));
  CHECK(!has(errs[0], "add: add:"));

  // Orders: by memory a (1 MiB) first; by errors b first; by id ascending.
  CHECK(ids(gt_top({"--once", "--url", f.url, "--sort", "mem"}).out, "Sessions:") ==
        std::vector<std::string>{f.ida, f.idb});
  CHECK(ids(gt_top({"--once", "--url", f.url, "--sort", "errors"}).out, "Sessions:") ==
        std::vector<std::string>{f.idb, f.ida});
  auto by_id = ids(gt_top({"--once", "--url", f.url, "--sort", "id"}).out, "Sessions:");
  CHECK(std::is_sorted(by_id.begin(), by_id.end(), [](const std::string& x, const std::string& y) {
    return std::stoull(x) < std::stoull(y);
  }));
  CHECK(by_id.size() == 2);
  CHECK(ids(gt_top({"--once", "--url", f.url, "--sort", "id"}).out, "Workers:") ==
        std::vector<std::string>{"0", "1"});

  // 80 columns: every line fits, the rows are all there.
  const Run narrow = gt_top({"--once", "--url", f.url, "--width", "80"});
  REQUIRE(narrow.rc == 0);
  for (const auto& l : lines_of(narrow.out)) {
    INFO(l);
    CHECK(columns(l) <= 80);
  }
  CHECK(ids(narrow.out, "Workers:").size() == 2);
  CHECK(ids(narrow.out, "Sessions:").size() == 2);
}

TEST_CASE("gt-top --json prints the StatusReport /api/status serves", "[gt-top]") {
  TwoSessions f;
  const Run r = gt_top({"--json", "--url", f.url});
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  v1::StatusReport mine, theirs;
  REQUIRE(google::protobuf::util::JsonStringToMessage(r.out, &mine).ok());  // strict: no unknown fields
  REQUIRE(google::protobuf::util::JsonStringToMessage(http_get(f.port, "/api/status").body, &theirs).ok());
  CHECK(mine.version() == theirs.version());
  REQUIRE(mine.workers_size() == 2);
  REQUIRE(mine.sessions_size() == 2);
  REQUIRE(theirs.sessions_size() == 2);
  for (int i = 0; i < 2; ++i) {
    CHECK(mine.workers(i).id() == theirs.workers(i).id());
    CHECK(mine.workers(i).tensor_bytes() == theirs.workers(i).tensor_bytes());
    CHECK(mine.sessions(i).id() == theirs.sessions(i).id());
    CHECK(mine.sessions(i).tensor_bytes() == theirs.sessions(i).tensor_bytes());
    CHECK(mine.sessions(i).tensors() == theirs.sessions(i).tensors());
  }
  uint64_t held = 0;
  for (const auto& s : mine.sessions()) held += s.tensor_bytes();
  CHECK(held >= 262144 * 4 + 4000);
  CHECK(mine.recent_errors_size() == 1);
  CHECK(has(r.out, "\"tensor_bytes\""));  // the endpoint's field names, as served
}

TEST_CASE("gt-top says why it cannot show anything, and exits non-zero", "[gt-top]") {
  // Nothing listening.
  const std::string closed = "http://127.0.0.1:" + std::to_string(closed_port());
  for (const char* mode : {"--once", "--json"}) {
    const Run r = gt_top({mode, "--url", closed});
    INFO(r.err);
    CHECK(r.rc == 1);
    CHECK(r.out.empty());
    CHECK(has(r.err, "gt-top: cannot reach " + closed));
    CHECK(has(r.err, "refused"));
  }
  // A port that accepts and never answers: the deadline, not a hang.
  {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
    REQUIRE(::listen(fd, 4) == 0);
    socklen_t len = sizeof(a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    const Run r = gt_top({"--once", "--timeout", "0.5", "--url",
                          "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port))});
    ::close(fd);
    INFO(r.err);
    CHECK(r.rc == 1);
    CHECK(has(r.err, "no answer within 0.5 s"));
    CHECK(r.seconds < 10);
  }
  // No URL anywhere; bad options: exit 2 and a pointer to --help.
  const Run none = gt_top({"--once"});
  CHECK(none.rc == 2);
  CHECK(has(none.err, "--url http://HOST:PORT"));
  const Run bad = gt_top({"--once", "--url", closed, "--sort", "size"});
  CHECK(bad.rc == 2);
  CHECK(has(bad.err, "--sort: 'size' is not one of"));
  CHECK(has(bad.err, "--help"));
  const Run help = gt_top({"--help"});
  CHECK(help.rc == 0);
  CHECK(has(help.out, "--once"));
  CHECK(gt_top({"--version"}).out == "gt-top 0.1.0\n");

  // An HTTP server that is not a dispatcher's /api/status: 404, named.
  TwoSessions f;
  const Run wrong = gt_top({"--once", "--url", f.url + "/somewhere"});
  CHECK(wrong.rc == 1);
  CHECK(has(wrong.err, "404"));
}

TEST_CASE("gt-top with a users file: 401 without a token, an admin sees all, a user their own",
          "[gt-top][auth]") {
  AuthSetup auth({"admin", "alice", "bob"});
  auth.set_user_keys("admin", "    admin: true\n");
  const std::string dir = temp_dir(), port_file = dir + "/http.port";
  Daemons d(DaemonOptions{1,
                          {"--http-port", "0", "--http-port-file", port_file, "--users-file",
                           auth.users, "--worker-secret-file", auth.secret_file},
                          {"--worker-secret-file", auth.secret_file},
                          auth.tokens.at("admin")});
  d.wait_for_workers(1);
  const std::string url = "http://127.0.0.1:" + std::to_string(read_port_file(port_file));
  RawClient alice(d.address()), bob(d.address());
  const auto wa = alice.hello(0, 0, auth.tokens.at("alice")), wb = bob.hello(0, 0, auth.tokens.at("bob"));
  REQUIRE(wa.has_welcome());
  REQUIRE(wb.has_welcome());
  const std::string ida = std::to_string(wa.welcome().session_id());
  const std::string idb = std::to_string(wb.welcome().session_id());

  const Run none = gt_top({"--once", "--url", url});
  INFO(none.err);
  CHECK(none.rc == 1);
  CHECK(none.out.empty());
  CHECK(has(none.err, "401"));
  CHECK(has(none.err, "--token"));
  CHECK(gt_top({"--json", "--url", url}).rc == 1);
  const Run wrong = gt_top({"--once", "--url", url, "--token", "gt_not_a_token"});
  CHECK(wrong.rc == 1);
  CHECK(has(wrong.err, "the token was refused"));

  const Run admin = gt_top({"--once", "--url", url}, "GT_TOKEN=" + auth.tokens.at("admin"));
  INFO(admin.out << admin.err);
  REQUIRE(admin.rc == 0);
  CHECK(has(row(admin.out, "Sessions:", ida), "alice"));
  CHECK(has(row(admin.out, "Sessions:", idb), "bob"));

  const std::string tf = dir + "/alice.token";
  std::ofstream(tf) << auth.tokens.at("alice") << "\n";
  const Run mine = gt_top({"--once", "--url", url, "--token-file", tf});
  INFO(mine.out << mine.err);
  REQUIRE(mine.rc == 0);
  CHECK(ids(mine.out, "Sessions:") == std::vector<std::string>{ida});
  CHECK(!has(mine.out, "bob"));

  // The live view gives up on a refused token too (retrying cannot help), after putting the
  // terminal back.
  Tmux t(dir);
  t.start("auth", live_command("--url " + url, dir, "auth"));
  const std::string rc = wait_file(dir + "/auth.rc");
  CHECK(rc == "rc=1\n");
  CHECK(has(slurp(dir + "/auth.err"), "401"));
  check_terminal_restored(wait_file(dir + "/auth.stty"));
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("gt-top prints a snapshot every interval when not on a terminal, and finds the port "
          "in dispatcher.yaml", "[gt-top]") {
  TwoSessions f;
  const Run batch = gt_top({"--url", f.url, "--interval", "0.2", "--count", "3"});
  INFO(batch.out << batch.err);
  CHECK(batch.rc == 0);
  size_t snapshots = 0;
  for (const auto& l : lines_of(batch.out)) snapshots += l.rfind("gt-top  dispatcher", 0) == 0;
  CHECK(snapshots == 3);
  CHECK(batch.out.find('\x1b') == std::string::npos);

  // No --url: http_port 0 and the port file, as a dispatcher.yaml would say.
  const std::string cfg = f.dir + "/dispatcher.yaml";
  std::ofstream(cfg) << "http_port: 0\nhttp_port_file: \"" << f.dir << "/http.port\"\n";
  const Run c = gt_top({"--once", "--config", cfg});
  INFO(c.err);
  CHECK(c.rc == 0);
  CHECK(has(c.out, f.url));
  CHECK(ids(c.out, "Workers:").size() == 2);
  // GT_HTTP names it too.
  CHECK(gt_top({"--once"}, "GT_HTTP=" + f.url).rc == 0);
}

TEST_CASE("gt-top live in a terminal: the worker rows on screen, keys, the terminal restored",
          "[gt-top][tmux]") {
  TwoSessions f;
  Tmux t(f.dir);
  const std::string args = "--url " + f.url + " --interval 0.3";
  auto shows_rows = [&](const std::string& s) {
    return ids(s, "Workers:").size() == 2 && !row(s, "Sessions:", f.ida).empty() &&
           !row(s, "Sessions:", f.idb).empty();
  };

  // q quits.
  t.start("top", live_command(args, f.dir, "q"));
  std::string screen = t.wait_for("top", shows_rows);
  INFO(screen);
  REQUIRE(shows_rows(screen));
  auto w = ids(screen, "Workers:");
  std::sort(w.begin(), w.end());
  CHECK(w == std::vector<std::string>{"0", "1"});
  CHECK(has(row(screen, "Sessions:", f.ida), "1.0 MiB"));
  CHECK(has(row(screen, "Sessions:", f.idb), "3.9 KiB"));
  CHECK(has(screen, "sort: ops"));
  CHECK(has(screen, "q quit"));  // the key help on the last row
  for (const auto& l : lines_of(screen)) CHECK(columns(l) <= 160);
  // s: the next sort key (mem), a's 1 MiB first; S back.
  t.keys("top", "s");
  screen = t.wait_for("top", [](const std::string& s) { return has(s, "sort: mem"); });
  CHECK(has(screen, "sort: mem"));
  CHECK(ids(screen, "Sessions:") == std::vector<std::string>{f.ida, f.idb});
  t.keys("top", "S");
  CHECK(has(t.wait_for("top", [](const std::string& s) { return has(s, "sort: ops"); }), "sort: ops"));
  t.keys("top", "q");
  CHECK(wait_file(f.dir + "/q.rc") == "rc=0\n");
  CHECK(slurp(f.dir + "/q.err").empty());
  check_terminal_restored(wait_file(f.dir + "/q.stty"));

  // Ctrl-C quits as q does.
  t.start("ctrlc", live_command(args, f.dir, "c"));
  REQUIRE(shows_rows(t.wait_for("ctrlc", shows_rows)));
  t.keys("ctrlc", "C-c");
  CHECK(wait_file(f.dir + "/c.rc") == "rc=0\n");
  check_terminal_restored(wait_file(f.dir + "/c.stty"));

  // SIGTERM: the terminal put back, 128 + 15.
  t.start("term", live_command(args, f.dir, "t"));
  REQUIRE(shows_rows(t.wait_for("term", shows_rows)));
  const pid_t shell_pid = t.pane_pid("term");
  const pid_t top_pid = std::atoi(shell("ps -o pid= --ppid " + std::to_string(shell_pid)).second.c_str());
  REQUIRE(top_pid > 0);
  REQUIRE(::kill(top_pid, SIGTERM) == 0);
  CHECK(wait_file(f.dir + "/t.rc") == "rc=143\n");
  check_terminal_restored(wait_file(f.dir + "/t.stty"));

  // A dispatcher that cannot be reached: said on screen, retried, q still quits.
  const std::string closed = "http://127.0.0.1:" + std::to_string(closed_port());
  t.start("down", live_command("--url " + closed + " --interval 0.3", f.dir, "d"));
  screen = t.wait_for("down", [](const std::string& s) { return has(s, "cannot reach"); });
  CHECK(has(screen, "cannot reach " + closed));
  t.keys("down", "q");
  CHECK(wait_file(f.dir + "/d.rc") == "rc=0\n");
  for (const char* s : {"top", "ctrlc", "term", "down"}) CHECK(!t.alive(s));
}
