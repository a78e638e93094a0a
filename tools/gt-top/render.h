// gt-top's screen as text (tools/gt-top): a StatusReport -> lines, with no terminal codes, so
// --once prints it as is, the live view adds styles by line kind, and tests read it. Pure: the
// same report and options give the same lines (the clock is the report's own snapshot time).
#pragma once

#include <string>
#include <vector>

#include "proto/status.pb.h"
#include "tools/gt-top/sort_key.h"

namespace gt::top {

struct RenderOptions {
  size_t width = 0;          // terminal columns; 0: no limit (every column, nothing cut)
  SortKey sort = SortKey::kOps;
  bool unicode = true;       // sparklines in block elements and "µs"; else ASCII only
  std::string source;        // where the report came from (the URL), for the title
};

enum class LineKind { kTitle, kSummary, kBlank, kSection, kHeader, kRow, kNote };

struct Line {
  LineKind kind;
  std::string text;
};

// Title and summary; then the workers, sessions and users tables (in the sort order) and the
// recent errors, newest first; each under a section line and separated by blank lines. Every
// line is at most options.width columns wide (when set).
std::vector<Line> render_status(const v1::StatusReport& s, const RenderOptions& options);

// The lines' text, one per line, each ended by '\n'.
std::string to_text(const std::vector<Line>& lines);

}  // namespace gt::top
