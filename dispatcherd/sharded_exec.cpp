// Ops over placements other than "everything on one worker" (ARCHITECTURE §5): the planner decides
// where the result lives and what each input must look like; here the moves are emitted as
// communication instructions, each member runs its local piece, and the result is recorded.
// ClientSession members: the session's rewriting, for ops that are not on one worker.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "dispatcherd/client_session.h"
#include "dispatcherd/cost_model.h"
#include "dispatcherd/dispatcher.h"
#include "libgtcore/instr_codec.h"
#include "libgtcore/shape_rules.h"

namespace gt::dispatcher {

uint64_t ClientSession::emit_op(uint32_t worker, OpId op, const OpAttrs& attrs,
                                std::span<const uint64_t> inputs, bool has_out) {
  WorkerState& w = pool_.at(worker);
  note_worker_instr(w);  // (a sharded stretch may be replayed: client_session_hot.cpp)
  v1::Instr* in = pool_.scratch_for(w, id_).add_instrs();
  encode_instr(op, attrs, in);
  for (uint64_t h : inputs) in->add_inputs(h);
  uint64_t h = has_out ? w.next_handle++ : 0;
  in->set_out(h);
  workers_used_.insert(worker);
  return h;
}

uint64_t ClientSession::emit_comm(uint32_t worker, CommId comm, const OpAttrs& attrs,
                                  std::span<const uint64_t> inputs) {
  WorkerState& w = pool_.at(worker);
  note_worker_instr(w);
  v1::Instr* in = pool_.scratch_for(w, id_).add_instrs();
  encode_comm_instr(comm, attrs, in);
  for (uint64_t h : inputs) in->add_inputs(h);
  uint64_t h = comm == CommId::k_send ? 0 : w.next_handle++;
  in->set_out(h);
  w.scratch_comm = true;
  workers_used_.insert(worker);
  return h;
}

void ClientSession::run_planned(const v1::Instr& in, OpId op, const OpAttrs& attrs,
                                const std::vector<TensorEntry*>& inputs, const TensorMeta& meta,
                                const std::optional<ShardSpec>& scope) {
  const char* name = op_name(op);
  const uint64_t out = in.out();
  PlanContext ctx;
  ctx.scope = scope;
  ctx.all_workers = pool_.live_ids();
  ctx.home = home_worker_;
  ctx.auto_shard = opts_.auto_shard;
  if (ctx.all_workers.empty() || !has_home_) {
    poison(out, name, unavailable("no worker is available for this session"));
    return;
  }
  if (scope) {
    for (uint32_t w : scope->workers)
      if (!pool_.contains(w)) {
        poison(out, name, not_found("signal scope names worker {}, which is not registered", w));
        return;
      }
  }
  std::vector<PlanInput> pin;
  for (const TensorEntry* e : inputs) pin.push_back(PlanInput{e->meta, e->placement});
  OpPlan plan = plan_op(op, attrs, pin, meta, ctx);
  if (op == OpId::k_host_chunk && plan.fallback) {
    poison(0, name, failed_precondition("uploads go to one worker: this tensor is spread over several"));
    return;
  }
  if (log_instrs_)
    spdlog::trace("session {}: {} -> id {} {} {} placed {}{}", id_, name, out, meta.shape.str(),
                  dtype_name(meta.dtype), plan.out.str(), plan.fallback ? " (gathered)" : "");
  if (log_->enabled())
    log_->write("RECV", source_of(*conn_), name, static_cast<uint64_t>(meta.nbytes()),
                fmt::format("id={} shape={} dtype={} -> {}{}", out, meta.shape.str(),
                            dtype_name(meta.dtype), plan.out.str(), plan.fallback ? " (gathered)" : ""));
  // Inputs into the placements the plan needs (moves emitted now, in order).
  std::vector<std::pair<uint32_t, uint64_t>> temps;
  std::vector<std::vector<uint64_t>> in_handles;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto hs = materialize(*inputs[i], plan.want[i], &temps);
    if (!hs.is_ok()) {
      poison(out, name, hs.status());
      return;
    }
    in_handles.push_back(std::move(*hs));
  }
  const bool in_place = is_in_place(op);
  int64_t bytes = 0;
  for (size_t m = 0; m < plan.out.workers.size(); ++m)
    bytes += plan.out.local_meta(meta, static_cast<int>(m)).nbytes();
  // Re-placed inputs are temporaries held while this op runs: they count against the quota
  // too (bounded from above: a whole copy per member plus one), so sharding cannot exceed it.
  int64_t transient = 0;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i]->placement.same_as(plan.want[i]))
      transient += inputs[i]->meta.nbytes() * static_cast<int64_t>(plan.want[i].workers.size() + 1);
  if (plan.post_scale || plan.post_reduce) transient += bytes;
  if (!charge_new(out, name, (in_place ? 0 : bytes) + transient)) return;
  std::vector<uint64_t> out_handles;
  std::vector<uint64_t> args;
  std::string payload;  // from_host data outlives the local attrs that view it
  for (size_t m = 0; m < plan.out.workers.size(); ++m) {
    const uint32_t w = plan.out.workers[m];
    args.clear();
    for (const auto& hs : in_handles) args.push_back(hs[m]);
    OpAttrs la = local_attrs(plan, op, attrs, meta, static_cast<int>(m));
    uint64_t h = emit_op(w, plan.local_op, la, args, !in_place);
    if (plan.post_scale) {
      OpAttrs sc = make_binary_scalar(ScalarSide::kRight, *plan.post_scale, false);
      uint64_t scaled = emit_op(w, OpId::k_mul, sc, std::span<const uint64_t>(&h, 1));
      temps.emplace_back(w, h);
      h = scaled;
    }
    out_handles.push_back(h);
  }
  {  // each member's share of the op's estimated work (inputs' global metas: an upper bound)
    std::vector<TensorMeta> in_metas;
    for (const TensorEntry* e : inputs) in_metas.push_back(e->meta);
    const uint64_t members = plan.out.workers.size();
    for (uint32_t w : plan.out.workers) {
      WorkerState& ws = pool_.at(w);
      ws.scratch_cost_ns += estimate_cost_ns(op, meta, in_metas, ws.speedup) / members;
    }
  }
  if (plan.post_reduce) {  // extremes of each slice -> the extreme of all, on every member
    uint64_t tag = pool_.next_comm_tag();
    OpAttrs ar = make_all_reduce(tag, *plan.post_reduce, plan.out.workers);
    for (size_t m = 0; m < plan.out.workers.size(); ++m) {
      uint32_t w = plan.out.workers[m];
      uint64_t h = emit_comm(w, CommId::k_all_reduce, ar, std::span<const uint64_t>(&out_handles[m], 1));
      temps.emplace_back(w, out_handles[m]);
      out_handles[m] = h;
    }
  }
  // Inputs re-placed for this op (gathered, sliced, summed, moved) are the plan's own
  // temporaries: freed right after it, in stream order. The destination of an in-place op keeps
  // its new handles.
  for (size_t i = in_place ? 1 : 0; i < in_handles.size(); ++i) {
    const auto& own = inputs[i]->handles;
    for (size_t m = 0; m < in_handles[i].size(); ++m) {
      uint64_t h = in_handles[i][m];
      if (std::find(own.begin(), own.end(), h) != own.end()) continue;
      std::pair<uint32_t, uint64_t> t{plan.want[i].workers[m], h};
      if (std::find(temps.begin(), temps.end(), t) == temps.end()) temps.push_back(t);
    }
  }
  if (in_place) {  // the destination's (possibly new) handles are not temporaries
    std::erase_if(temps, [&](const auto& t) {
      for (size_t m = 0; m < in_handles[0].size(); ++m)
        if (plan.out.workers[m] == t.first && in_handles[0][m] == t.second) return true;
      return false;
    });
  }
  for (auto& [w, h] : temps) pool_.emit_free(pool_.at(w), id_, h);
  if (in_place) {
    TensorEntry& dst = *inputs[0];
    if (!dst.placement.same_as(plan.out)) {
      // Re-homed: copy_ made a Partial destination replicas, strided_copy_ gathered a sharded or
      // partial one to one worker. The old handles go, but for one the new placement took over
      // as it was (a move to where it already is), and the quota counts the new placement.
      for (size_t m = 0; m < dst.handles.size(); ++m) {
        const uint32_t w = dst.placement.workers[m];
        bool kept = false;
        for (size_t k = 0; k < in_handles[0].size(); ++k)
          kept = kept || (plan.out.workers[k] == w && in_handles[0][k] == dst.handles[m]);
        if (!kept && dst.handles[m] != 0) pool_.emit_free(w, id_, dst.handles[m]);
      }
      charge(dst, bytes - dst.charged);
      dst.placement = plan.out;
    }
    dst.handles = in_handles[0];
    dst.written_at = pool_.at(dst.placement.workers[0]).next_handle;
    return;
  }
  TensorEntry e;
  e.meta = meta;
  e.placement = plan.out;
  e.handles = std::move(out_handles);
  charge(e, bytes);
  tensors_.emplace(out, std::move(e));
}

Result<std::pair<uint32_t, uint64_t>> ClientSession::fetch_source(TensorEntry& e) {
  if (e.placement.kind == PlacementKind::kSingle || e.placement.kind == PlacementKind::kReplicate)
    return std::make_pair(e.placement.workers[0], e.handles[0]);
  uint32_t w0 = e.placement.workers[0];
  std::vector<std::pair<uint32_t, uint64_t>> temps;
  GT_ASSIGN_OR_RETURN(auto hs, materialize(e, Placement::single(w0), &temps));
  // Freed after the fetch has read them (requests run after frees within a batch).
  for (auto& [w, h] : temps) deferred_frees_[w].push_back(h);
  bool own = std::find(e.handles.begin(), e.handles.end(), hs[0]) != e.handles.end();
  if (!own) deferred_frees_[w0].push_back(hs[0]);
  return std::make_pair(w0, hs[0]);
}

}  // namespace gt::dispatcher
