// Hot paths replayed without planning them again (ARCHITECTURE §7, issue 11 step 2; the data in
// hot_plan.h). Replaying by reference (client_session_hot.cpp) replaces what goes on the wire;
// the dispatcher still validated, placed and rewrote every instruction of the stretch first. Once
// a hot path has been replayed, its plan is kept: where each result lives and which handles it
// takes (relative to each worker part's first), the parts' bindings as (outside tensor, member),
// their uploads, exchanges (tags relative to the stretch's first), quota charges and costs.
//
// A later stretch that begins while the session holds plans is buffered: each instruction is
// checked for what a signature cannot vouch for (its ids: inputs known, live and not freed, a
// fresh result id; no shared-memory payload) and added to the detector's signature, not planned.
// If the stretch ends as a hot path with a usable plan, the plan is applied: the parts' HotRuns
// go to the workers with this repetition's bindings, handles and payloads, the results' records
// are made, the quota charged, the outside tensors freed in it freed after. The signature being
// the same (ops, attributes, shapes, dtypes, placements of the outside tensors, dataflow,
// scopes), the same worker set and configs, and the quota fitting the stretch's charges, eager
// planning could not have decided anything else. Whatever else happens (the stretch leaves every
// hot path, an annotation changes the plan, a worker joined or left, the quota could be passed,
// the buffer grows past its bound, the hold deadline passes: release_held) the buffered items are
// planned then, in order, as on arrival (spill): the eager path, with the same errors.
#include <algorithm>
#include <map>

#include "dispatcherd/client_session.h"
#include "dispatcherd/dispatcher.h"
#include "dispatcherd/dispatcher_options.h"

