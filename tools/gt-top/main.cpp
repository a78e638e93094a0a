// gt-top: an htop / nvidia-smi style view of a GT dispatcher's workers and sessions, read from
// its HTTP endpoint's /api/status (ARCHITECTURE §9, issue 12). `gt-top --help` for the options.
#include <langinfo.h>
#include <unistd.h>

#include <clocale>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "libgtcore/version.h"
#include "tools/gt-top/live_view.h"
#include "tools/gt-top/options.h"
#include "tools/gt-top/plain_output.h"

int main(int argc, char** argv) {
  using namespace gt::top;
  const std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = parse_args(args, [](const char* name) { return std::getenv(name); });
  if (!parsed) {
    std::cerr << "gt-top: " << parsed.status().message() << "\n(gt-top --help lists the options)\n";
    return 2;
  }
  if (parsed->help) {
    std::cout << usage();
    return 0;
  }
  if (parsed->version) {
    std::cout << "gt-top " << gt::kVersion << "\n";
    return 0;
  }
  const Options& o = parsed->options;
  // Block elements and "µs" only where the locale says the terminal takes UTF-8.
  std::setlocale(LC_CTYPE, "");
  const bool unicode = !o.ascii && std::strcmp(::nl_langinfo(CODESET), "UTF-8") == 0;
  switch (o.mode) {
    case Mode::kJson: return run_json(o);
    case Mode::kOnce: return run_once(o, unicode);
    case Mode::kLive: break;
  }
  if (!::isatty(STDOUT_FILENO)) return run_batch(o, unicode);
  return run_live(o, unicode);
}
