// Daemon log lines: the journal format under systemd (syslog priority prefix, no timestamp or
// pid of their own) and the terminal format otherwise; JOURNAL_STREAM must name stderr itself.
#include <catch2/catch.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <sys/stat.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "libgtcore/logging.h"

namespace {

std::string log_line(bool journal, spdlog::level::level_enum level, const std::string& text) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("gt-test", sink);
  logger.set_formatter(gt::make_log_formatter(journal));
  logger.set_level(spdlog::level::trace);
  logger.log(level, text);
  return out.str();
}

}  // namespace

TEST_CASE("journal lines carry the syslog priority and nothing journald adds", "[core][logging]") {
  CHECK(log_line(true, spdlog::level::warn, "worker 0 stopped answering") ==
        "<4>gt-test: worker 0 stopped answering\n");
  CHECK(log_line(true, spdlog::level::err, "x") == "<3>gt-test: x\n");
  CHECK(log_line(true, spdlog::level::critical, "x") == "<2>gt-test: x\n");
  CHECK(log_line(true, spdlog::level::info, "x") == "<6>gt-test: x\n");
  CHECK(log_line(true, spdlog::level::debug, "x") == "<7>gt-test: x\n");
  CHECK(log_line(true, spdlog::level::trace, "x") == "<7>gt-test: x\n");
  // The terminal format: a timestamp, the program and pid, the level.
  const std::string line = log_line(false, spdlog::level::warn, "x");
  CHECK(line.rfind("<", 0) != 0);
  CHECK(line.find("gt-test[") != std::string::npos);
  CHECK(line.find("warning: x") != std::string::npos);
}

TEST_CASE("JOURNAL_STREAM counts only when it names the file descriptor", "[core][logging]") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  struct stat st {};
  REQUIRE(::fstat(::fileno(f), &st) == 0);
  const std::string same = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  const std::string other = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1);
  CHECK(gt::is_journal_stream(same.c_str(), ::fileno(f)));
  CHECK_FALSE(gt::is_journal_stream(other.c_str(), ::fileno(f)));  // stderr was redirected
  CHECK_FALSE(gt::is_journal_stream(nullptr, ::fileno(f)));        // not under systemd
  CHECK_FALSE(gt::is_journal_stream("garbage", ::fileno(f)));
  std::fclose(f);
}
