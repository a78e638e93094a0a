// gt-top's live view (tools/gt-top): the rendered status redrawn on the alternate screen every
// interval, on one event loop (Boost.Asio) that also reads keys, signals (resize, Ctrl-C, Ctrl-Z,
// SIGTERM) and the next /api/status answer, so a slow dispatcher never blocks a key.
#pragma once

#include "tools/gt-top/options.h"

namespace gt::top {

// Until q, Ctrl-C (exit 0), SIGTERM / SIGHUP / SIGQUIT (128 + signal), --count refreshes (0),
// or a refused token (1, with the message printed after the terminal is restored). Failures to
// reach the dispatcher are shown and retried.
int run_live(const Options& options, bool unicode);

}  // namespace gt::top
