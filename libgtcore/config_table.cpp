#include "libgtcore/config_table.h"

#include <fmt/format.h>

#include <cctype>
#include <cstring>

#include "libgtcore/version.h"

namespace gt {
namespace {

constexpr size_t kWidth = 97;  // longest comment line of a rendered YAML file

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "67108864 (64 MiB)" for byte counts from 64 KiB, "2^30" for large power-of-two bounds, else
// the number.
std::string describe_int(int64_t v, bool bytes, bool bound) {
  if (bytes && v >= 65536) {
    static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    int unit = -1;
    int64_t n = v;
    while (n % 1024 == 0 && unit < 4) {
      n /= 1024;
      ++unit;
    }
    if (unit >= 0) return fmt::format("{} ({} {})", v, n, kUnits[unit]);
  } else if (!bytes && bound && v >= (int64_t{1} << 20) && (v & (v - 1)) == 0) {
    int exp = 0;
    while ((int64_t{1} << exp) != v) ++exp;
    return fmt::format("2^{}", exp);
  }
  return std::to_string(v);
}

// One line of append_comment(): its leading spaces are kept, and a list item ("  auto  text")
// wraps under its text.
void append_comment_line(std::string& out, const std::string& line) {
  if (line.find_first_not_of(' ') == std::string::npos) {
    out += "#\n";
    return;
  }
  // The unbreakable head: leading spaces, plus a list marker and the spaces after it.
  size_t head = line.find_first_not_of(' ');
  if (head > 0) {
    size_t gap = line.find("  ", head);
    if (gap != std::string::npos) head = line.find_first_not_of(' ', gap);
  }
  std::string cur = "# " + line.substr(0, head);
  const std::string continuation = "# " + std::string(head, ' ');
  bool empty = true;  // nothing after the head on this output line yet
  size_t pos = head;
  while (pos < line.size()) {
    size_t sp = line.find(' ', pos);
    if (sp == std::string::npos) sp = line.size();
    const std::string word = line.substr(pos, sp - pos);
    pos = line.find_first_not_of(' ', sp);
    if (pos == std::string::npos) pos = line.size();
    if (!empty && cur.size() + 1 + word.size() > kWidth) {
      out += cur + "\n";
      cur = continuation;
      empty = true;
    }
    if (!empty) cur += ' ';
    cur += word;
    empty = false;
  }
  out += cur + "\n";
}

// Appends `text` as comment lines ("# ..."), word-wrapped at kWidth; "\n" starts a new line.
void append_comment(std::string& out, const std::string& text) {
  size_t start = 0;
  for (;;) {
    const size_t end = text.find('\n', start);
    append_comment_line(out, text.substr(start, end == std::string::npos ? end : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

}  // namespace

std::string option_yaml_value(const Config::Value& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  std::string out = "\"";
  for (char c : std::get<std::string>(v)) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n' || c == '\t') {
      out += c == '\n' ? "\\n" : "\\t";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string render_option_help(const std::vector<OptionDoc>& rows) {
  std::string out, section;
  for (const auto& r : rows) {
    if (r.section != section) {
      section = r.section;
      out += fmt::format("\n{}:\n", section);
    }
    out += option_help_line(r.name, r.dflt, r.min, r.max, r.help);
  }
  return out;
}

std::string render_option_yaml(const std::string& header, const std::vector<OptionDoc>& rows) {
  std::string out;
  append_comment(out, header);
  std::string section;
  for (const auto& r : rows) {
    if (r.section != section) {
      section = r.section;
      std::string title = "# --- " + section + " ";
      if (title.size() < kWidth) title += std::string(kWidth - title.size(), '-');
      out += "\n" + title + "\n";
    }
    std::string text = r.help;
    if (!text.empty() && std::islower(static_cast<unsigned char>(text[0])))
      text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
    text += ".";
    if (!r.doc.empty()) text += (r.doc[0] == '\n' ? "" : " ") + r.doc;
    const bool bytes = ends_with(r.name, "_bytes");
    std::string facts;
    std::string dflt = option_yaml_value(r.dflt);
    if (auto* d = std::get_if<int64_t>(&r.dflt)) {
      facts = fmt::format("Range {}..{}. ", describe_int(static_cast<int64_t>(r.min), bytes, true),
                          describe_int(static_cast<int64_t>(r.max), bytes, true));
      dflt = describe_int(*d, bytes, false);
    }
    facts += r.value == r.dflt ? fmt::format("Default {}.", dflt)
                               : fmt::format("Built-in default {} (this file sets another value).",
                                             dflt);
    out += "\n";
    append_comment(out, text);
    append_comment(out, facts);
    out += fmt::format("{}: {}\n", r.name, option_yaml_value(r.value));
  }
  return out;
}

std::optional<int> take_daemon_actions(const DaemonCommand& d, const std::string& option_help,
                                       int argc, char** argv, std::vector<char*>* rest,
                                       bool* print_config) {
  *print_config = false;
  for (int i = 0; i < argc; ++i) {
    const char* a = argv[i];
    if (i > 0 && (std::strcmp(a, "--help") == 0 || std::strcmp(a, "-h") == 0)) {
      std::printf("%s\n%s", d.usage, option_help.c_str());
      return 0;
    }
    if (i > 0 && std::strcmp(a, "--version") == 0) {
      std::printf("%s %s\n", d.program, kVersion);
      return 0;
    }
    if (i > 0 && std::strcmp(a, "--print-config") == 0) *print_config = true;
    else rest->push_back(argv[i]);
  }
  return std::nullopt;
}

}  // namespace gt
