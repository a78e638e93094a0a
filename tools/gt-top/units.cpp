#include "tools/gt-top/units.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

namespace gt::top {

std::string format_bytes(uint64_t n) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (n < 1024) return fmt::format("{} B", n);
  double v = static_cast<double>(n);
  size_t i = 0;
  while (v >= 1024 && i + 1 < std::size(kUnits)) {
    v /= 1024;
    ++i;
  }
  // 1023.96 KiB would print as "1024.0 KiB": round first, then step up a unit.
  if (std::round(v * 10) / 10 >= 1024 && i + 1 < std::size(kUnits)) {
    v /= 1024;
    ++i;
  }
  return fmt::format("{:.1f} {}", v, kUnits[i]);
}

std::string format_rate(double v) {
  if (!(v > 0)) return "0";
  if (v >= 999.5e3) return fmt::format("{:.2f}M", v / 1e6);
  if (v >= 999.5) return fmt::format("{:.1f}k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

std::string format_seconds(double s, bool unicode) {
  if (!(s > 0)) return "0 s";
  if (s < 1e-3) return fmt::format("{:.0f} {}", s * 1e6, unicode ? "µs" : "us");
  if (s < 1) return fmt::format("{:.1f} ms", s * 1e3);
  if (s < 120) return fmt::format("{:.1f} s", s);
  if (s < 7200) return fmt::format("{:.0f} min", s / 60);
  if (s < 172800) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} d", s / 86400);
}

std::string format_clock(double unix_time_s) {
  const std::time_t t = static_cast<std::time_t>(unix_time_s);
  std::tm tm{};
  if (::localtime_r(&t, &tm) == nullptr) return "--:--:--";
  return fmt::format("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string format_bar(double frac, size_t inner, std::string_view label) {
  if (!(frac > 0)) frac = 0;  // NaN too
  frac = std::min(frac, 1.0);
  const size_t fill = static_cast<size_t>(std::lround(frac * static_cast<double>(inner)));
  std::string cells(inner, ' ');
  std::fill_n(cells.begin(), std::min(fill, inner), '|');
  // The label replaces the cells it covers (ASCII labels only: sizes and percentages).
  const size_t n = std::min(label.size(), inner);
  cells.replace(inner - n, n, label.substr(label.size() - n));
  return "[" + cells + "]";
}

std::string sparkline(const std::vector<double>& history, size_t cells, bool unicode) {
  static const char* const kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static const char kRamp[] = ".:-=+*#";  // after the blank
  const size_t n = std::min(history.size(), cells);
  const auto first = history.end() - static_cast<std::ptrdiff_t>(n);
  double max = 1;
  for (auto it = first; it != history.end(); ++it) max = std::max(max, *it);
  std::string out(cells - n, ' ');
  for (auto it = first; it != history.end(); ++it) {
    const double v = *it;
    if (!(v > 0)) {
      out += ' ';
      continue;
    }
    const size_t levels = unicode ? std::size(kBlocks) : sizeof(kRamp) - 1;
    // (0, max] onto levels 0..levels-1: the smallest positive sample still shows.
    const size_t level = std::min(levels - 1, static_cast<size_t>(std::ceil(v / max * levels)) - 1);
    if (unicode)
      out += kBlocks[level];
    else
      out += kRamp[level];
  }
  return out;
}

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out += (c < 0x20 || c == 0x7f) ? ' ' : static_cast<char>(c);
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length from the lead byte, continuation bytes checked, overlong and
    // out-of-range forms refused.
    const size_t n = c >= 0xF0 && c < 0xF5 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    bool ok = n > 0 && (c < 0xF5) && i + n <= s.size();
    uint32_t cp = n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; ok && k < n; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      ok = (cc & 0xC0) == 0x80;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (ok) ok = (n == 3 ? cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF) : n == 4 ? cp >= 0x10000 && cp <= 0x10FFFF : true);
    if (!ok) {
      out += '?';
      ++i;
      continue;
    }
    if (cp >= 0x80 && cp < 0xA0) out += ' ';  // C1 controls (CSI and the like)
    else out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

size_t display_width(std::string_view s) {
  size_t w = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++w;  // not a continuation byte
  return w;
}

std::string clamp_width(std::string_view s, size_t width) {
  size_t w = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;
    if (w == width) return std::string(s.substr(0, i));
    ++w;
  }
  return std::string(s);
}

std::string pad(std::string_view s, size_t width, bool left_align) {
  const size_t w = display_width(s);
  if (w >= width) return std::string(s);
  const std::string fill(width - w, ' ');
  return left_align ? std::string(s) + fill : fill + std::string(s);
}

}  // namespace gt::top
