#include "tools/gt-top/live_view.h"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <iostream>
#include <optional>

#include "libgtcore/asio.h"
#include "tools/gt-top/fetch_status.h"
#include "tools/gt-top/render.h"
#include "tools/gt-top/terminal.h"
#include "tools/gt-top/units.h"

namespace gt::top {
namespace asio = boost::asio;

namespace {

const char* style(LineKind k) {
  switch (k) {
    case LineKind::kTitle: return "\x1b[1m";      // bold
    case LineKind::kSection: return "\x1b[1;36m"; // bold cyan
    case LineKind::kHeader: return "\x1b[30;46m"; // black on cyan, the width of the screen
    case LineKind::kNote: return "\x1b[2m";       // dim
    default: return "";
  }
}

class LiveView {
 public:
  LiveView(const Options& o, bool unicode, Terminal& term)
      : o_(o), unicode_(unicode), term_(term), sort_(o.sort), signals_(io_), timer_(io_),
        input_(io_, ::dup(term.input_fd())) {}

  int run() {
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGTSTP, SIGCONT}) signals_.add(s);
    wait_signal();
    read_keys();
    draw();
    fetch();
    io_.run();
    return exit_code_;
  }
  const std::string& message() const { return message_; }

 private:
  void stop(int code, std::string message = "") {
    exit_code_ = code;
    message_ = std::move(message);
    io_.stop();
  }

