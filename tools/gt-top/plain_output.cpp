#include "tools/gt-top/plain_output.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "tools/gt-top/fetch_status.h"
#include "tools/gt-top/render.h"

namespace gt::top {
namespace {

std::chrono::milliseconds timeout_of(const Options& o) {
  return std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));
}

// --width, else the terminal's when standard output is one, else no limit.
size_t width_of(const Options& o) {
  if (o.width_set) return o.width;
  winsize ws{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) return ws.ws_col;
  return 0;
}

Result<std::string> snapshot(const Options& o, bool unicode) {
  auto body = fetch_status_json(o.url, o.token, timeout_of(o));
  if (!body) return body.status();
  auto report = parse_status_json(*body);
  if (!report) return report.status();
  return to_text(render_status(*report, {width_of(o), o.sort, unicode, o.url.text}));
}

}  // namespace

int run_once(const Options& o, bool unicode) {
  auto text = snapshot(o, unicode);
  if (!text) {
    std::cerr << "gt-top: " << text.status().message() << "\n";
    return 1;
  }
  std::cout << *text << std::flush;
  return 0;
}

int run_json(const Options& o) {
  auto body = fetch_status_json(o.url, o.token, timeout_of(o));
  if (!body) {
    std::cerr << "gt-top: " << body.status().message() << "\n";
    return 1;
  }
  std::cout << *body;
  if (body->empty() || body->back() != '\n') std::cout << "\n";
  std::cout << std::flush;
  return 0;
}

int run_batch(const Options& o, bool unicode) {
  const auto interval = std::chrono::milliseconds(static_cast<int64_t>(o.interval_s * 1000));
  for (int n = 1;; ++n) {
    const auto start = std::chrono::steady_clock::now();
    auto text = snapshot(o, unicode);
    if (!text && text.status().code() == Code::kPermissionDenied) {
      std::cerr << "gt-top: " << text.status().message() << "\n";
      return 1;  // retrying will not help
    }
    if (!text)
      std::cerr << "gt-top: " << text.status().message() << " (retrying)\n";
    else
      std::cout << (n > 1 ? "\n" : "") << *text << std::flush;
    if (!std::cout) return 0;  // the reader went away
    if (o.count > 0 && n >= o.count) return text ? 0 : 1;
    std::this_thread::sleep_until(start + interval);
  }
}

}  // namespace gt::top
