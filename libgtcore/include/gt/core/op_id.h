// The OpId enum alone, generated from ops.def (gt/core/ops.h has the rest of the op table). Kept
// apart because the worker's fused-kernel compiler (NVRTC, which has no C++ standard library)
// compiles the elementwise math with it: nothing here may need more than the fixed-width ints.
#pragma once

// (Under NVRTC the fused-kernel source defines the fixed-width ints before it includes this.)
#ifndef __CUDACC_RTC__
#include <cstdint>
#endif

namespace gt {

enum class OpId : uint16_t {
#define GT_OP(name, wire, arity, attrs, rule) k_##name,
#include "gt/core/ops.def"
#undef GT_OP
};

}  // namespace gt
