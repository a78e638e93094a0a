// The device-independent check every backend runs before a kernel: inputs and output present,
// not poisoned, with storage big enough for their metas, and the output's meta the one the op's
// shape rule gives (so a kernel never reads or writes outside its tensors, whatever the wire said).
#pragma once

#include "libgtcore/status.h"
#include "workerd/backend.h"

namespace gt::worker {

Status check_kernel_args(const KernelArgs& args);

}  // namespace gt::worker
