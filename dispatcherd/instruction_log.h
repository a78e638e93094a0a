// The instruction log (ARCHITECTURE §9): one line per event, in the original GT's column format so
// its grep/awk recipes work:  elapsed | #seq | EVENT | SOURCE | COMMAND | SIZE | details
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>

#include "libgtcore/status.h"

namespace gt::dispatcher {

class InstructionLog {
 public:
  InstructionLog() = default;
  ~InstructionLog();
  InstructionLog(const InstructionLog&) = delete;
  InstructionLog& operator=(const InstructionLog&) = delete;

  // Opens (creates) `path` for appending, mode 0600 (an existing file is narrowed to 0600).
  Status open(const std::string& path);
  // Opens the same path again (after logrotate moved the file away: SIGHUP), also 0600. On
  // failure the log keeps writing to the file it had.
  Status reopen();
  // Callers test enabled() first so a disabled log costs one branch, not a format.
  bool enabled() const { return file_ != nullptr; }
  void write(std::string_view event, std::string_view source, std::string_view command,
             uint64_t size, std::string_view details);
  void flush();

 private:
  Status open_file(const std::string& path);

  std::FILE* file_ = nullptr;
  std::string path_;
  uint64_t seq_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace gt::dispatcher
