// gt-top's command line (tools/gt-top): options, environment (GT_HTTP, GT_TOKEN) and where the
// dispatcher's HTTP endpoint is when no URL is given (http_port in its dispatcher.yaml).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "libgtcore/status.h"
#include "tools/gt-top/http_get.h"
#include "tools/gt-top/sort_key.h"

namespace gt::top {

enum class Mode { kLive, kOnce, kJson };

struct Options {
  Mode mode = Mode::kLive;
  Url url;
  std::string token;
  double interval_s = 1.0;
  SortKey sort = SortKey::kOps;
  size_t width = 0;          // --width: columns for --once and batch output (0: terminal / none)
  bool width_set = false;
  int count = 0;             // --count: refreshes before exiting (0: until q or a signal)
  double timeout_s = 5.0;    // per request
  bool ascii = false;        // no Unicode even in a UTF-8 locale
};

struct Args {
  Options options;
  bool help = false;
  bool version = false;
};

// Reads an environment variable (std::getenv; tests pass their own).
using Getenv = std::function<const char*(const char*)>;

// args without argv[0]. Errors are invalid_argument with the option named; the caller prints
// them with a pointer to --help.
Result<Args> parse_args(const std::vector<std::string>& args, const Getenv& env);

// The URL a dispatcher.yaml points at: http_address (0.0.0.0 / :: read as loopback) and
// http_port, or the port in http_port_file when http_port is 0. An error says why not (no file,
// the endpoint off).
Result<std::string> url_from_config(const std::string& path);

std::string usage();

}  // namespace gt::top
