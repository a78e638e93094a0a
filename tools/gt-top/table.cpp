#include "tools/gt-top/table.h"

#include <algorithm>

#include "tools/gt-top/units.h"

namespace gt::top {
namespace {
constexpr size_t kGap = 2;
constexpr size_t kIndent = 1;  // rows start one column in, under their section's title
}  // namespace

std::vector<std::string> layout_table(const std::vector<Column>& columns,
                                      const std::vector<std::vector<std::string>>& rows,
                                      size_t width) {
  const size_t n = columns.size();
  std::vector<size_t> widths(n);
  for (size_t j = 0; j < n; ++j) {
    widths[j] = display_width(columns[j].header);
    for (const auto& r : rows)
      if (j < r.size()) widths[j] = std::max(widths[j], display_width(r[j]));
  }
  std::vector<bool> shown(n, true);
  auto total = [&] {
    size_t t = kIndent, count = 0;
    for (size_t j = 0; j < n; ++j)
      if (shown[j]) t += widths[j] + (count++ ? kGap : 0);
    return t;
  };
  while (width > 0 && total() > width) {
    size_t drop = n;  // the shown column (not the first) with the lowest keep, rightmost on ties
    for (size_t j = 1; j < n; ++j)
      if (shown[j] && (drop == n || columns[j].keep <= columns[drop].keep)) drop = j;
    if (drop == n) break;
    shown[drop] = false;
  }
  // The last shown column is not padded on the right (no trailing blanks).
  size_t last = 0;
  for (size_t j = 0; j < n; ++j)
    if (shown[j]) last = j;
  auto line = [&](auto cell) {
    std::string out(kIndent, ' ');
    bool first = true;
    for (size_t j = 0; j < n; ++j) {
      if (!shown[j]) continue;
      if (!first) out.append(kGap, ' ');
      first = false;
      const std::string c = cell(j);
      out += (j == last && columns[j].left) ? c : pad(c, widths[j], columns[j].left);
    }
    return width > 0 ? clamp_width(out, width) : out;
  };
  std::vector<std::string> out;
  out.reserve(rows.size() + 1);
  out.push_back(line([&](size_t j) { return columns[j].header; }));
  for (const auto& r : rows)
    out.push_back(line([&](size_t j) { return j < r.size() ? r[j] : std::string(); }));
  return out;
}

}  // namespace gt::top
