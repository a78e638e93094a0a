// The instruction log's format and plumbing: columns aligned for the widest value each holds (a
// session id near 2^64, the longest op name, a WORKER_LEAVE), elapsed in microseconds, live
// taps (enabled without a file, capped), and reopen after the file was moved away (logrotate).
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dispatcherd/instruction_log.h"
#include "test_text.h"

using gt::dispatcher::InstructionLog;
using gt::testing::lines_of;
using gt::testing::slurp;

namespace {

// Where the first six " | " separators are.
std::vector<size_t> separators(const std::string& line) {
  std::vector<size_t> at;
  for (size_t p = line.find(" | "); p != std::string::npos && at.size() < 6;
       p = line.find(" | ", p + 3))
    at.push_back(p);
  return at;
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/gt-ilog-unit-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

TEST_CASE("instruction log columns stay aligned for the widest sources, commands and sizes",
          "[log]") {
  TempDir dir;
  const std::string path = dir.path + "/i.log";
  {
    InstructionLog log;
    REQUIRE(log.open(path).is_ok());
    CHECK(log.enabled());
    log.write("WORKER_JOIN", "WORKER:0", "Hello", 0, "device=cpu");
    log.write("CONNECT", "CLIENT:18446744073709551615", "Hello", 0, "name=p user=u");
    log.write("RECV", "CLIENT:1", "strided_copy_", 1048575, "id=1");
    log.write("PEER", "WORKER:4294967295", "reduce_scatter", 1023ull << 20, "tag=1");
    log.write("REFUSE", "CONN:18446744073709551615", "-", 1, "why | with a bar");
    log.write("WORKER_LEAVE", "WORKER:1", "-", 0, "disconnected");
  }
  const auto lines = lines_of(slurp(path));
  REQUIRE(lines.size() == 6);
  const auto first = separators(lines[0]);
  REQUIRE(first.size() == 6);
  double last_t = -1;
  for (const auto& l : lines) {
    INFO(l);
    CHECK(separators(l) == first);
    // Elapsed in seconds with microseconds: "<digits>.<6 digits>s".
    const std::string elapsed = l.substr(0, first[0]);
    const size_t dot = elapsed.find('.');
    REQUIRE(dot != std::string::npos);
    CHECK(elapsed.size() - dot - 1 == 7);  // six digits and the 's'
    const double t = std::stod(elapsed);
    CHECK(t >= last_t);
    last_t = t;
  }
  CHECK(lines[1].find("| CLIENT:18446744073709551615 |") != std::string::npos);
  CHECK(lines[2].find("  1024.0KB |") != std::string::npos);
  CHECK(lines[3].find("  1023.0MB |") != std::string::npos);
}

TEST_CASE("a live tap gets the lines while attached, without a file, up to its cap", "[log]") {
  InstructionLog log;
  CHECK(!log.enabled());
  auto tap = std::make_shared<InstructionLog::Tap>(1 << 20);
  log.attach(tap);
  CHECK(log.enabled());
  CHECK(!log.file_open());
  log.write_to(*tap, "WORKER_INFO", "WORKER:0", "-", 0, "device=cpu name=x");
  log.write("RECV", "CLIENT:7", "add", 64, "id=3");
  log.detach(tap);
  CHECK(!log.enabled());
  log.write("RECV", "CLIENT:7", "add", 64, "id=4");  // after the recording: not in it
  const auto lines = lines_of(tap->text);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].find("| #000000 | WORKER_INFO") != std::string::npos);
  CHECK(lines[1].find("| #000001 | RECV") != std::string::npos);
  CHECK(lines[1].find("id=3") != std::string::npos);
  CHECK(separators(lines[0]) == separators(lines[1]));

  auto small = std::make_shared<InstructionLog::Tap>(300);
  log.attach(small);
  for (int i = 0; i < 10; ++i) log.write("RECV", "CLIENT:7", "add", 64, "id=5");
  log.detach(small);
  CHECK(small->text.size() <= 300);
  CHECK(lines_of(small->text).size() + small->dropped == 10);
  CHECK(small->dropped >= 7);
}

TEST_CASE("reopen writes to a new file after the old one was moved away", "[log]") {
  TempDir dir;
  const std::string path = dir.path + "/i.log";
  InstructionLog log;
  REQUIRE(log.open(path).is_ok());
  log.write("RECV", "CLIENT:1", "add", 64, "id=1 before");
  log.flush();
  REQUIRE(std::rename(path.c_str(), (path + ".1").c_str()) == 0);
  log.write("RECV", "CLIENT:1", "add", 64, "id=2 still buffered for the old file");
  REQUIRE(log.reopen().is_ok());
  log.write("RECV", "CLIENT:1", "add", 64, "id=3 after");
  log.flush();
  const std::string old_text = slurp(path + ".1"), new_text = slurp(path);
  CHECK(old_text.find("id=1 before") != std::string::npos);
  CHECK(old_text.find("id=2") != std::string::npos);
  CHECK(old_text.find("id=3") == std::string::npos);
  CHECK(new_text.find("id=3 after") != std::string::npos);
  CHECK(lines_of(new_text).size() == 1);
  // The sequence goes on across files.
  CHECK(new_text.find("#000003") != std::string::npos);
}
