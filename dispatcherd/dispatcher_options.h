// DispatcherOptions: every gt-dispatcherd option, generated from dispatcher_options.def (one row
// per option: member, default, bounds, help), plus the values main.cpp derives from some rows.
#pragma once

#include <cstdint>
#include <string>

#include "libgtcore/config_table.h"
#include "libgtcore/frame_codec.h"
#include "libgtcore/signal_config.h"

namespace gt::dispatcher {

struct DispatcherOptions {
#define GT_OPTIONS_DEF "dispatcherd/dispatcher_options.def"
#include "libgtcore/option_members.inc"

  // Derived by main.cpp from the rows above: the rows name files, the dispatcher needs their
  // contents (read and checked once, at start, so a bad file stops the daemon with a reason).
  std::string worker_secret;       // the contents of worker_secret_file; empty: no secret
  SignalConfigMap signal_configs;  // signal_config, parsed
};

// The rows of dispatcher_options.def, bound to DispatcherOptions' members.
const OptionTable<DispatcherOptions>& dispatcher_option_table();

}  // namespace gt::dispatcher
