// Logging setup shared by the daemons: spdlog to stderr. Run by hand, each line carries a
// timestamp, the program and pid, and the level. Under systemd, journald reads stderr and adds
// time, program and pid itself: there each line starts with its syslog priority instead
// ("<4>gt-dispatcherd: worker 0 stopped answering"), which journald turns into the entry's
// priority, so `journalctl -p warning -u gt-dispatcher` filters.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "libgtcore/status.h"

namespace gt {

// level: trace, debug, info, warn, error, off. Journal format when stderr is the journal.
Status init_logging(const std::string& program, const std::string& level);

// Whether `journal_stream` (the JOURNAL_STREAM variable systemd sets: "device:inode" of the
// stream it connected) names the file open as `fd`. A daemon started under systemd whose stderr
// was then redirected elsewhere keeps the variable but not the stream: that is no journal.
bool is_journal_stream(const char* journal_stream, int fd);

// The line format: journal (syslog priority prefix, no timestamp or pid) or terminal.
std::unique_ptr<spdlog::formatter> make_log_formatter(bool journal);

}  // namespace gt
