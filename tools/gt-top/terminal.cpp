#include "tools/gt-top/terminal.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

namespace gt::top {
namespace {
constexpr const char* kEnter = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J";  // alternate screen, no cursor
constexpr const char* kLeave = "\x1b[0m\x1b[?25h\x1b[?1049l";          // and back

winsize window(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0 || ws.ws_col == 0) {
    ws.ws_row = 24;
    ws.ws_col = 80;
  }
  return ws;
}
}  // namespace

std::vector<Key> decode_keys(std::string_view b) {
  std::vector<Key> keys;
  for (size_t i = 0; i < b.size(); ++i) {
    if (b[i] != '\x1b') {
      keys.push_back({KeyKind::kChar, b[i]});
      continue;
    }
    // ESC [ X, ESC O X (application cursor keys), ESC [ n ~
    if (i + 1 >= b.size() || (b[i + 1] != '[' && b[i + 1] != 'O')) continue;  // lone ESC
    size_t j = i + 2;
    std::string params;
    while (j < b.size() && (std::isdigit(static_cast<unsigned char>(b[j])) || b[j] == ';'))
      params += b[j++];
    if (j >= b.size()) break;
    const char f = b[j];
    i = j;
    switch (f) {
      case 'A': keys.push_back({KeyKind::kUp}); break;
      case 'B': keys.push_back({KeyKind::kDown}); break;
      case 'H': keys.push_back({KeyKind::kHome}); break;
      case 'F': keys.push_back({KeyKind::kEnd}); break;
      case '~':
        if (params == "5") keys.push_back({KeyKind::kPageUp});
        else if (params == "6") keys.push_back({KeyKind::kPageDown});
        else if (params == "1" || params == "7") keys.push_back({KeyKind::kHome});
        else if (params == "4" || params == "8") keys.push_back({KeyKind::kEnd});
        break;
      default: break;  // left/right, function keys: unused
    }
  }
  return keys;
}

Result<std::unique_ptr<Terminal>> Terminal::open(int out_fd) {
  if (!::isatty(out_fd)) return failed_precondition("standard output is not a terminal");
  const int in = ::open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
  if (in < 0) return failed_precondition("cannot open /dev/tty for keys: {}", std::strerror(errno));
  termios saved{};
  if (::tcgetattr(in, &saved) != 0) {
    const int e = errno;
    ::close(in);
    return failed_precondition("/dev/tty: {}", std::strerror(e));
  }
  std::unique_ptr<Terminal> t(new Terminal(out_fd, in, saved));
  t->enter();
  return t;
}

Terminal::~Terminal() {
  leave();
  ::close(in_fd_);
}

void Terminal::enter() {
  termios raw = saved_;
  raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | IEXTEN);  // ISIG stays: Ctrl-C signals
  raw.c_iflag &= ~static_cast<tcflag_t>(IXON | ICRNL);
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  ::tcsetattr(in_fd_, TCSANOW, &raw);
  write(kEnter);
  entered_ = true;
}

void Terminal::leave() {
  if (!entered_) return;
  entered_ = false;
  write(kLeave);
  ::tcsetattr(in_fd_, TCSANOW, &saved_);
}

void Terminal::suspend() {
  leave();
  ::kill(0, SIGSTOP);  // the process group, as the terminal's own Ctrl-Z would; resumes on fg
  ::tcgetattr(in_fd_, &saved_);  // the shell may have changed it meanwhile
  enter();
}

size_t Terminal::rows() const { return window(out_).ws_row; }
size_t Terminal::cols() const { return window(out_).ws_col; }

void Terminal::write(const std::string& bytes) const {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(out_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the terminal went away: nothing more to show
    done += static_cast<size_t>(n);
  }
}

}  // namespace gt::top
