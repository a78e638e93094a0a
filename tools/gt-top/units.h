// gt-top's text units (tools/gt-top): byte counts, rates, durations, bars and sparklines as
// short fixed-form strings, and display widths of UTF-8 text (one column per code point: gt-top
// prints nothing wider). The same units as the dashboard (KiB = 1024 B, k = 1000/s).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gt::top {

std::string format_bytes(uint64_t n);            // "0 B", "1023 B", "1.0 KiB", "7.8 GiB"
std::string format_rate(double per_s);           // "999", "1.5k", "2.50M"
std::string format_seconds(double s, bool unicode);  // "15 µs" ("us"), "1.2 ms", "3.4 s", "5 min", "2.1 h"
std::string format_clock(double unix_time_s);    // local "HH:MM:SS"

// An htop-style meter: `inner` cells between brackets, the first round(frac * inner) of them
// '|', with `label` right-aligned over the cells ("[||||||     1.0 MiB/8.0 GiB]"). frac is
// clamped to [0, 1].
std::string format_bar(double frac, size_t inner, std::string_view label);

// The last `cells` samples of `history` as a sparkline, scaled to max(1, their maximum): Unicode
// block elements, or the ASCII ramp " .:-=+*#" when !unicode. Zero samples are blanks; samples
// missing at the start (a short history) are blanks too.
std::string sparkline(const std::vector<double>& history, size_t cells, bool unicode);

// Text from elsewhere (names, error messages) made safe to print on one line: control
// characters (C0, DEL, C1: newlines, escape sequences) become spaces, invalid UTF-8 '?'.
std::string printable(std::string_view s);

// Terminal columns of UTF-8 text (code points; gt-top writes no wide or combining characters).
size_t display_width(std::string_view s);
// The longest prefix of `s` at most `width` columns wide (never splits a code point).
std::string clamp_width(std::string_view s, size_t width);
// `s` padded with spaces to `width` columns, on the right (left-aligned) or the left.
std::string pad(std::string_view s, size_t width, bool left_align);

}  // namespace gt::top