namespace gt::dispatcher {

namespace {
// As a held stretch (client_session_hot.cpp, which has the deadline): uploads beyond this are
// planned and sent instead.
constexpr uint64_t kMaxBufferedPayloadBytes = uint64_t{64} << 20;

bool is_annotation(const v1::Instr& in) { return in.op() == 0 && in.comm() == 0; }
}  // namespace

bool ClientSession::logging_stretch() const {
  return hot_.enabled() && opts_.hot_path_replay && opts_.hot_path_plans && !log_instrs_ &&
         !log_->enabled();
}

// ---- the stretch log ---------------------------------------------------------------------------

void ClientSession::log_instr(const v1::Instr& in, std::span<TensorEntry* const> entries,
                              uint64_t out, bool in_place) {
  if (!stretch_log_.active) {
    if (!logging_stretch()) return;
    stretch_log_.active = true;
  }
  StretchLog& L = stretch_log_;
  // A stretch that can no longer be a hot path (refused, or past hot_path_max_length) is not
  // logged further: nothing would read it, and a stretch without a sync point has no end.
  if (!hot_.candidate()) L.cacheable = false;
  if (!L.cacheable) return;
  const auto k = static_cast<uint32_t>(L.outs.size());
  L.current = k;
  for (size_t i = 0; i < entries.size(); ++i) {
    const uint64_t id = in.inputs(static_cast<int>(i));
    if (L.locals.count(id) || L.outside.count(id)) continue;
    const TensorEntry& e = *entries[i];
    L.outside.emplace(id, static_cast<uint32_t>(L.slots.size()));
    L.slots.push_back(StretchLog::Slot{id, e.placement.workers, e.handles, e.written_at, false});
  }
  L.outs.push_back(in_place ? 0 : out);
  if (!in_place) L.locals[out] = k;
}

void ClientSession::log_free(uint64_t id, const TensorEntry& e) {
  StretchLog& L = stretch_log_;
  if (!L.active || !L.cacheable) return;
  if (auto it = L.locals.find(id); it != L.locals.end()) {
    L.locals.erase(it);
    return;
  }
  L.outside_frees.push_back(id);
  for (size_t m = 0; m < e.handles.size() && m < e.placement.workers.size(); ++m)
    L.outside_freed_handles.emplace(e.placement.workers[m], e.handles[m]);
  if (auto it = L.outside.find(id); it != L.outside.end()) {
    L.slots[it->second].freed = true;
    L.outside.erase(it);
  }
}

// ---- buffering ---------------------------------------------------------------------------------

void ClientSession::feed_instr(v1::Instr& in) {
  ++instrs_received_;
  ++usage_.instructions;
  // A long stretch is cut by length too (hot_paths.h): a whole segment, and the frees that
  // came after its last instruction, are a stretch of their own once the next instruction
  // arrives (or the client's frame says the segment ended: ClientSession::run_batch).
  const bool annotation = is_annotation(in);
  if (!annotation && hot_.segment_full()) end_stretch(/*by_length=*/true);
  if (annotation) {
    // A boundary (it changes how later instructions are planned) ends a buffered stretch under
    // the scopes it was buffered in; another annotation is only recorded in its signature.
    if (buffer_.active &&
        (!in.has_signal() || signals_.plan_key_after(in.signal()) != signals_.plan_key()))
      end_stretch();
    process_instr(in);
    return;
  }
  if (buffer_.active) {
    if (!buffer_instr(in)) {
      spill();
      process_instr(in);
    }
  } else if (!may_buffer(in) || !buffer_instr(in)) {
    process_instr(in);
  }
}

void ClientSession::feed_free(uint64_t id) {
  if (buffer_.active) buffer_free(id);
  else process_free(id);
}

bool ClientSession::may_buffer(const v1::Instr& in) const {
  return !plans_.empty() && !is_annotation(in) && logging_stretch() && !stretch_log_.active &&
         !span_.started && !held_.active;
}

bool ClientSession::buffer_instr(v1::Instr& in) {
  if (in.comm() != 0 || in.has_hot() || in.has_shm()) return false;
  const std::optional<OpId> op = op_from_wire(in.op());
  if (!op) return false;
  const bool in_place = is_in_place(*op);
  const uint64_t out = in.out();
  if (in_place ? out != 0 || in.inputs_size() == 0 : out == 0) return false;
  StretchLog& L = stretch_log_;
  if (!in_place && (tensors_.count(out) || L.locals.count(out))) return false;
  const std::optional<bool> compile = signals_.compile_mode();
  if (compile == false) return false;
  const uint64_t payload = buffer_.payload_bytes + in.data().size();
  if (payload > kMaxBufferedPayloadBytes || payload > opts_.max_frame_bytes / 4) return false;
  std::vector<TensorEntry*>& entries = scratch_entries_;
  entries.clear();
  for (uint64_t id : in.inputs()) {
    if (L.locals.count(id)) {
      entries.push_back(&local_entry_);  // (the detector reads only outside tensors' records)
      continue;
    }
    auto it = tensors_.find(id);
    if (it == tensors_.end() || !it->second.live() || buffer_.freed.count(id)) return false;
    entries.push_back(&it->second);
  }
  buffer_.active = true;
  hot_.instr(in, entries, out, signals_.innermost(), compile.value_or(false));
  log_instr(in, entries, out, in_place);
  buffer_.items.push_back(Buffered::Item{static_cast<int>(buffer_.count), 0});
  if (buffer_.count == buffer_.instrs.size()) buffer_.instrs.emplace_back();
  buffer_.instrs[buffer_.count++].Swap(&in);  // (`in` gets an old message: the frame drops it)
  buffer_.payload_bytes = payload;
  if (!hot_.follows_hot_path()) spill();  // planned now, as eagerly
  return true;
}

void ClientSession::buffer_free(uint64_t id) {
  buffer_.items.push_back(Buffered::Item{-1, id});
  if (stretch_log_.locals.count(id)) {
    hot_.free(id, local_entry_);
    log_free(id, local_entry_);
    return;
  }
  auto it = tensors_.find(id);
  if (it == tensors_.end() || buffer_.freed.count(id)) return;  // (harmless, as eagerly)
  hot_.free(id, it->second);
  log_free(id, it->second);
  buffer_.freed.insert(id);
}

void ClientSession::spill() {
  if (!buffer_.active) return;
  buffer_.active = false;  // (process_instr must not see it active)
  skip_detector_ = true;
  for (const Buffered::Item& item : buffer_.items) {
    if (item.instr < 0) {
      process_free(item.id);
      continue;
    }
    stretch_log_.current = static_cast<uint32_t>(item.instr);
    process_instr(buffer_.instrs[static_cast<size_t>(item.instr)]);
  }
  skip_detector_ = false;
  buffer_.reset();
}

// ---- plans -------------------------------------------------------------------------------------

void ClientSession::record_plan(uint64_t path) {
  plans_.erase(path);
  const StretchLog& L = stretch_log_;
  if (!L.active || !L.cacheable || !logging_stretch() || part_records_.empty()) return;
  HotPlan plan;
  plan.epoch = pool_.epoch();
  plan.config_epoch = config_epoch_;
  plan.instructions = static_cast<uint32_t>(L.outs.size());
  plan.slots = static_cast<uint32_t>(L.slots.size());
  plan.tags = pool_.peek_comm_tag() - span_.first_tag;
  plan.charged = L.charged;
  std::map<uint32_t, int32_t> part_of;
  for (size_t p = 0; p < part_records_.size(); ++p)
    part_of[part_records_[p].worker] = static_cast<int32_t>(p);
  // A handle of worker `w` as a Ref; `upto`: one past the part's results is allowed (a
  // written_at is the next unused handle).
  auto ref = [&](uint32_t w, uint64_t h, bool upto, HotPlan::Ref* r) {
    if (h == 0) return true;
    auto it = part_of.find(w);
    if (it == part_of.end()) return false;
    const PartRecord& p = part_records_[static_cast<size_t>(it->second)];
    const uint64_t offset = h - p.first_handle;
    if (h < p.first_handle || (upto ? offset > p.handles : offset >= p.handles)) return false;
    *r = HotPlan::Ref{it->second, offset};
    return true;
  };
  std::map<std::pair<uint32_t, uint64_t>, HotPlan::Binding> slot_member;
  for (size_t s = 0; s < L.slots.size(); ++s)
    for (size_t m = 0; m < L.slots[s].handles.size() && m < L.slots[s].workers.size(); ++m)
      slot_member.emplace(std::make_pair(L.slots[s].workers[m], L.slots[s].handles[m]),
                          HotPlan::Binding{static_cast<uint32_t>(s), static_cast<uint32_t>(m)});
  std::map<std::pair<uint32_t, int>, uint32_t> upload_of;
  for (const StretchLog::Upload& u : L.uploads) upload_of[{u.worker, u.index}] = u.instr;
  for (const PartRecord& r : part_records_) {
    if (r.shm) return;
    for (uint64_t h : r.older)  // a free the plan would not make
      if (!L.outside_freed_handles.count({r.worker, h})) return;
    HotPlan::Part p;
    static_cast<PartSummary&>(p) = r;
    for (uint64_t h : r.bindings) {
      auto it = slot_member.find({r.worker, h});
      if (it == slot_member.end()) return;  // a handle of no outside tensor
      p.bindings.push_back(it->second);
    }
    for (int index : r.upload_indices) {
      auto it = upload_of.find({r.worker, index});
      if (it == upload_of.end()) return;  // an upload a plan sliced or moved
      p.uploads.push_back(it->second);
    }
    plan.parts.push_back(std::move(p));
  }
  // The results that outlive the stretch, and the outside tensors it changed.
  for (const auto& [id, k] : L.locals) {
    auto it = tensors_.find(id);
    if (it == tensors_.end() || !it->second.live()) return;
    const TensorEntry& e = it->second;
    HotPlan::Result res;
    res.instr = k;
    res.meta = e.meta;
    res.placement = e.placement;
    res.charged = e.charged;
    if (e.handles.size() != e.placement.workers.size()) return;
    for (size_t m = 0; m < e.handles.size(); ++m) {
      HotPlan::Ref r;
      if (!ref(e.placement.workers[m], e.handles[m], false, &r)) return;
      res.handles.push_back(r);
    }
    if (!ref(e.placement.workers[0], e.written_at, true, &res.written_at)) return;
    plan.results.push_back(std::move(res));
  }
  for (size_t s = 0; s < L.slots.size(); ++s) {
    const StretchLog::Slot& slot = L.slots[s];
    if (slot.freed) continue;
    auto it = tensors_.find(slot.id);
    if (it == tensors_.end() || !it->second.live()) return;
    const TensorEntry& e = it->second;
    if (e.placement.workers != slot.workers || e.handles != slot.handles) return;  // re-placed
    if (e.written_at == slot.written_at) continue;
    HotPlan::Written w{static_cast<uint32_t>(s), {}};
    if (!ref(e.placement.workers[0], e.written_at, true, &w.at)) return;
    plan.written.push_back(w);
  }
  plans_.emplace(path, std::move(plan));
}

bool ClientSession::apply_plan(uint64_t path) {
  auto pit = plans_.find(path);
  if (pit == plans_.end() || !logging_stretch()) return false;
  const HotPlan& plan = pit->second;
  const StretchLog& L = stretch_log_;
  if (plan.epoch != pool_.epoch() || plan.config_epoch != config_epoch_ ||
      plan.instructions != L.outs.size() || plan.slots != L.slots.size())
    return false;
  // Eager planning charges as it goes and refuses the instruction that passes the quota: only a
  // stretch whose every charge fits is sent from the plan (frees only lower the peak).
  if (user_.max_bytes && usage_.bytes + plan.charged > user_.max_bytes) return false;
  auto dp = hot_defined_.find(path);
  if (dp == hot_defined_.end()) return false;
  std::vector<WorkerState*> workers;
  std::vector<uint64_t>& bindings = scratch_refs_;
  bindings.clear();
  for (const HotPlan::Part& p : plan.parts) {
    WorkerState* w = pool_.find(p.worker);
    if (!w || std::none_of(dp->second.begin(), dp->second.end(), [&](const HotPart& h) {
          return h.worker == p.worker && h.hash == p.hash;
        }))
      return false;
    workers.push_back(w);
    for (const HotPlan::Binding& b : p.bindings) {
      auto it = tensors_.find(L.slots[b.slot].id);
      if (it == tensors_.end() || !it->second.live()) return false;
      const TensorEntry& e = it->second;
      if (b.member >= e.handles.size() || e.placement.workers[b.member] != p.worker) return false;
      bindings.push_back(e.handles[b.member]);
    }
  }
  // Everything checked: this repetition goes out as the plan says.
  const uint64_t tag_base = pool_.peek_comm_tag();
  pool_.skip_comm_tags(plan.tags);
  std::vector<uint64_t> first(plan.parts.size());
  size_t next_binding = 0;
  for (size_t p = 0; p < plan.parts.size(); ++p) {
    const HotPlan::Part& part = plan.parts[p];
    WorkerState& w = *workers[p];
    first[p] = w.next_handle;
    w.next_handle += part.handles;
    v1::WorkerBatch& b = pool_.scratch_for(w, id_);
    v1::Instr* run = b.add_instrs();
    v1::HotRun* hot = run->mutable_hot();
    hot->set_path(path);
    for (size_t i = 0; i < part.bindings.size(); ++i) hot->add_bindings(bindings[next_binding++]);
    hot->set_first_out(first[p]);
    if (part.exchanges) {
      hot->set_tag_base(tag_base);
      w.scratch_comm = true;
    }
    for (uint32_t k : part.uploads) hot->add_data()->swap(*buffer_.instrs[k].mutable_data());
    b.set_hot_extra(b.hot_extra() + part.instrs + part.own_frees - 1);
    w.scratch_cost_ns += part.cost_ns;
    workers_used_.insert(w.id);
    hot_bytes_saved_ += static_cast<int64_t>(part.replaced_bytes) - static_cast<int64_t>(part.sent_bytes);
  }
  auto handle = [&](const HotPlan::Ref& r) {
    return r.part < 0 ? uint64_t{0} : first[static_cast<size_t>(r.part)] + r.offset;
  };
  for (const HotPlan::Result& r : plan.results) {
    TensorEntry e;
    e.meta = r.meta;
    e.placement = r.placement;
    e.handles.reserve(r.handles.size());
    for (const HotPlan::Ref& h : r.handles) e.handles.push_back(handle(h));
    e.written_at = handle(r.written_at);
    charge(e, r.charged);
    tensors_.emplace(L.outs[r.instr], std::move(e));
  }
  for (const HotPlan::Written& w : plan.written)
    if (auto it = tensors_.find(L.slots[w.slot].id); it != tensors_.end())
      it->second.written_at = handle(w.at);
  // The outside tensors freed in the stretch, after the runs that read them.
  skip_detector_ = true;
  for (uint64_t id : L.outside_frees) process_free(id);
  skip_detector_ = false;
  buffer_.reset();
  ++hot_replays_;
  ++plans_reused_;
  return true;
}

}  // namespace gt::dispatcher
