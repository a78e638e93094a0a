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
  return Status::ok();
}

void InstructionLog::write(std::string_view event, std::string_view source,
                           std::string_view command, uint64_t size, std::string_view details) {
  if (!file_) return;
  double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string size_text = size < 1024 ? fmt::format("{}B", size)
                          : size < (1u << 20) ? fmt::format("{:.1f}KB", size / 1024.0)
                                              : fmt::format("{:.1f}MB", size / 1048576.0);
  fmt::print(file_, "{:9.3f}s | #{:06d} | {:<14} | {:<18} | {:<12} | {:>8} | {}\n", t, ++seq_,
             event, source, command, size_text, details);
}

void InstructionLog::flush() {
  if (file_) std::fflush(file_);
}

}  // namespace gt::dispatcher