  void fetch() {
    fetching_ = true;
    const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(o_.timeout_s * 1000));
    async_http_get(io_, o_.url, kStatusPath, o_.token, timeout, [this](Result<HttpReply> r) {
      fetching_ = false;
      ++refreshes_;
      auto body = status_json_from(o_.url, !o_.token.empty(), std::move(r));
      if (!body && body.status().code() == Code::kPermissionDenied)
        return stop(1, body.status().message());  // retrying will not help
      if (!body) {
        error_ = body.status().message();
      } else if (auto rep = parse_status_json(*body); !rep) {
        error_ = rep.status().message();
      } else {
        report_ = std::move(*rep);
        error_.clear();
      }
      draw();
      if (o_.count > 0 && refreshes_ >= o_.count) return stop(0);
      timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(o_.interval_s * 1000)));
      timer_.async_wait([this](boost::system::error_code ec) {
        if (!ec && !fetching_) fetch();
      });
    });
  }

  void refresh_now() {
    if (fetching_) return;
    timer_.cancel();
    fetch();
  }

  void wait_signal() {
    signals_.async_wait([this](boost::system::error_code ec, int sig) {
      if (ec) return;
      switch (sig) {
        case SIGINT: return stop(0);
        case SIGWINCH:
        case SIGCONT: clear_ = true; draw(); break;
        case SIGTSTP:
          term_.suspend();
          clear_ = true;
          draw();
          break;
        default: return stop(128 + sig);  // SIGTERM, SIGHUP, SIGQUIT
      }
      wait_signal();
    });
  }

  void read_keys() {
    input_.async_read_some(asio::buffer(buf_), [this](boost::system::error_code ec, size_t n) {
      if (ec == asio::error::operation_aborted) return;
      if (ec) return stop(0);  // the terminal is gone
      for (const Key& k : decode_keys(std::string_view(buf_.data(), n))) key(k);
      draw();
      read_keys();
    });
  }

  void key(const Key& k) {
    const size_t page = std::max<size_t>(1, term_.rows() / 2);
    switch (k.kind) {
      case KeyKind::kUp: scroll_ = scroll_ ? scroll_ - 1 : 0; return;
      case KeyKind::kDown: ++scroll_; return;
      case KeyKind::kPageUp: scroll_ = scroll_ > page ? scroll_ - page : 0; return;
      case KeyKind::kPageDown: scroll_ += page; return;
      case KeyKind::kHome: scroll_ = 0; return;
      case KeyKind::kEnd: scroll_ = SIZE_MAX / 2; return;
      case KeyKind::kChar: break;
    }
    switch (k.c) {
      case 'q': case 'Q': return stop(0);
      case 's': sort_ = next_sort_key(sort_, +1); return;
      case 'S': sort_ = next_sort_key(sort_, -1); return;
      case 'j': ++scroll_; return;
      case 'k': scroll_ = scroll_ ? scroll_ - 1 : 0; return;
      case ' ': scroll_ += page; return;
      case 'b': scroll_ = scroll_ > page ? scroll_ - page : 0; return;
      case 'g': scroll_ = 0; return;
      case 'G': scroll_ = SIZE_MAX / 2; return;
      case 'r': refresh_now(); return;
      case '\x0c': clear_ = true; return;  // Ctrl-L
      default: return;
    }
  }

  // The whole screen in one write: the title and summary stay on top, the tables scroll, the
  // last row is the key help (or what went wrong).
  void draw() {
    const size_t rows = term_.rows(), cols = term_.cols();
    std::vector<Line> lines;
    if (report_) {
      lines = render_status(*report_, {cols, sort_, unicode_, o_.url.text});
    } else {
      lines.push_back({LineKind::kTitle, clamp_width("gt-top  " + o_.url.text, cols)});
      lines.push_back({LineKind::kNote, clamp_width(error_.empty() ? " connecting..." : " waiting for the dispatcher", cols)});
    }
    size_t pinned = 0;
    while (pinned < lines.size() &&
           (lines[pinned].kind == LineKind::kTitle || lines[pinned].kind == LineKind::kSummary))
      ++pinned;
    const size_t body_rows = rows > pinned + 1 ? rows - pinned - 1 : 0;
    const size_t rest = lines.size() - pinned;
    scroll_ = std::min(scroll_, rest > body_rows ? rest - body_rows : 0);

    std::string out = clear_ ? "\x1b[2J" : "";
    clear_ = false;
    size_t row = 1;
    auto put = [&](const Line& l) {
      const char* st = style(l.kind);
      std::string text = l.text;
      if (l.kind == LineKind::kHeader) text = pad(text, cols, true);  // a full-width band
      out += fmt::format("\x1b[{};1H{}{}\x1b[0m\x1b[K", row++, st, text);
    };
    for (size_t i = 0; i < pinned && row < rows; ++i) put(lines[i]);
    for (size_t i = pinned + scroll_; i < lines.size() && row < rows; ++i) put(lines[i]);
    while (row < rows) out += fmt::format("\x1b[{};1H\x1b[K", row++);

    std::string help = fmt::format(" q quit  s/S sort: {}  j/k scroll  r refresh  every {:g} s",
                                   sort_key_name(sort_), o_.interval_s);
    if (rest > body_rows)
      help += fmt::format("  rows {}-{} of {}", scroll_ + 1, std::min(rest, scroll_ + body_rows), rest);
    std::string foot = "\x1b[7m" + pad(clamp_width(help, cols), cols, true);
    if (!error_.empty()) {
      const std::string e = " " + printable(error_) + (report_ ? " (showing the last status)" : "") + " ";
      foot = "\x1b[1;37;41m" + pad(clamp_width(e, cols), cols, true);
    }
    out += fmt::format("\x1b[{};1H{}\x1b[0m", rows, foot);
    term_.write(out);
  }

  const Options& o_;
  const bool unicode_;
  Terminal& term_;
  SortKey sort_;
  asio::io_context io_;
  asio::signal_set signals_;
  asio::steady_timer timer_;
  asio::posix::stream_descriptor input_;
  std::array<char, 256> buf_{};
  std::optional<v1::StatusReport> report_;
  std::string error_;
  bool fetching_ = false;
  bool clear_ = false;
  int refreshes_ = 0;
  size_t scroll_ = 0;
  int exit_code_ = 0;
  std::string message_;
};

}  // namespace

int run_live(const Options& options, bool unicode) {
  auto term = Terminal::open(STDOUT_FILENO);
  if (!term) {
    std::cerr << "gt-top: " << term.status().message() << "\n";
    return 1;
  }
  int code;
  std::string message;
  {
    LiveView view(options, unicode, **term);
    code = view.run();
    message = view.message();
  }
  term->reset();  // the terminal as it was (the destructor), before anything else is printed
  if (!message.empty()) std::cerr << "gt-top: " << message << "\n";
  return code;
}

}  // namespace gt::top
