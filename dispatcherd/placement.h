// Where a tensor lives (DESIGN §5). The Foundation places every tensor on one worker
// (Single); Shard / Replicate / Partial arrive with signal-based sharding.
#pragma once

#include <cstdint>
#include <memory>

#include "libgtcore/shape.h"
#include "proto/gt.pb.h"

namespace gt::dispatcher {

enum class PlacementKind : uint8_t { kSingle, kShard, kReplicate, kPartial };

struct Placement {
  PlacementKind kind = PlacementKind::kSingle;
  uint32_t worker = 0;
};

// The dispatcher's record of one session tensor.
struct TensorEntry {
  TensorMeta meta;
  Placement placement;
  uint64_t handle = 0;                             // on placement.worker; 0 when poisoned here
  std::shared_ptr<const v1::ErrorInfo> poison;    // set when the dispatcher knows it failed
  int64_t charged = 0;                             // bytes counted against the user's quota
};

}  // namespace gt::dispatcher
