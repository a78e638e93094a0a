#include <google/protobuf/stubs/logging.h>
#include <spdlog/spdlog.h>

#include "tests/fuzz/harness.h"

namespace gt::fuzz {

void init() {
  static bool done = false;
  if (done) return;
  done = true;
  spdlog::set_level(spdlog::level::off);
  // Protobuf logs every string field with invalid UTF-8 it rejects: noise at fuzzing rates.
  google::protobuf::SetLogHandler(
      [](google::protobuf::LogLevel, const char*, int, const std::string&) {});
}

}  // namespace gt::fuzz
