// Secret files (the worker registration secret, client token files): read only when no one but
// their owner can access them, so a misconfigured mode is an error rather than a leak.
#pragma once

#include <string>

#include "libgtcore/status.h"

namespace gt {

// The file's first line, trimmed; refuses group/world-accessible files and short secrets.
Result<std::string> read_secret_file(const std::string& path);

}  // namespace gt
