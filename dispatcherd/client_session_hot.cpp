// Hot paths replayed by reference (ARCHITECTURE §7, issue 11 step 2). When the detector cuts a
// stretch that is a hot path, and every instruction of it went as is into one worker's batch of
// this frame (no sharding, no moves, nothing poisoned), the dispatcher has already done all its
// work for it: validation, placement, handles, quota charges. What remains is what goes on the
// wire. The stretch's range of that batch becomes one HotRun {path, bindings, first_out, upload
// payloads}; the first time on that worker the HotPath (the same instructions over symbolic
// references) goes with it. The worker runs the path's instructions exactly as it would have run
// the batch's (and may fuse them: workerd/hot_path_store.h).
//
// Frees inside the range: those of the stretch's own results belong to the path (the signature
// records where they fall, so every repetition frees the same ones); those of older tensors are
// not part of it and move right after the HotRun (later is always safe for a free). The batch's
// sequence cost is unchanged (WorkerBatch.hot_extra), so acks, windows and quotas see the
// replayed stretch as its eager instructions.
#include <limits>

#include "dispatcherd/client_session.h"
#include "dispatcherd/dispatcher.h"

namespace gt::dispatcher {

void ClientSession::note_plain_instr(WorkerState& w, size_t payload_bytes) {
  if (!span_.eligible) return;
  span_.payload_bytes += payload_bytes;
  if (!span_.started) {
    const v1::WorkerBatch& b = pool_.scratch_for(w, id_);
    span_.started = true;
    span_.worker = w.id;
    span_.first_instr = b.instrs_size();
    span_.first_free = b.frees_size();
    span_.first_handle = w.next_handle;
    return;
  }
  if (w.id != span_.worker) span_.eligible = false;
}

namespace {
// How long a held batch may wait for the rest of its stretch: a client's flusher sends the
// next part within microseconds; one that stops mid-stretch (host work before its sync) gets
// its work started this much later, at most.
constexpr int kHoldMicros = 2000;
// Uploads beyond this in a held stretch: sent instead (memory held for a client is bounded).
constexpr uint64_t kMaxHeldPayloadBytes = uint64_t{64} << 20;
}  // namespace

void ClientSession::hold_if_hot() {
  if (!span_.started || !span_.eligible || held_.active || !opts_.hot_path_replay ||
      log_instrs_ || log_->enabled() || span_.payload_bytes > kMaxHeldPayloadBytes ||
      !hot_.follows_hot_path())
    return;
  if (!pool_.take_scratch(span_.worker, &held_.batch, &held_.cost_ns)) return;
  held_.active = true;
  held_.worker = span_.worker;
  held_.bytes = held_.batch.ByteSizeLong();
  const uint64_t generation = ++held_.generation;
  if (!hold_timer_) hold_timer_ = std::make_unique<asio::steady_timer>(conn_->io->socket().get_executor());
  hold_timer_->expires_after(std::chrono::microseconds(kHoldMicros));
  hold_timer_->async_wait([this, alive = alive_, generation](boost::system::error_code ec) {
    if (ec || !*alive || !held_.active || held_.generation != generation) return;
    release_held();
  });
}

void ClientSession::restore_held() {
  held_.active = false;
  pool_.restore_scratch(held_.worker, id_, std::move(held_.batch), held_.cost_ns);
  held_.batch.Clear();
}

void ClientSession::release_held() {
  pool_.begin_frame();
  restore_held();
  span_.eligible = false;  // what follows arrives in a later frame: eager
  pool_.flush();
  update_flow_control();
}

void ClientSession::replay_by_reference(uint64_t path) {
  WorkerState* wp = pool_.find(span_.worker);
  if (!wp) return;
  WorkerState& w = *wp;
  auto defined = hot_defined_.find(path);
  // (The signature holds every outside tensor's placement, so a path stays on its worker; a
  // creation-only path whose session moved home would run eagerly.)
  if (defined != hot_defined_.end() && defined->second != w.id) return;
  v1::WorkerBatch& b = pool_.scratch_for(w, id_);
  const int i0 = span_.first_instr, f0 = span_.first_free;
  const int n = b.instrs_size() - i0;
  if (n <= 0 || f0 > b.frees_size()) return;
  const uint64_t first = span_.first_handle, end = w.next_handle;
  if (end < first || end - first > static_cast<uint64_t>(n)) return;

  // Result handle -> the instruction (of the path) that made it.
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t>& made_by = scratch_result_instr_;
  made_by.assign(static_cast<size_t>(end - first), kNone);
  for (int k = 0; k < n; ++k) {
    const uint64_t out = b.instrs(i0 + k).out();
    if (out == 0) continue;
    if (out < first || out >= end) return;  // not this stretch's handle: leave it eager
    made_by[out - first] = static_cast<uint32_t>(k);
  }
  auto local = [&](uint64_t h) { return h >= first && h < end && made_by[h - first] != kNone; };

  // What the worker batch will no longer carry (the HotRun, and the definition once, are
  // counted against it).
  uint64_t replaced_bytes = 0;
  for (int k = 0; k < n; ++k) replaced_bytes += b.instrs(i0 + k).ByteSizeLong();

  const bool define = defined == hot_defined_.end();
  v1::Instr run;
  v1::HotRun* hot = run.mutable_hot();
  v1::HotPath def;
  std::unordered_map<uint64_t, uint32_t>& slot_of = scratch_slots_;
  slot_of.clear();
  for (int k = 0; k < n; ++k) {
    v1::Instr& in = *b.mutable_instrs(i0 + k);
    v1::Instr* t = define ? def.add_instrs() : nullptr;
    if (t) {
      t->set_op(in.op());
      *t->mutable_shape() = in.shape();
      t->set_dtype(in.dtype());
      *t->mutable_ints() = in.ints();
      *t->mutable_reals() = in.reals();
      t->set_out(in.out() != 0 ? 1 : 0);
    }
    for (uint64_t h : in.inputs()) {
      uint64_t ref;
      if (local(h)) {
        ref = static_cast<uint64_t>(made_by[h - first]) << 1;
      } else {
        auto [it, fresh] = slot_of.try_emplace(h, static_cast<uint32_t>(hot->bindings_size()));
        if (fresh) hot->add_bindings(h);
        ref = (static_cast<uint64_t>(it->second) << 1) | 1;
      }
      if (t) t->add_inputs(ref);
    }
    if (!in.data().empty() || in.has_shm()) {
      if (define) def.add_uploads(static_cast<uint32_t>(k));
      hot->add_data()->swap(*in.mutable_data());
      if (in.has_shm() && hot->shm_size() == 0)  // entries for the uploads before it too
        for (int u = 1; u < hot->data_size(); ++u) hot->add_shm();
      if (in.has_shm()) *hot->add_shm() = in.shm();
      else if (hot->shm_size() > 0) hot->add_shm();
    }
  }
  // The range's frees: the path's own, or older tensors' (after the HotRun).
  std::vector<uint64_t> older;
  uint64_t own_frees = 0;
  for (int i = f0; i < b.frees_size(); ++i) {
    const uint64_t h = b.frees(i);
    if (!local(h)) {
      older.push_back(h);
      continue;
    }
    ++own_frees;
    if (define) {
      def.add_frees(made_by[h - first]);
      def.add_free_at(b.free_at(i) - static_cast<uint32_t>(i0));
    }
  }
  replaced_bytes += 2 * own_frees;  // a free and its position, a byte or two each
  b.mutable_instrs()->DeleteSubrange(i0, n);
  b.mutable_frees()->Truncate(f0);
  b.mutable_free_at()->Truncate(f0);
  hot->set_path(path);
  hot->set_first_out(first);
  *b.add_instrs() = std::move(run);
  for (uint64_t h : older) {
    b.add_frees(h);
    b.add_free_at(static_cast<uint32_t>(b.instrs_size()));
  }
  // The HotRun counts as one position; it stands for the instructions and own frees it replaced.
  b.set_hot_extra(b.hot_extra() + static_cast<uint64_t>(n) + own_frees - 1);
  uint64_t sent_bytes = b.instrs(b.instrs_size() - 1).ByteSizeLong();
  if (define) {
    def.set_id(path);
    def.set_bindings(static_cast<uint32_t>(hot->bindings_size()));
    sent_bytes += def.ByteSizeLong();
    *b.add_hot_define() = std::move(def);
    hot_defined_.emplace(path, w.id);
  }
  hot_bytes_saved_ += static_cast<int64_t>(replaced_bytes) - static_cast<int64_t>(sent_bytes);
  ++hot_replays_;
}

void ClientSession::forget_hot_paths(const std::vector<uint64_t>& paths) {
  for (uint64_t path : paths) {
    auto it = hot_defined_.find(path);
    if (it == hot_defined_.end()) continue;
    if (WorkerState* w = pool_.find(it->second)) pool_.scratch_for(*w, id_).add_hot_forget(path);
    hot_defined_.erase(it);
  }
}

}  // namespace gt::dispatcher
