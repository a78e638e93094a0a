// The sharding rule table (ARCHITECTURE §5): for one op and the placements of its inputs, where the
// result lives, which placement each input must be in first (the dispatcher emits the moves),
// and how each member runs its local piece. Pure logic over shapes and placements — no I/O —
// so every rule is unit-testable. An op without a rule falls back to gather -> compute on one
// worker (correct first, fast where it matters).
#pragma once

#include <optional>
#include <vector>

#include "dispatcherd/placement.h"
#include "libgtcore/comm.h"
#include "libgtcore/op_attrs.h"
#include "gt/core/ops.h"
#include "libgtcore/signal_config.h"

namespace gt::dispatcher {

struct PlanInput {
  TensorMeta meta;
  Placement placement;
};

// Where ops run when their inputs do not decide it: the innermost configured signal scope
// (already resolved into a placement recipe), else the session's home worker.
struct PlanContext {
  std::optional<ShardSpec> scope;      // from the innermost signal config with `shard:`
  std::vector<uint32_t> all_workers;   // live workers, ascending (for `workers` omitted)
  uint32_t home = 0;
  bool auto_shard = false;             // creations shard on axis 0 when divisible, else replicate
};

struct OpPlan {
  Placement out;
  std::vector<Placement> want;         // per input: re-place to this first (members == out's)
  enum class Local {
    kSame,         // each member runs the op with the original attributes
    kCreateShard,  // creation: local shape (and random offsets) per member
    kReshape,      // reshape keeping the sharded axis: local target shape per member
    kSlice,        // slice not touching the sharded axis: local extents per member
  } local = Local::kSame;
  OpId local_op;                         // usually the op itself (mean over a shard: sum)
  std::optional<double> post_scale;      // then multiply each member's result (mean)
  std::optional<ReduceKind> post_reduce; // then all-reduce across members (max / min)
  bool fallback = false;                 // no rule: everything gathered to one worker
};

// The group a scope config describes, given the live workers ("workers omitted: all").
std::vector<uint32_t> scope_workers(const ShardSpec& spec, const std::vector<uint32_t>& all);

OpPlan plan_op(OpId op, const OpAttrs& attrs, const std::vector<PlanInput>& inputs,
               const TensorMeta& out_meta, const PlanContext& ctx);

// Member `m`'s local attributes for plan.local (creation, reshape, slice).
OpAttrs local_attrs(const OpPlan& plan, OpId op, const OpAttrs& attrs, const TensorMeta& out_meta,
                    int member);

}  // namespace gt::dispatcher
