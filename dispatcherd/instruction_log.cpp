#include "dispatcherd/instruction_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gt::dispatcher {

InstructionLog::~InstructionLog() {
  if (file_) std::fclose(file_);
}

Status InstructionLog::open(const std::string& path) {
  GT_RETURN_IF_ERROR(open_file(path));
  path_ = path;
  start_ = std::chrono::steady_clock::now();
  return Status::ok();
}

Status InstructionLog::reopen() {
  if (path_.empty()) return Status::ok();
  return open_file(path_);
}

Status InstructionLog::open_file(const std::string& path) {
  // 0600: the log names every user's ops. A file that already exists (an older log, one made
  // by logrotate or under another umask) is narrowed to 0600 too, or refused when it cannot be.
  // (Not a regular file, e.g. /dev/stderr: used as it is.)
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0)
    return unavailable("cannot open instruction log {}: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 ||
      (S_ISREG(st.st_mode) && (st.st_mode & 077) != 0 && ::fchmod(fd, 0600) != 0)) {
    int err = errno;
    ::close(fd);
    return unavailable("instruction log {} cannot be made private (mode 0600): {}", path,
                       std::strerror(err));
  }
  std::FILE* f = ::fdopen(fd, "a");
  if (!f) {
    ::close(fd);
    return unavailable("cannot open instruction log {}", path);
  }
  std::setvbuf(f, nullptr, _IOFBF, 1 << 16);
  if (file_) std::fclose(file_);  // flushes what the old file still buffered
  file_ = f;
  enabled_ = true;
  return Status::ok();
}

void InstructionLog::format(fmt::memory_buffer& out, double t, uint64_t seq, std::string_view event,
                            std::string_view source, std::string_view command, uint64_t size,
                            std::string_view details) {
  char size_text[32];
  auto* e = size < 1024 ? fmt::format_to(size_text, "{}B", size)
            : size < (1u << 20) ? fmt::format_to(size_text, "{:.1f}KB", size / 1024.0)
                                : fmt::format_to(size_text, "{:.1f}MB", size / 1048576.0);
  // Elapsed: 14 wide holds 115 days of a dispatcher's life at microsecond resolution. The widths
  // are literals (kEventWidth, kSourceWidth, kCommandWidth, kSizeWidth): parsed widths would
  // cost more per line, and the log may write a line per instruction.
  static_assert(kEventWidth == 14 && kSourceWidth == 27 && kCommandWidth == 14 && kSizeWidth == 9);
  fmt::format_to(fmt::appender(out), "{:14.6f}s | #{:06d} | {:<14} | {:<27} | {:<14} | {:>9} | {}\n",
                 t, seq, event, source, command,
                 std::string_view(size_text, static_cast<size_t>(e - size_text)), details);
}

void InstructionLog::write(std::string_view event, std::string_view source,
                           std::string_view command, uint64_t size, std::string_view details) {
  if (!enabled_) return;
  fmt::memory_buffer line;  // inline storage: no allocation for a line of usual length
  format(line, seconds_at(Clock::now()), ++seq_, event, source, command, size, details);
  if (file_) std::fwrite(line.data(), 1, line.size(), file_);
  for (const auto& tap : taps_) append(*tap, line);
}

void InstructionLog::write_to(Tap& tap, std::string_view event, std::string_view source,
                              std::string_view command, uint64_t size,
                              std::string_view details) const {
  // Numbered #000000: not an event of the log's own sequence.
  fmt::memory_buffer line;
  format(line, seconds_at(Clock::now()), 0, event, source, command, size, details);
  append(tap, line);
}

void InstructionLog::append(Tap& tap, const fmt::memory_buffer& line) {
  if (tap.text.size() + line.size() > tap.cap) {
    ++tap.dropped;
    return;
  }
  tap.text.append(line.data(), line.size());
}

void InstructionLog::attach(const std::shared_ptr<Tap>& tap) {
  taps_.push_back(tap);
  enabled_ = true;
}

void InstructionLog::detach(const std::shared_ptr<Tap>& tap) {
  std::erase(taps_, tap);
  enabled_ = file_ != nullptr || !taps_.empty();
}

void InstructionLog::flush() {
  if (file_) std::fflush(file_);
}

}  // namespace gt::dispatcher
