// One line of the instruction log (dispatcherd/instruction_log.h), as gt-trace reads it:
//   elapsed | #seq | EVENT | SOURCE | COMMAND | SIZE | details
// Details are space-separated key=value fields. Lines that are not log lines (comments, blank,
// another program's output) are skipped by the parser, not fatal: a log may be cut anywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gt::trace {

struct LogLine {
  double t = 0;  // seconds in the log's time base
  uint64_t seq = 0;
  std::string event, source, command, size, details;

  // The value of `key=` in the details ("" when absent): up to the next space, or for the keys
  // whose values may hold spaces (a program or device name), up to `until` (" user=") or the end.
  std::string field(std::string_view key, std::string_view until = " ") const;
  bool has(std::string_view key) const;
  // SOURCE as "KIND:<id>": the id when the kind matches.
  std::optional<uint64_t> source_id(std::string_view kind) const;
};

std::optional<LogLine> parse_log_line(std::string_view line);

// Numbers in fields (nullopt when absent or malformed).
std::optional<uint64_t> to_u64(std::string_view s);
std::optional<int64_t> to_i64(std::string_view s);
std::optional<double> to_double(std::string_view s);

}  // namespace gt::trace
