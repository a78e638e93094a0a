#include "dispatcherd/instruction_log.h"

#include <fmt/format.h>

namespace gt::dispatcher {

InstructionLog::~InstructionLog() {
  if (file_) std::fclose(file_);
}

Status InstructionLog::open(const std::string& path) {
  file_ = std::fopen(path.c_str(), "a");
  if (!file_) return unavailable("cannot open instruction log {}", path);
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 16);
  start_ = std::chrono::steady_clock::now();
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
