#include "libgtcore/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <sys/stat.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>

namespace gt {
namespace {

// "%*": the sd-daemon(3) priority prefix <N> of the message's level.
class SyslogPriorityFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    int priority = 6;  // LOG_INFO
    switch (msg.level) {
      case spdlog::level::trace:
      case spdlog::level::debug: priority = 7; break;  // LOG_DEBUG
      case spdlog::level::info: priority = 6; break;
      case spdlog::level::warn: priority = 4; break;   // LOG_WARNING
      case spdlog::level::err: priority = 3; break;    // LOG_ERR
      case spdlog::level::critical: priority = 2; break;  // LOG_CRIT
      default: break;
    }
    const char text[] = {'<', static_cast<char>('0' + priority), '>'};
    dest.append(text, text + sizeof(text));
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<SyslogPriorityFlag>();
  }
};

}  // namespace

bool is_journal_stream(const char* journal_stream, int fd) {
  if (journal_stream == nullptr) return false;
  uintmax_t dev = 0, ino = 0;
  if (std::sscanf(journal_stream, "%ju:%ju", &dev, &ino) != 2) return false;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return false;
  return static_cast<uintmax_t>(st.st_dev) == dev && static_cast<uintmax_t>(st.st_ino) == ino;
}

std::unique_ptr<spdlog::formatter> make_log_formatter(bool journal) {
  auto f = std::make_unique<spdlog::pattern_formatter>();
  if (journal) {
    f->add_flag<SyslogPriorityFlag>('*').set_pattern("%*%n: %v");  // journald adds time and pid
  } else {
    f->set_pattern("%Y-%m-%d %H:%M:%S.%e %n[%P] %^%l%$: %v");
  }
  return f;
}

Status init_logging(const std::string& program, const std::string& level) {
  auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off")
    return invalid_argument("log_level: unknown level '{}' (trace, debug, info, warn, error, off)",
                            level);
  auto logger = spdlog::stderr_color_mt(program);
  logger->set_formatter(make_log_formatter(is_journal_stream(std::getenv("JOURNAL_STREAM"), 2)));
  logger->set_level(lvl);
  spdlog::set_default_logger(logger);
  return Status::ok();
}

}  // namespace gt
