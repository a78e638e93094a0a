#include "libgtcore/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace gt {

Status init_logging(const std::string& program, const std::string& level) {
  auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off")
    return invalid_argument("log_level: unknown level '{}' (trace, debug, info, warn, error, off)",
                            level);
  auto logger = spdlog::stderr_color_mt(program);
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %n[%P] %^%l%$: %v");
  logger->set_level(lvl);
  spdlog::set_default_logger(logger);
  return Status::ok();
}

}  // namespace gt
