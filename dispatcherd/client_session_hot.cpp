// Hot paths replayed by reference (ARCHITECTURE §7, issue 11 step 2). When the detector cuts a
// stretch that is a hot path, planned in one frame (nothing poisoned), the dispatcher has already
// done all its work for it: validation, placement, sharding plans and their exchanges, handles,
// quota charges. What remains is what goes on the wire. Each worker's part of the stretch (a
// consecutive range of its batch of this frame) becomes one HotRun {path, bindings, first_out,
// upload payloads, tag_base}; the first time on that worker the HotPath (the part's
// instructions over symbolic references) goes with it. A sharded stretch has a part on each
// member, their exchanges included: tags are relative to the stretch's first collective, and
// each run's tag_base puts them back, so the members pair the same messages as eagerly. The
// worker runs the part's instructions exactly as it would have run the batch's (and may fuse
// them: workerd/hot_path_store.h).
//
// A stretch split over frames (a client's flusher sends as it goes) is held back while it is the
// beginning of a hot path (hold_if_hot): every worker batch of the frame, or none, so that no
// member of a sharded stretch waits in an exchange for a peer's batch held back.
//
// Each part is hashed as its HotPath would hold it; a repetition whose part differs from the
// one its worker holds (planned differently since: a worker joined, say) defines it again. A
// part that does not qualify (a handle out of its range) is sent eagerly: the members of a
// sharded path need not agree, each runs the same instructions in the same order either way.
//
// Frees inside a part: those of the stretch's own results belong to the path (the signature
// records where they fall, so every repetition frees the same ones); those of older tensors are
// not part of it and move right after the HotRun (later is always safe for a free). The batch's
// sequence cost is unchanged (WorkerBatch.hot_extra), so acks, windows and quotas see the
// replayed stretch as its eager instructions.
#include <algorithm>
#include <bit>
#include <limits>
#include <type_traits>

#include "dispatcherd/client_session.h"
#include "dispatcherd/dispatcher.h"
#include "libgtcore/comm.h"

namespace gt::dispatcher {

void ClientSession::note_worker_instr(WorkerState& w) {
  if (!hot_.enabled() || !span_.eligible) return;
  if (!span_.started) {
    span_.started = true;
    span_.first_tag = pool_.peek_comm_tag();
  }
  for (const WorkerSpan& s : span_.workers)
    if (s.worker == w.id) return;
  const v1::WorkerBatch& b = pool_.scratch_for(w, id_);
  span_.workers.push_back(
      WorkerSpan{w.id, b.instrs_size(), b.frees_size(), w.next_handle, w.scratch_cost_ns});
}

void ClientSession::note_payload(size_t bytes) {
  if (hot_.enabled() && span_.eligible) span_.payload_bytes += bytes;
}

void ClientSession::note_plain_instr(WorkerState& w, size_t payload_bytes) {
  note_payload(payload_bytes);
  note_worker_instr(w);
  // (which upload a cached plan carries where: client_session_plan.cpp)
  if (payload_bytes > 0 && stretch_log_.active && stretch_log_.cacheable)
    stretch_log_.uploads.push_back(StretchLog::Upload{
        stretch_log_.current, w.id, pool_.scratch_for(w, id_).instrs_size()});
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
      log_instrs_ || log_->enabled() || span_.payload_bytes > kMaxHeldPayloadBytes)
    return;
  // Every worker's part of the stretch is held, or none: a member's exchange must never wait
  // for a part held back (nor leave before its peer's in the global order). What the frame's
  // batches hold before the stretch (earlier segments' HotRuns: hot_paths.h) goes out now.
  const std::vector<uint32_t>& touched = pool_.touched();
  for (const WorkerSpan& s : span_.workers)
    if (std::find(touched.begin(), touched.end(), s.worker) == touched.end()) return;
  if (!hot_.follows_hot_path()) return;
  held_.batches.clear();
  held_.bytes = 0;
  for (WorkerSpan& s : span_.workers) {
    HeldBatch h;
    h.worker = s.worker;
    // (cannot fail: every part's worker holds a batch of this frame, checked above)
    pool_.take_scratch_tail(s.worker, s.first_instr, s.first_free, s.first_cost_ns, &h.batch,
                            &h.cost_ns, &h.comm);
    // Restored first thing in the next frame: the part then begins its worker's batch.
    s.first_instr = 0;
    s.first_free = 0;
    s.first_cost_ns = 0;
    held_.bytes += h.batch.ByteSizeLong();
    held_.batches.push_back(std::move(h));
  }
  held_.active = true;
  arm_hold_deadline();
}

