// gt-trace --live: asks a running dispatcher for N seconds of its instruction log
// (GET <url>/api/trace?seconds=N, Authorization: Bearer <token> when given) and returns the
// lines, converted like a file. Plain HTTP: the endpoint is loopback by default (ARCHITECTURE §8).
#pragma once

#include <string>

#include "libgtcore/status.h"

namespace gt::trace {

// `url`: http://host:port (a path after it is ignored). Waits up to seconds + 30 s.
Result<std::string> fetch_live(const std::string& url, double seconds, const std::string& token);

}  // namespace gt::trace
