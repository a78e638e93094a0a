// gt-top's terminal (tools/gt-top): while a Terminal lives, the tty is in raw mode (no echo, no
// line editing; Ctrl-C still signals), on the alternate screen with the cursor hidden; the
// destructor puts all of it back. Keys are read from /dev/tty (its own open file, so making it
// non-blocking does not leak to the shell) and decoded here.
#pragma once

#include <termios.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "libgtcore/status.h"

namespace gt::top {

enum class KeyKind { kChar, kUp, kDown, kPageUp, kPageDown, kHome, kEnd };
struct Key {
  KeyKind kind = KeyKind::kChar;
  char c = 0;  // for kChar
};

// Keys in `bytes` (one read's worth: escape sequences arrive whole). A lone ESC and sequences
// gt-top does not use are skipped.
std::vector<Key> decode_keys(std::string_view bytes);

class Terminal {
 public:
  // out_fd: the terminal written to (standard output).
  static Result<std::unique_ptr<Terminal>> open(int out_fd);
  ~Terminal();
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  int input_fd() const { return in_fd_; }
  // Rows and columns (TIOCGWINSZ; 24 x 80 when the terminal does not say).
  size_t rows() const;
  size_t cols() const;
  void write(const std::string& bytes) const;

  // Puts the terminal back as it was, stops the process (Ctrl-Z) and takes it over again once
  // continued.
  void suspend();

 private:
  Terminal(int out_fd, int in_fd, const termios& saved) : out_(out_fd), in_fd_(in_fd), saved_(saved) {}
  void enter();
  void leave();

  int out_;
  int in_fd_;
  termios saved_;
  bool entered_ = false;
};

}  // namespace gt::top
