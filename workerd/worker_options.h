// WorkerOptions: every gt-workerd option, generated from worker_options.def (one row per
// option: member, default, bounds, help). main.cpp and backend_factory.cpp hand them on to the
// worker's parts (WorkerLinkOptions, TcpPeerLinkOptions, the backends' options).
#pragma once

#include <cstdint>
#include <string>

#include "libgtcore/config_table.h"
#include "libgtcore/frame_codec.h"

namespace gt::worker {

struct WorkerOptions {
#define GT_OPTIONS_DEF "workerd/worker_options.def"
#include "libgtcore/option_members.inc"
};

// The rows of worker_options.def, bound to WorkerOptions' members.
const OptionTable<WorkerOptions>& worker_option_table();

}  // namespace gt::worker
