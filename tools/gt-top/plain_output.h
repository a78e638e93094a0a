// gt-top without a screen (tools/gt-top): --once (one plain-text snapshot), --json (the
// endpoint's JSON as received) and batch output (a snapshot every interval when standard output
// is not a terminal, as top -b does). No terminal codes in any of them.
#pragma once

#include "tools/gt-top/options.h"

namespace gt::top {

// Each returns the exit status: 0, or 1 with the reason on standard error.
int run_once(const Options& options, bool unicode);
int run_json(const Options& options);
int run_batch(const Options& options, bool unicode);

}  // namespace gt::top
