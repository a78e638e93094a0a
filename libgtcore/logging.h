// Logging setup shared by the daemons: spdlog to stderr (journald captures it under systemd).
#pragma once

#include <spdlog/spdlog.h>

#include <string>

#include "libgtcore/status.h"

namespace gt {

// level: trace, debug, info, warn, error, off.
Status init_logging(const std::string& program, const std::string& level);

}  // namespace gt
