#include "tools/gt-trace/log_line.h"

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <vector>

namespace gt::trace {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// Where `key=` starts a field of `details` (at the start or after a space), or npos.
size_t find_key(std::string_view details, std::string_view key) {
  for (size_t at = details.find(key); at != std::string_view::npos; at = details.find(key, at + 1)) {
    if ((at == 0 || details[at - 1] == ' ') && at + key.size() < details.size() &&
        details[at + key.size()] == '=')
      return at;
  }
  return std::string_view::npos;
}

}  // namespace

std::optional<uint64_t> to_u64(std::string_view s) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<int64_t> to_i64(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> to_double(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::string copy(s);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(copy.c_str(), &end);
  if (errno != 0 || end != copy.c_str() + copy.size()) return std::nullopt;
  return v;
}

std::string LogLine::field(std::string_view key, std::string_view until) const {
  std::string_view d = details;
  const size_t at = find_key(d, key);
  if (at == std::string_view::npos) return "";
  const size_t from = at + key.size() + 1;
  size_t end = until.empty() ? std::string_view::npos : d.find(until, from);
  if (end == std::string_view::npos) end = d.size();
  return std::string(d.substr(from, end - from));
}

bool LogLine::has(std::string_view key) const {
  return find_key(details, key) != std::string_view::npos;
}

std::optional<uint64_t> LogLine::source_id(std::string_view kind) const {
  std::string_view s = source;
  if (s.size() <= kind.size() + 1 || s.substr(0, kind.size()) != kind || s[kind.size()] != ':')
    return std::nullopt;
  return to_u64(s.substr(kind.size() + 1));
}

std::optional<LogLine> parse_log_line(std::string_view line) {
  // Six separators; the details (the rest) may hold " | " themselves (an error message).
  std::vector<std::string_view> cols;
  size_t at = 0;
  for (int i = 0; i < 6; ++i) {
    size_t bar = line.find(" | ", at);
    if (bar == std::string_view::npos) return std::nullopt;
    cols.push_back(line.substr(at, bar - at));
    at = bar + 3;
  }
  cols.push_back(line.substr(at));
  std::string_view elapsed = trim(cols[0]), seq = trim(cols[1]);
  if (elapsed.empty() || elapsed.back() != 's' || seq.empty() || seq.front() != '#')
    return std::nullopt;
  auto t = to_double(elapsed.substr(0, elapsed.size() - 1));
  auto n = to_u64(seq.substr(1));
  if (!t || !n) return std::nullopt;
  LogLine l;
  l.t = *t;
  l.seq = *n;
  l.event = std::string(trim(cols[2]));
  l.source = std::string(trim(cols[3]));
  l.command = std::string(trim(cols[4]));
  l.size = std::string(trim(cols[5]));
  l.details = std::string(trim(cols[6]));
  return l;
}

}  // namespace gt::trace
