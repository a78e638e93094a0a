// gt-trace: the instruction log as a Chrome / Perfetto trace (ARCHITECTURE §9). Open the output
// in https://ui.perfetto.dev or chrome://tracing: one track per worker and per session,
// instructions and executed batches as slices, requests and peer transfers as flows.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "libgtcore/secret_file.h"
#include "tools/gt-trace/live_fetch.h"
#include "tools/gt-trace/trace_builder.h"

namespace {

const char kUsage[] =
    "usage: gt-trace LOG [-o TRACE.json]\n"
    "       gt-trace --live http://HOST:PORT [--seconds N] [--token T] [-o TRACE.json]\n"
    "                [--save-log FILE]\n"
    "\n"
    "Converts a dispatcher's instruction log (instruction_log; '-' reads stdin) into Chrome\n"
    "trace-event JSON for https://ui.perfetto.dev or chrome://tracing. --live records N seconds\n"
    "(default 5, at most 60) from a running dispatcher's HTTP port (http_port) instead; no log\n"
    "file is needed. With a users_file it needs an admin's token: --token, else $GT_TOKEN, else\n"
    "the file named by $GT_TOKEN_FILE. --save-log keeps the recorded lines too. Without -o the\n"
    "JSON goes to stdout.\n";

int usage_error(const std::string& why) {
  std::fprintf(stderr, "gt-trace: %s\n%s", why.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string log_path, live_url, out_path = "-", token, save_log;
  double seconds = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "-o" || a == "--output") {
      const char* v = value();
      if (!v) return usage_error("-o needs a file");
      out_path = v;
    } else if (a == "--live") {
      const char* v = value();
      if (!v) return usage_error("--live needs http://HOST:PORT");
      live_url = v;
    } else if (a == "--seconds") {
      const char* v = value();
      char* end = nullptr;
      seconds = v ? std::strtod(v, &end) : 0;
      if (!v || *end != '\0' || !(seconds > 0) || seconds > 60)
        return usage_error("--seconds needs a number above 0 and at most 60");
    } else if (a == "--token") {
      const char* v = value();
      if (!v) return usage_error("--token needs a token");
      token = v;
    } else if (a == "--save-log") {
      const char* v = value();
      if (!v) return usage_error("--save-log needs a file");
      save_log = v;
    } else if (a.size() > 1 && a[0] == '-') {
      return usage_error("unknown option " + a);
    } else if (log_path.empty()) {
      log_path = a;
    } else {
      return usage_error("one log at a time");
    }
  }
  if (live_url.empty() == log_path.empty())
    return usage_error(live_url.empty() ? "no log given" : "either a log or --live, not both");

  std::string text;
  if (!live_url.empty()) {
    if (token.empty())
      if (const char* env = std::getenv("GT_TOKEN")) token = env;
    if (token.empty())
      if (const char* file = std::getenv("GT_TOKEN_FILE")) {
        auto t = gt::read_secret_file(file);
        if (!t.is_ok()) {
          std::fprintf(stderr, "gt-trace: GT_TOKEN_FILE: %s\n", t.status().message().c_str());
          return 1;
        }
        token = *t;
      }
    std::fprintf(stderr, "gt-trace: recording %g s from %s\n", seconds, live_url.c_str());
    auto got = gt::trace::fetch_live(live_url, seconds, token);
    if (!got.is_ok()) {
      std::fprintf(stderr, "gt-trace: %s\n", got.status().message().c_str());
      return 1;
    }
    text = std::move(*got);
    if (!save_log.empty()) {
      std::ofstream f(save_log, std::ios::binary);
      f << text;
      if (!f) {
        std::fprintf(stderr, "gt-trace: cannot write %s\n", save_log.c_str());
        return 1;
      }
    }
  } else if (log_path == "-") {
    std::ostringstream s;
    s << std::cin.rdbuf();
    text = s.str();
  } else {
    std::ifstream f(log_path, std::ios::binary);
    if (!f) {
      std::fprintf(stderr, "gt-trace: cannot read %s\n", log_path.c_str());
      return 1;
    }
    std::ostringstream s;
    s << f.rdbuf();
    text = s.str();
  }

  std::istringstream in(text);
  gt::trace::TraceSummary sum;
  const std::string json = gt::trace::convert_log(in, &sum);
  if (out_path == "-") {
    std::fwrite(json.data(), 1, json.size(), stdout);
  } else {
    std::ofstream f(out_path, std::ios::binary);
    f << json;
    if (!f) {
      std::fprintf(stderr, "gt-trace: cannot write %s\n", out_path.c_str());
      return 1;
    }
  }
  std::fprintf(stderr,
               "gt-trace: %zu log lines (%zu others skipped): %zu workers, %zu sessions, %zu "
               "slices, %zu flows%s%s\n",
               sum.lines, sum.skipped, sum.workers, sum.sessions, sum.slices, sum.flows,
               out_path == "-" ? "" : " -> ", out_path == "-" ? "" : out_path.c_str());
  return 0;
}
