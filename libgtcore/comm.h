// Communication instructions (comm.def): ids, names, attribute layout helpers and their shape
// rule, shared by the dispatcher (which emits them) and workers (which validate and run them).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "libgtcore/op_attrs.h"
#include "libgtcore/shape.h"

namespace gt {

enum class CommId : uint8_t {
#define GT_COMM(name, wire) k_##name,
#include "libgtcore/comm.def"
#undef GT_COMM
};

inline constexpr int kNumComms = 0
#define GT_COMM(name, wire) +1
#include "libgtcore/comm.def"
#undef GT_COMM
    ;

inline constexpr int kMaxGroup = 16;

enum class ReduceKind : int64_t { kSum = 0, kMax = 1, kMin = 2 };

const char* comm_name(CommId c);
uint32_t comm_wire_id(CommId c);
std::optional<CommId> comm_from_wire(uint32_t wire);

// A decoded collective: the group, this worker's position in it, and per-member extents.
struct CommGroup {
  std::vector<uint32_t> workers;
  std::vector<int64_t> extents;  // all_gather / reduce_scatter only
  int axis = 0;
  uint64_t tag = 0;
  ReduceKind reduce = ReduceKind::kSum;
  uint32_t peer = 0;             // send / recv
  int self_index = -1;           // this worker's position in `workers`
  int index_of(uint32_t worker) const;
};

// Which of a comm instruction's OpAttrs.ints is its tag (the layouts in comm.def): hot paths
// replace it at every run (HotRun.tag_base).
int comm_tag_int(CommId c);

// Attribute builders (dispatcher side).
OpAttrs make_send(uint32_t peer, uint64_t tag);
OpAttrs make_recv(uint32_t peer, uint64_t tag, const TensorMeta& meta);
OpAttrs make_all_reduce(uint64_t tag, ReduceKind kind, std::span<const uint32_t> group);
OpAttrs make_all_gather(uint64_t tag, int axis, std::span<const uint32_t> group,
                        std::span<const int64_t> extents);
OpAttrs make_reduce_scatter(uint64_t tag, int axis, std::span<const uint32_t> group,
                            std::span<const int64_t> extents);

// Decodes and validates a comm instruction's attributes for the worker `self`, and computes the
// result's meta (send: the input's meta). Everything that crossed the wire is checked here.
Result<CommGroup> decode_comm(CommId c, const OpAttrs& a, uint32_t self);
Result<TensorMeta> infer_comm_meta(CommId c, std::span<const TensorMeta> inputs, const OpAttrs& a,
                                   const CommGroup& g);

}  // namespace gt