void ClientSession::arm_hold_deadline() {
  const uint64_t generation = ++hold_generation_;
  if (!hold_timer_) hold_timer_ = std::make_unique<asio::steady_timer>(conn_->io->socket().get_executor());
  hold_timer_->expires_after(std::chrono::microseconds(kHoldMicros));
  hold_timer_->async_wait([this, alive = alive_, generation](boost::system::error_code ec) {
    if (ec || !*alive || hold_generation_ != generation || !(held_.active || buffer_.active)) return;
    release_held();
  });
}

void ClientSession::restore_held() {
  held_.active = false;
  for (HeldBatch& h : held_.batches)
    pool_.restore_scratch(h.worker, id_, std::move(h.batch), h.cost_ns, h.comm);
  held_.batches.clear();
}

void ClientSession::release_held() {
  pool_.begin_frame();
  if (held_.active) restore_held();
  spill();  // (a buffered stretch: client_session_plan.cpp)
  span_.eligible = false;  // what follows arrives in a later frame: eager
  pool_.flush();
  update_flow_control();
}

void ClientSession::replay_by_reference(uint64_t path) {
  bool replayed = false, all = true;
  part_records_.clear();
  for (const WorkerSpan& span : span_.workers) {
    PartRecord rec;
    const bool ok = replay_on_worker(path, span, &rec);
    if (ok) part_records_.push_back(std::move(rec));
    replayed = replayed || ok;
    all = all && ok;
  }
  if (replayed) ++hot_replays_;
  // Its plan, for the next repetitions (client_session_plan.cpp): only of a stretch sent whole
  // as HotRuns.
  if (replayed && all) record_plan(path);
  else plans_.erase(path);
}

namespace {
// A part's hash (what its HotPath holds), a word at a time (MurmurHash3's 64-bit block step): it
// only tells a part from the one defined before under the same signature.
struct PartHash {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  void add(uint64_t v) {
    v *= 0x87c37b91114253d5ull;
    v = std::rotl(v, 31) * 0x4cf5ad432745937full;
    h = std::rotl(h ^ v, 27) * 5 + 0x52dce729;
  }
  void add(double v) { add(std::bit_cast<uint64_t>(v)); }
  template <class R>
  void add_all(const R& r) {
    add(static_cast<uint64_t>(r.size()));
    for (auto v : r) {
      if constexpr (std::is_floating_point_v<decltype(v)>) add(static_cast<double>(v));
      else add(static_cast<uint64_t>(v));
    }
  }
};
}  // namespace

