#include "dispatcherd/dispatcher_options.h"

#define GT_OPTIONS_STRUCT gt::dispatcher::DispatcherOptions
#define GT_OPTIONS_TABLE gt::dispatcher::dispatcher_option_table
#define GT_OPTIONS_DEF "dispatcherd/dispatcher_options.def"
#include "libgtcore/option_table.inc"
