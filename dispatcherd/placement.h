// Where a tensor lives (ARCHITECTURE §5, the DTensor / GSPMD / SBP model):
//   Single(w)                   the whole tensor on one worker
//   Shard(axis, workers, ext)   slices along `axis`, member i holding extents[i] rows of it
//   Replicate(workers)          a full copy on each worker
//   Partial(workers, sum)       each worker holds an addend; the value is their sum, resolved
//                               lazily (all-reduce / reduce) only when something needs it
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "libgtcore/shape.h"
#include "proto/gt.pb.h"

namespace gt::dispatcher {

enum class PlacementKind : uint8_t { kSingle, kShard, kReplicate, kPartial };

struct Placement {
  PlacementKind kind = PlacementKind::kSingle;
  std::vector<uint32_t> workers;  // Single: one; otherwise the group, in order
  int axis = 0;                   // Shard
  std::vector<int64_t> extents;   // Shard: per member, along axis

  static Placement single(uint32_t w) { return Placement{PlacementKind::kSingle, {w}, 0, {}}; }
  static Placement replicate(std::vector<uint32_t> ws) {
    return Placement{PlacementKind::kReplicate, std::move(ws), 0, {}};
  }
  static Placement partial(std::vector<uint32_t> ws) {
    return Placement{PlacementKind::kPartial, std::move(ws), 0, {}};
  }
  // Even split of `extent` over `ws` (the first members get one more when it does not divide).
  static Placement shard(int axis, std::vector<uint32_t> ws, int64_t extent);

  bool is_single() const { return kind == PlacementKind::kSingle; }
  int index_of(uint32_t w) const;
  int64_t offset_of(int member) const;  // Shard: where member's slice starts along axis
  // The meta of member i's local piece of a tensor with global meta `m`.
  TensorMeta local_meta(const TensorMeta& m, int member) const;
  bool same_as(const Placement& o) const;
  std::string str() const;  // "Shard(0, [0 1], [4 4])"
};

// The dispatcher's record of one session tensor.
struct TensorEntry {
  TensorMeta meta;                                // the global shape and dtype
  Placement placement;
  std::vector<uint64_t> handles;                  // per placement member; empty when poisoned
  std::shared_ptr<const v1::ErrorInfo> poison;    // set when the dispatcher knows it failed
  // Its first worker's next unused handle at its latest in-place write (0: none): a tensor
  // written in place can carry the poison of a failure newer than its own handle, so the error
  // ledger dates it by this (ErrorLedger::identify_fetched).
  uint64_t written_at = 0;
  int64_t charged = 0;                            // bytes counted against the user's quota
  bool live() const { return !poison && !handles.empty(); }
};

}  // namespace gt::dispatcher
