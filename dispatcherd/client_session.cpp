// Rewriting one client's instruction stream into worker streams (ARCHITECTURE §2, §5): validate every
// instruction against the session's private id namespace and the shape rules, place it, assign
// worker handles, and batch per worker. Failures poison the result here, without a round trip.
// Also the session's quota charges, its flow-control window, and its end.
#include "dispatcherd/client_session.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "dispatcherd/cost_model.h"
#include "dispatcherd/dispatcher.h"
#include "libgtcore/instr_codec.h"
#include "libgtcore/shape_rules.h"

namespace gt::dispatcher {

ClientSession::ClientSession(uint64_t id, std::shared_ptr<Conn> conn, std::string name,
                             UserPolicy user, UserUsage& usage, const Shared& shared)
    : id_(id),
      conn_(std::move(conn)),
      name_(std::move(name)),
      user_(std::move(user)),
      usage_(usage),
      opts_(shared.opts),
      log_(shared.log),
      pool_(shared.pool),
      host_(shared.host),
      signals_(&shared.opts.signal_configs),
      hot_(HotPathOptions{shared.opts.hot_paths, shared.opts.hot_path_min_repeats,
                          shared.opts.hot_path_cache, shared.opts.hot_path_max_length,
                          HotPathOptions{}.cache_bytes, shared.opts.hot_path_segment}) {
  if (!user_.window) user_.window = opts_.user_window;
}

void ClientSession::set_home(uint32_t worker) {
  home_worker_ = worker;
  has_home_ = true;
  pool_.at(worker).sessions_homed++;
}

void ClientSession::run_batch(v1::ClientBatch& batch, size_t frame_bytes) {
  ++frames_received_;
  // A held stretch and this frame in one worker batch could pass the frame limit (uploads in
  // both): the held part goes on its own first, and the stretch runs eagerly.
  if ((held_.active && held_.bytes + frame_bytes > opts_.max_frame_bytes / 2) ||
      (buffer_.active && buffer_.payload_bytes + frame_bytes > opts_.max_frame_bytes / 2))
    release_held();
  const int n_free = batch.frees_size();
  const bool placed = batch.free_at_size() == n_free;
  log_instrs_ = spdlog::should_log(spdlog::level::trace);
  pool_.begin_frame();
  // A stretch begun in an earlier frame is partly sent already (it runs eagerly), unless that
  // frame's part was held back for it.
  if (held_.active) restore_held();
  else if (span_.started) span_.eligible = false;
  // Temporaries of earlier fetches: freed now, after the requests that read them.
  free_deferred();
  // Frees in stream order, between the instructions free_at places them after.
  int next_free = 0;
  const int n_instr = batch.instrs_size();
  for (int i = 0; i < n_instr; ++i) {
    while (placed && next_free < n_free && batch.free_at(next_free) <= static_cast<uint32_t>(i))
      feed_free(batch.frees(next_free++));
    feed_instr(*batch.mutable_instrs(i));
  }
  while (next_free < n_free) feed_free(batch.frees(next_free++));
  // A compiled scope's client sends each whole segment at once: it goes now (replayed while the
  // client builds the next), not when the next instruction arrives.
  if (batch.segment_end() && hot_.segment_full()) end_stretch(/*by_length=*/true);
  if (batch.requests_size() > 0) end_stretch();
  for (const auto& r : batch.requests()) process_request(r);
  if (batch.requests_size() == 0) {
    if (buffer_.active) arm_hold_deadline();  // (client_session_plan.cpp)
    else hold_if_hot();
  }
  else span_ = StretchSpan{};  // (what a fetch of a sharded tensor emits is no stretch's)
  pool_.flush();
  update_flow_control();
}

void ClientSession::free_deferred() {
  for (auto& [wid, hs] : deferred_frees_)
    if (WorkerState* w = pool_.find(wid))
      for (uint64_t h : hs) pool_.emit_free(*w, id_, h);
  deferred_frees_.clear();
}

void ClientSession::end_stretch(bool by_length) {
  if (!hot_.enabled()) return;
  // A buffered stretch (client_session_plan.cpp) goes from its hot path's plan, or is planned
  // now, before the cut, as on arrival.
  bool from_plan = false;
  const bool empty = hot_.stretch_empty() && !buffer_.active;
  if (buffer_.active) {
    const uint64_t path = hot_.matching_path();
    from_plan = path != 0 && apply_plan(path);
    if (!from_plan) spill();
  }
  const HotPathDetector::Cut c = hot_.cut(by_length);
  if (!c.forgotten.empty()) forget_hot_paths(c.forgotten);
  const bool hot = c.outcome == HotPathDetector::Outcome::kDefined ||
                   c.outcome == HotPathDetector::Outcome::kHit;
  // Per-instruction records (the instruction log, trace-level lines) need the instructions.
  const bool by_reference = hot && !from_plan && span_.started && span_.eligible &&
                            opts_.hot_path_replay && !log_instrs_ && !log_->enabled();
  if (by_reference) replay_by_reference(c.path);
  // Held here until its end and replayed: the replies to requests that end it say so (an empty
  // stretch, two requests in a row, leaves what the last one said).
  if (!empty) last_stretch_replayed_ = from_plan || by_reference;
  span_ = StretchSpan{};
  stretch_log_.clear();
  if (!log_->enabled()) return;
  const std::string source = source_of(*conn_);
  if (c.evicted != 0) log_->write("HOT_EVICT", source, "-", 0, fmt::format("path={}", c.evicted));
  if (c.outcome != HotPathDetector::Outcome::kNone)
    log_->write(hot_outcome_event(c.outcome), source, "-", 0,
                fmt::format("path={} instrs={}", c.path, c.instructions));
}

void ClientSession::poison(uint64_t out, const std::string& op, const Status& why) {
  hot_.taint();  // a stretch with a refused or failed instruction is not replayed
  const std::string& message = why.message();
  auto err = std::make_shared<v1::ErrorInfo>();
  err->set_op(op);
  err->set_message(message);
  err->set_code(static_cast<uint32_t>(why.code()));
  err->set_origin("dispatcher");
  err->set_id(new_error_id());
  errors_.push_back(*err);
  ++errors_reported_;
  ++usage_.errors;
  host_.note_error(*this, op, message);
  if (log_->enabled()) log_->write("ERROR", source_of(*conn_), op, 0, message);
  if (out != 0 && !tensors_.count(out)) {
    TensorEntry e;
    e.poison = std::move(err);
    tensors_.emplace(out, std::move(e));
  }
}

void ClientSession::process_instr(v1::Instr& in) {
  if (in.op() == 0 && in.comm() == 0) {  // stream annotations
    if (in.has_config()) ++config_epoch_;  // (a cached plan was made under the configs before)
    const std::string plan_before = hot_.enabled() ? signals_.plan_key() : std::string();
    Status st = in.has_signal() ? signals_.apply(in.signal())
                : in.has_config() ? signals_.register_config(in.config())
                                  : invalid_argument("empty instruction");
    if (!st.is_ok()) poison(0, in.has_config() ? "config" : "signal", st);
    // A boundary that changes how later instructions are planned or compiled (a sharding scope,
    // a compiled scope, a config) ends the stretch; one that changes nothing of that (a plain
    // annotation, autograd's backward scopes inside a compiled function) is only recorded in it.
    if (!in.has_signal() || !st.is_ok() || signals_.plan_key() != plan_before) end_stretch();
    else if (hot_.enabled()) hot_.scope(signals_.innermost());
    if (log_->enabled() && in.has_signal())
      log_->write("SIGNAL", source_of(*conn_), v1::SignalEvent::Kind_Name(in.signal().kind()), 0,
                  fmt::format("name={}{}", in.signal().name(), in.signal().backward_pass() ? " backward" : ""));
    return;
  }
  if (in.comm() != 0 || in.has_hot()) {
    poison(in.out(), "instruction",
           permission_denied("{} instructions are for workers only",
                             in.comm() != 0 ? "communication" : "hot-path"));
    return;
  }
  auto dec = decode_instr(in);
  if (!dec.is_ok()) {
    poison(in.out(), "instruction", dec.status());
    return;
  }
  // A payload in the client's shared memory: read in place here (checks, planning) and by the
  // worker if it can map the arena, else copied into the instruction; released when done.
  ShmUpload upload(*this, in);
  if (in.has_shm()) {
    if (!upload.active()) {
      poison(in.out(), op_name(dec->op), upload.status());
      return;
    }
    dec->attrs.data = upload.payload();
  }
  const OpId op = dec->op;
  const char* name = op_name(op);
  const bool in_place = is_in_place(op);
  const uint64_t out = in.out();
  if (in_place ? out != 0 : out == 0) {
    poison(0, name, invalid_argument("{}", in_place ? "in-place op with a result id" : "missing result id"));
    return;
  }
  if (!in_place && tensors_.count(out)) {
    poison(0, name, invalid_argument("tensor id {} is already in use in this session", out));
    return;
  }
  // Resolve inputs in the session's own namespace: another session's ids do not exist here.
  const int n_in = in.inputs_size();
  std::vector<TensorEntry*>& entries = scratch_entries_;
  entries.clear();
  std::vector<TensorMeta>& metas = scratch_metas_;
  metas.clear();
  std::shared_ptr<const v1::ErrorInfo> inherited;
  bool one_worker = true;
  for (int i = 0; i < n_in; ++i) {
    uint64_t id = in.inputs(i);
    auto it = tensors_.find(id);
    if (it == tensors_.end()) {
      poison(out, name, not_found("unknown tensor id {} (not a tensor of this session)", id));
      return;
    }
    TensorEntry& e = it->second;
    if (e.poison && !inherited) inherited = e.poison;
    entries.push_back(&e);
    metas.push_back(e.meta);
    // (a poisoned input has no placement; the op then only inherits the poison, below)
    if (!e.poison && !inherited &&
        (!e.placement.is_single() || e.placement.workers[0] != entries[0]->placement.workers[0]))
      one_worker = false;
  }
  if (inherited) {  // dependents inherit the poison without a new report
    hot_.taint();
    if (in_place) {
      entries[0]->poison = inherited;
    } else {
      TensorEntry e;
      e.poison = inherited;
      tensors_.emplace(out, std::move(e));
    }
    return;
  }
  auto meta = infer_meta(op, metas, dec->attrs);
  if (!meta.is_ok()) {
    poison(out, name, meta.status());
    return;
  }
  auto scope = signals_.current();
  if (hot_.enabled() && !skip_detector_) {  // (a spilled item was taken when buffered)
    const std::optional<bool> compile = signals_.compile_mode();
    if (compile == false) {
      hot_.opt_out();  // `compile: false`: nothing in the scope is detected
    } else {
      hot_.instr(in, entries, out, signals_.innermost(), compile.value_or(false));
      log_instr(in, entries, out, in_place);
    }
  }
  if (upload.active()) stretch_log_.cacheable = false;  // (a plan carries no arena regions)
  const bool plain = one_worker && !scope && !(opts_.auto_shard && is_creation(op));
  if (!plain) {
    if (!in.data().empty() || upload.active()) stretch_log_.cacheable = false;  // sliced
    note_payload(in.data().size() + upload.payload().size());
    if (upload.active()) dec->attrs.data = upload.materialize();  // the plan slices it
    run_planned(in, op, dec->attrs, entries, *meta, scope ? scope->second.shard : std::nullopt);
    return;
  }
  // The common case: everything on one worker (the session's home for creations).
  uint32_t wid = n_in > 0 ? entries[0]->placement.workers[0] : home_worker_;
  WorkerState* wp = pool_.find(wid);
  if ((n_in == 0 && !has_home_) || !wp) {
    poison(out, name, unavailable("no worker is available for this session"));
    return;
  }
  WorkerState& w = *wp;
  if (log_instrs_)
    spdlog::trace("session {}: {} -> id {} {} {} on worker {}", id_, name, out, meta->shape.str(),
                  dtype_name(meta->dtype), w.id);
  if (log_->enabled())
    log_->write("RECV", source_of(*conn_), name, static_cast<uint64_t>(meta->nbytes()),
                fmt::format("id={} shape={} dtype={} -> worker{}", out, meta->shape.str(),
                            dtype_name(meta->dtype), w.id));
  if (hot_.enabled()) note_plain_instr(w, in.data().size());
  for (int i = 0; i < n_in; ++i) in.set_inputs(i, entries[static_cast<size_t>(i)]->handles[0]);
  if (!in_place) {
    if (!charge_new(out, name, meta->nbytes())) return;
    TensorEntry e;
    e.meta = *meta;
    e.placement = Placement::single(w.id);
    e.handles = {w.next_handle++};
    charge(e, meta->nbytes());
    in.set_out(e.handles[0]);
    tensors_.emplace(out, std::move(e));
  } else {
    entries[0]->written_at = w.next_handle;
  }
  workers_used_.insert(w.id);
  if (upload.active()) upload.forward_to(w);  // the region itself, or its bytes copied in
  // Move (not copy) the instruction into the worker's batch: payloads are not copied again.
  *pool_.scratch_for(w, id_).add_instrs() = std::move(in);
  w.scratch_cost_ns += estimate_cost_ns(op, *meta, metas, w.speedup);
}

bool ClientSession::charge_new(uint64_t out, const char* name, int64_t bytes) {
  if (user_.max_bytes && usage_.bytes + static_cast<uint64_t>(bytes) > user_.max_bytes) {
    poison(out, name,
           resource_exhausted("memory quota exceeded: user {} holds {} bytes, this needs {} more "
                              "(limit {})",
                              user_.name, usage_.bytes, bytes, user_.max_bytes));
    return false;
  }
  return true;
}

void ClientSession::process_free(uint64_t id) {
  auto it = tensors_.find(id);
  if (it == tensors_.end()) return;  // freeing an unknown id is harmless
  TensorEntry& e = it->second;
  if (!skip_detector_) {
    hot_.free(id, e);
    log_free(id, e);
  }
  free_handles(e);
  charge(e, -e.charged);
  tensors_.erase(it);
}

void ClientSession::free_handles(const TensorEntry& e) {
  for (size_t m = 0; m < e.handles.size(); ++m) {
    if (e.handles[m] == 0) continue;
    pool_.emit_free(e.placement.workers[m], id_, e.handles[m]);
  }
}

void ClientSession::charge(TensorEntry& e, int64_t bytes) {
  if (bytes < 0 && static_cast<uint64_t>(-bytes) > usage_.bytes) bytes = -static_cast<int64_t>(usage_.bytes);
  usage_.bytes = static_cast<uint64_t>(static_cast<int64_t>(usage_.bytes) + bytes);
  e.charged += bytes;
  if (bytes > 0 && stretch_log_.active && stretch_log_.cacheable)
    stretch_log_.charged += static_cast<uint64_t>(bytes);
}

void ClientSession::add_outstanding(uint64_t count) {
  outstanding_ += count;
  usage_.outstanding += count;
}

void ClientSession::release_outstanding(uint64_t count) {
  outstanding_ -= std::min(count, outstanding_);
  usage_.outstanding -= std::min(count, usage_.outstanding);
}

bool ClientSession::over_window() const {
  return outstanding_ >= opts_.session_window || usage_.outstanding >= user_.window;
}

void ClientSession::update_flow_control() {
  // Backpressure: stop reading the client's socket, so it blocks in its own send path.
  if (over_window() && !paused_) {
    paused_ = true;
    conn_->io->pause_reading();
  }
}

void ClientSession::resume_if_below_window() {
  if (paused_ && !over_window()) {
    paused_ = false;
    conn_->io->resume_reading();
  }
}

void ClientSession::end() {
  // Batches still waiting in the schedulers are dropped: the tensors they would create are
  // never made, and the frees below for their handles are harmless on the worker. Their own
  // frees still go out: they may name tensors that batches already sent did make (found by
  // fuzzing: a client that freed and hung up while its batches waited leaked them).
  pool_.begin_frame();
  if (held_.active) restore_held();  // held work is sent, then the session's end
  buffer_.reset();  // buffered work was never planned: dropped, as a queued batch
  if (hold_timer_) hold_timer_->cancel();
  pool_.drop_queued(id_);
  pool_.drop_requests(id_);
  // A disconnected client's tensors are freed on every worker (ARCHITECTURE §8).
  for (auto& [id, e] : tensors_) free_handles(e);
  free_deferred();
  for (uint32_t wid : workers_used_)
    if (WorkerState* w = pool_.find(wid)) pool_.scratch_for(*w, id_).set_end_session(true);
  pool_.flush();
  if (has_home_) {
    WorkerState* w = pool_.find(home_worker_);
    if (w && w->sessions_homed > 0) w->sessions_homed--;
  }
  for (auto& [id, e] : tensors_) charge(e, -e.charged);
  if (usage_.sessions > 0) usage_.sessions--;
  // Everything this session had queued or in flight stops counting against its user (acks for
  // it that arrive later find no session and are ignored).
  usage_.outstanding -= std::min(outstanding_, usage_.outstanding);
  outstanding_ = 0;
  spdlog::info("session {} ended ({} tensors freed)", id_, tensors_.size());
  if (log_->enabled())
    log_->write("DISCONNECT", fmt::format("CLIENT:{}", id_), "-", 0,
                fmt::format("freed={} instrs={}", tensors_.size(), instrs_received_));
  tensors_.clear();
}

}  // namespace gt::dispatcher
