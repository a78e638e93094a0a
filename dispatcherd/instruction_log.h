// The instruction log (ARCHITECTURE §9): one line per event, in the original GT's column format so
// its grep/awk recipes work:  elapsed | #seq | EVENT | SOURCE | COMMAND | SIZE | details
//
// Columns are padded to the widest value each can hold (SOURCE: CLIENT:<any u64 session id>),
// so the log stays aligned. Elapsed is in seconds with microseconds: gt-trace builds its slices
// from it. Besides the file, a live recording (GET /api/trace, gt-trace --live) can tap the
// lines for a while; either one makes the log enabled.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "libgtcore/status.h"

namespace gt::dispatcher {

class InstructionLog {
 public:
  using Clock = std::chrono::steady_clock;

  // Column widths (tests check alignment against these).
  static constexpr int kEventWidth = 14;
  static constexpr int kSourceWidth = 27;   // "CLIENT:18446744073709551615"
  static constexpr int kCommandWidth = 14;  // "reduce_scatter", the longest op or comm name
  static constexpr int kSizeWidth = 9;      // "1023.9MB"; larger sizes widen the line

  // A live recording: the lines written while it is attached, up to `cap` bytes (the rest are
  // counted, not kept: a recording cannot grow the dispatcher without bound).
  struct Tap {
    explicit Tap(size_t cap_bytes) : cap(cap_bytes) {}
    std::string text;
    size_t cap;
    uint64_t dropped = 0;  // lines not kept
  };

  InstructionLog() = default;
  ~InstructionLog();
  InstructionLog(const InstructionLog&) = delete;
  InstructionLog& operator=(const InstructionLog&) = delete;

  // Opens (creates) `path` for appending, mode 0600 (an existing file is narrowed to 0600).
  Status open(const std::string& path);
  // Opens the same path again (after logrotate moved the file away: SIGHUP), also 0600. On
  // failure the log keeps writing to the file it had.
  Status reopen();
  // Callers test enabled() first so a disabled log costs one branch, not a format. True while a
  // file is open or a tap attached; then workers are also asked for timings (WorkerBatch.trace).
  bool enabled() const { return enabled_; }
  bool file_open() const { return file_ != nullptr; }
  void write(std::string_view event, std::string_view source, std::string_view command,
             uint64_t size, std::string_view details);
  // The same line into `tap` only (a recording starts with the state it needs: workers, sessions).
  void write_to(Tap& tap, std::string_view event, std::string_view source,
                std::string_view command, uint64_t size, std::string_view details) const;
  void flush();

  void attach(const std::shared_ptr<Tap>& tap);
  void detach(const std::shared_ptr<Tap>& tap);

  // Seconds since the log's start (the elapsed column's time base) of a steady-clock instant.
  double seconds_at(Clock::time_point t) const {
    return std::chrono::duration<double>(t - start_).count();
  }
  int64_t ns_at(Clock::time_point t) const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t - start_).count();
  }

 private:
  Status open_file(const std::string& path);
  static void format(fmt::memory_buffer& out, double t, uint64_t seq, std::string_view event,
                     std::string_view source, std::string_view command, uint64_t size,
                     std::string_view details);
  static void append(Tap& tap, const fmt::memory_buffer& line);

  std::FILE* file_ = nullptr;
  bool enabled_ = false;
  std::string path_;
  uint64_t seq_ = 0;
  Clock::time_point start_ = Clock::now();
  std::vector<std::shared_ptr<Tap>> taps_;
};

}  // namespace gt::dispatcher
