// gt-top's tables (tools/gt-top): columns sized to their widest cell, two spaces apart, and
// fitted to the terminal the way htop does: the columns that matter least are dropped first
// until the rest fit, then each line is cut at the width.
#pragma once

#include <string>
#include <vector>

namespace gt::top {

struct Column {
  std::string header;
  bool left = false;  // left-aligned (text), else right-aligned (numbers)
  int keep = 0;       // drop order when too wide: lowest first (ties: the rightmost first)
};

// The header line, then one line per row (rows[i][j] is column j's cell). width 0: no limit.
// At least the first column stays.
std::vector<std::string> layout_table(const std::vector<Column>& columns,
                                      const std::vector<std::vector<std::string>>& rows,
                                      size_t width);

}  // namespace gt::top