bool ClientSession::replay_on_worker(uint64_t path, const WorkerSpan& span, PartRecord* rec) {
  WorkerState* wp = pool_.find(span.worker);
  if (!wp) return false;
  WorkerState& w = *wp;
  v1::WorkerBatch& b = pool_.scratch_for(w, id_);
  const int i0 = span.first_instr, f0 = span.first_free;
  const int n = b.instrs_size() - i0;
  if (n <= 0 || f0 > b.frees_size()) return false;
  const uint64_t first = span.first_handle, end = w.next_handle;
  if (end < first || end - first > static_cast<uint64_t>(n)) return false;

  // Result handle -> the instruction (of the path) that made it.
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t>& made_by = scratch_result_instr_;
  made_by.assign(static_cast<size_t>(end - first), kNone);
  for (int k = 0; k < n; ++k) {
    const uint64_t out = b.instrs(i0 + k).out();
    if (out == 0) continue;
    if (out < first || out >= end) return false;  // not this stretch's handle: leave it eager
    made_by[out - first] = static_cast<uint32_t>(k);
  }
  auto local = [&](uint64_t h) { return h >= first && h < end && made_by[h - first] != kNone; };

  // The part as its HotPath would hold it: references (an input made in the part, or a binding
  // slot), communication tags relative to the stretch's first, frees of its own results.
  v1::Instr run;
  v1::HotRun* hot = run.mutable_hot();
  std::unordered_map<uint64_t, uint32_t>& slot_of = scratch_slots_;
  slot_of.clear();
  std::vector<uint64_t>& refs = scratch_refs_;
  refs.clear();
  std::vector<PartTag>& tags = scratch_tags_;  // per instruction (communication only)
  tags.assign(static_cast<size_t>(n), PartTag{});
  PartHash hash;
  bool exchanges = false;
  uint64_t replaced_bytes = 0;  // what the worker batch will no longer carry
  for (int k = 0; k < n; ++k) {
    const v1::Instr& in = b.instrs(i0 + k);
    replaced_bytes += in.ByteSizeLong();
    hash.add(uint64_t{in.op()});
    hash.add(uint64_t{in.comm()});
    hash.add(static_cast<uint64_t>(in.dtype()));
    hash.add(uint64_t{in.out() != 0});
    hash.add_all(in.shape());
    hash.add_all(in.reals());
    PartTag& tag = tags[static_cast<size_t>(k)];
    if (in.comm() != 0) {
      const auto c = comm_from_wire(in.comm());
      if (!c) return false;
      tag.index = comm_tag_int(*c);
      if (in.ints_size() <= tag.index) return false;
      const uint64_t abs = static_cast<uint64_t>(in.ints(tag.index));
      if (abs < span_.first_tag || abs >= pool_.peek_comm_tag()) return false;
      tag.relative = abs - span_.first_tag;
      exchanges = true;
    }
    hash.add(static_cast<uint64_t>(in.ints_size()));
    for (int i = 0; i < in.ints_size(); ++i)
      hash.add(i == tag.index ? tag.relative : static_cast<uint64_t>(in.ints(i)));
    hash.add(static_cast<uint64_t>(in.inputs_size()));
    for (uint64_t h : in.inputs()) {
      uint64_t ref;
      if (local(h)) {
        ref = static_cast<uint64_t>(made_by[h - first]) << 1;
      } else {
        auto [it, fresh] = slot_of.try_emplace(h, static_cast<uint32_t>(hot->bindings_size()));
        if (fresh) hot->add_bindings(h);
        ref = (static_cast<uint64_t>(it->second) << 1) | 1;
      }
      refs.push_back(ref);
      hash.add(ref);
    }
    hash.add(uint64_t{!in.data().empty() || in.has_shm()});
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
    hash.add(uint64_t{made_by[h - first]});
    hash.add(uint64_t{b.free_at(i) - static_cast<uint32_t>(i0)});
  }

  std::vector<HotPart>& parts = hot_defined_[path];
  auto part = std::find_if(parts.begin(), parts.end(), [&](const HotPart& p) { return p.worker == w.id; });
  const bool define = part == parts.end() || part->hash != hash.h;
  v1::HotPath def;
  size_t next_ref = 0;
  for (int k = 0; k < n; ++k) {
    v1::Instr& in = *b.mutable_instrs(i0 + k);
    if (define) {
      v1::Instr* t = def.add_instrs();
      t->set_op(in.op());
      t->set_comm(in.comm());
      *t->mutable_shape() = in.shape();
      t->set_dtype(in.dtype());
      *t->mutable_ints() = in.ints();
      const PartTag& tag = tags[static_cast<size_t>(k)];
      if (tag.index >= 0) t->set_ints(tag.index, static_cast<int64_t>(tag.relative));
      *t->mutable_reals() = in.reals();
      t->set_out(in.out() != 0 ? 1 : 0);
      for (int i = 0; i < in.inputs_size(); ++i) t->add_inputs(refs[next_ref + static_cast<size_t>(i)]);
    }
    next_ref += static_cast<size_t>(in.inputs_size());
    if (!in.data().empty() || in.has_shm()) {
      if (define) def.add_uploads(static_cast<uint32_t>(k));
      rec->upload_indices.push_back(i0 + k);
      hot->add_data()->swap(*in.mutable_data());
      if (in.has_shm() && hot->shm_size() == 0)  // entries for the uploads before it too
        for (int u = 1; u < hot->data_size(); ++u) hot->add_shm();
      if (in.has_shm()) *hot->add_shm() = in.shm();
      else if (hot->shm_size() > 0) hot->add_shm();
    }
  }
  if (define)
    for (int i = f0; i < b.frees_size(); ++i)
      if (local(b.frees(i))) {
        def.add_frees(made_by[b.frees(i) - first]);
        def.add_free_at(b.free_at(i) - static_cast<uint32_t>(i0));
      }
  replaced_bytes += 2 * own_frees;  // a free and its position, a byte or two each
  b.mutable_instrs()->DeleteSubrange(i0, n);
  b.mutable_frees()->Truncate(f0);
  b.mutable_free_at()->Truncate(f0);
  hot->set_path(path);
  hot->set_first_out(first);
  if (exchanges) hot->set_tag_base(span_.first_tag);
  *b.add_instrs() = std::move(run);
  for (uint64_t h : older) {
    b.add_frees(h);
    b.add_free_at(static_cast<uint32_t>(b.instrs_size()));
  }
  // The HotRun counts as one position; it stands for the instructions and own frees it replaced.
  b.set_hot_extra(b.hot_extra() + static_cast<uint64_t>(n) + own_frees - 1);
  uint64_t sent_bytes = b.instrs(b.instrs_size() - 1).ByteSizeLong();
  if (define) {
    // (On a worker, defining an id again replaces its definition.)
    def.set_id(path);
    def.set_bindings(static_cast<uint32_t>(b.instrs(b.instrs_size() - 1).hot().bindings_size()));
    sent_bytes += def.ByteSizeLong();
    *b.add_hot_define() = std::move(def);
    if (part == parts.end()) parts.push_back(HotPart{w.id, hash.h});
    else part->hash = hash.h;
  }
  hot_bytes_saved_ += static_cast<int64_t>(replaced_bytes) - static_cast<int64_t>(sent_bytes);
  const v1::HotRun& sent = b.instrs(b.instrs_size() - 1).hot();
  rec->worker = w.id;
  rec->first_handle = first;
  rec->handles = end - first;
  rec->instrs = static_cast<uint32_t>(n);
  rec->own_frees = static_cast<uint32_t>(own_frees);
  rec->older = std::move(older);
  rec->hash = hash.h;
  rec->exchanges = exchanges;
  rec->shm = sent.shm_size() > 0;
  rec->bindings.assign(sent.bindings().begin(), sent.bindings().end());
  rec->replaced_bytes = replaced_bytes;
  rec->sent_bytes = sent.ByteSizeLong() + 2;  // (what a HotRun costs a repetition, about)
  rec->cost_ns = w.scratch_cost_ns >= span.first_cost_ns ? w.scratch_cost_ns - span.first_cost_ns : 0;
  return true;
}

void ClientSession::forget_hot_paths(const std::vector<uint64_t>& paths) {
  for (uint64_t path : paths) {
    auto it = hot_defined_.find(path);
    plans_.erase(path);
    if (it == hot_defined_.end()) continue;
    for (const HotPart& part : it->second)
      if (WorkerState* w = pool_.find(part.worker)) pool_.scratch_for(*w, id_).add_hot_forget(path);
    hot_defined_.erase(it);
  }
}

}  // namespace gt::dispatcher
