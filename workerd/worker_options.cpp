#include "workerd/worker_options.h"

#define GT_OPTIONS_STRUCT gt::worker::WorkerOptions
#define GT_OPTIONS_TABLE gt::worker::worker_option_table
#define GT_OPTIONS_DEF "workerd/worker_options.def"
#include "libgtcore/option_table.inc"
