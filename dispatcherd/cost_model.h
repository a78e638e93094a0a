// A rough estimate of how long an instruction keeps a worker busy, used to bound how much work
// one session may have in flight on a worker (ARCHITECTURE §8: fairness is by cost, not only by
// count — 3,000 matmuls of 512² are few instructions but seconds of work). It needs only to
// be within a small factor: the bound keeps a flood's in-flight work to tens of milliseconds
// instead of seconds, and the worker's own time slices do the rest.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "gt/core/ops.h"
#include "libgtcore/shape.h"

namespace gt::dispatcher {

// Estimated nanoseconds on a reference CPU worker (about 8 GB/s of memory traffic and
// 20 GFLOP/s of GEMM); `speedup` scales it for faster devices.
uint64_t estimate_cost_ns(OpId op, const TensorMeta& out, std::span<const TensorMeta> inputs,
                          double speedup = 1.0);

// The reference speed of a worker's device kind ("cpu" 1, "cuda" much faster).
double device_speedup(const std::string& device_kind);

}  // namespace gt::dispatcher
