// WorkerPool's batches (ARCHITECTURE §2 backpressure, §8 fairness): the per-worker scratch batch of
// the client frame in progress, its sequence numbers, the fair queue (DRR) it waits in, the
// acknowledgement window and per-session in-flight budget that let it go, and the acks that
// retire it.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "dispatcherd/cost_model.h"
#include "dispatcherd/dispatcher.h"
#include "dispatcherd/worker_pool.h"
#include "libgtcore/upload_frame.h"

namespace gt::dispatcher {

v1::WorkerBatch& WorkerPool::scratch_for(WorkerState& w, uint64_t session) {
  if (!w.scratch_used) {
    w.scratch_used = true;
    w.scratch.mutable_batch()->set_session(session);
    w.scratch_cost_ns = 0;
    w.speedup = device_speedup(w.info.device_kind());
    touched_.push_back(w.id);
  }
  return *w.scratch.mutable_batch();
}

void WorkerPool::emit_free(WorkerState& w, uint64_t session, uint64_t handle) {
  // In stream order: the worker releases it before the instructions that follow.
  v1::WorkerBatch& b = scratch_for(w, session);
  b.add_frees(handle);
  b.add_free_at(static_cast<uint32_t>(b.instrs_size()));
}

void WorkerPool::flush() {
  for (uint32_t wid : touched_) {
    auto it = workers_.find(wid);
    if (it != workers_.end()) flush_worker(it->second);
  }
  touched_.clear();
}

bool WorkerPool::take_scratch(uint32_t worker, v1::WorkerBatch* out, uint64_t* cost_ns,
                              bool* comm) {
  WorkerState* w = find(worker);
  if (!w || !w->scratch_used) return false;
  out->Swap(w->scratch.mutable_batch());
  *cost_ns = w->scratch_cost_ns;
  *comm = w->scratch_comm;
  w->scratch_comm = false;
  w->scratch.Clear();
  w->scratch_used = false;
  w->scratch_cost_ns = 0;
  touched_.erase(std::remove(touched_.begin(), touched_.end(), worker), touched_.end());
  return true;
}

bool WorkerPool::take_scratch_tail(uint32_t worker, int first_instr, int first_free,
                                   uint64_t cost_before, v1::WorkerBatch* out, uint64_t* cost_ns,
                                   bool* comm) {
  if (first_instr == 0 && first_free == 0) return take_scratch(worker, out, cost_ns, comm);
  WorkerState* w = find(worker);
  if (!w || !w->scratch_used) return false;
  v1::WorkerBatch& b = *w->scratch.mutable_batch();
  if (first_instr > b.instrs_size() || first_free > b.frees_size()) return false;
  out->Clear();
  out->set_session(b.session());
  const bool placed = b.free_at_size() == b.frees_size();
  for (int i = first_instr; i < b.instrs_size(); ++i)
    *out->add_instrs() = std::move(*b.mutable_instrs(i));
  const auto shift = static_cast<uint32_t>(first_instr);
  for (int i = first_free; i < b.frees_size(); ++i) {
    out->add_frees(b.frees(i));
    const uint32_t at = placed ? b.free_at(i) : static_cast<uint32_t>(b.instrs_size());
    out->add_free_at(at >= shift ? at - shift : 0);
  }
  b.mutable_instrs()->DeleteSubrange(first_instr, b.instrs_size() - first_instr);
  b.mutable_frees()->Truncate(first_free);
  if (placed) b.mutable_free_at()->Truncate(first_free);
  *cost_ns = w->scratch_cost_ns >= cost_before ? w->scratch_cost_ns - cost_before : 0;
  w->scratch_cost_ns -= *cost_ns;
  *comm = w->scratch_comm;  // (kept on the head too: it may hold communication as well)
  return true;
}

void WorkerPool::restore_scratch(uint32_t worker, uint64_t session, v1::WorkerBatch&& batch,
                                 uint64_t cost_ns, bool comm) {
  WorkerState* w = find(worker);
  if (!w) return;  // gone meanwhile: what the batch would have made is lost with it
  v1::WorkerBatch& s = scratch_for(*w, session);
  v1::WorkerBatch later;  // what the frame put there already (callers restore first: nothing)
  later.Swap(&s);
  s.Swap(&batch);  // the held work goes first, in stream order
  s.set_session(session);
  const auto shift = static_cast<uint32_t>(s.instrs_size());
  const bool placed = later.free_at_size() == later.frees_size();
  for (int i = 0; i < later.frees_size(); ++i) {
    s.add_frees(later.frees(i));
    s.add_free_at(shift + (placed ? later.free_at(i) : static_cast<uint32_t>(later.instrs_size())));
  }
  for (auto& in : *later.mutable_instrs()) *s.add_instrs() = std::move(in);
  for (auto& r : *later.mutable_requests()) *s.add_requests() = std::move(r);
  for (auto& p : *later.mutable_hot_define()) *s.add_hot_define() = std::move(p);
  for (uint64_t id : later.hot_forget()) s.add_hot_forget(id);
  s.set_hot_extra(s.hot_extra() + later.hot_extra());
  if (later.end_session()) s.set_end_session(true);
  w->scratch_cost_ns += cost_ns;
  if (comm) w->scratch_comm = true;
}

void WorkerPool::drop_queued(uint64_t session) {
  for (auto& [wid, w] : workers_)
    for (auto& item : w.sched.take_session(session))
      for (uint64_t h : item.msg.batch().frees()) emit_free(w, session, h);
}

void WorkerPool::flush_worker(WorkerState& w) {
  if (!w.scratch_used) return;
  w.scratch_used = false;
  v1::WorkerBatch* b = w.scratch.mutable_batch();
  // A HotRun counts as the instructions and frees it stands for (client_session_hot.cpp).
  uint64_t count = static_cast<uint64_t>(b->instrs_size()) +
                   static_cast<uint64_t>(b->frees_size()) + b->hot_extra();
  uint64_t session = b->session();
  const double weight = events_.batch_queued(session, count);
  if (w.scratch_comm) {
    // Communication must reach every participant in the same global order (else two workers
    // could each block in a different collective): it bypasses the fair scheduler, after this
    // session's own earlier batches so the session's order is kept.
    w.scratch_comm = false;
    for (auto& item : w.sched.take_session(session)) send_now(w, std::move(item));
    send_now(w, DrrScheduler::Item{session, count, std::move(w.scratch), w.scratch_cost_ns});
    w.scratch.Clear();
    return;
  }
  w.sched.enqueue(session, weight, count, std::move(w.scratch), w.scratch_cost_ns);
  w.scratch.Clear();
  pump(w);
}

void WorkerPool::send_now(WorkerState& w, DrrScheduler::Item&& item) {
  v1::WorkerBatch* b = item.msg.mutable_batch();
  const uint64_t first = w.sent_seq;
  b->set_first_seq(first);
  // While the instruction log or a live trace records, the worker times the batch.
  if (log_->enabled()) b->set_trace(true);
  w.sent_seq += item.cost;
  if (item.cost > 0) {
    w.inflight.emplace(first, WorkerState::InFlight{w.sent_seq, item.session, item.cost, item.cost_ns});
    w.inflight_count += item.cost;
    w.session_cost_ns[item.session] += item.cost_ns;
  }
  if (spdlog::should_log(spdlog::level::debug))
    spdlog::debug("worker {}: batch {} of session {}: {} instructions, {} frees, {} requests "
                  "({} in flight)",
                  w.id, first, item.session, b->instrs_size(), b->frees_size(),
                  b->requests_size(), w.inflight_count);
  Status st = send_worker_batch(*w.conn->io, std::move(item.msg), &upload_header_);
  if (!st.is_ok()) spdlog::error("worker {}: cannot send a batch: {}", w.id, st.message());
}


void WorkerPool::pump(WorkerState& w) {
  // Keep at most worker_window instructions in flight on the worker, and per session at most
  // session_inflight_us of estimated work (a batch always goes when the session has none in
  // flight); the rest waits here in fair order, so a light user's work is never queued behind
  // a flood on the worker itself.
  const uint64_t budget_ns = opts_.session_inflight_us * 1000;
  auto may_send = [&](uint64_t session) {
    auto it = w.session_cost_ns.find(session);
    return it == w.session_cost_ns.end() || it->second < budget_ns;
  };
  while (!w.conn->io->closed() && (w.outstanding() < opts_.worker_window || w.inflight.empty())) {
    auto item = w.sched.next(may_send);
    if (!item) break;
    send_now(w, std::move(*item));
  }
}

void WorkerPool::on_ack(WorkerState& w, const v1::Ack& ack) {
  if (ack.timings_size() > 0) log_timings(w, ack);
  const uint64_t executed_seq = ack.executed_seq();
  if (executed_seq > w.sent_seq || executed_seq < w.acked_seq) {
    spdlog::warn("worker {}: ignoring ack {} outside [{}, {}]", w.id, executed_seq, w.acked_seq,
                 w.sent_seq);
    return;
  }
  w.acked_seq = executed_seq;
  if (spdlog::should_log(spdlog::level::debug))
    spdlog::debug("worker {}: ack: executed below {}, {} batches beyond, {} timings", w.id,
                  executed_seq, ack.done_size(), ack.timings_size());
  // Everything below the executed prefix, then the batches done beyond it (any session's).
  while (!w.inflight.empty() && w.inflight.begin()->second.seq_end <= executed_seq)
    retire(w, w.inflight.begin());
  for (uint64_t first : ack.done()) {
    auto it = w.inflight.find(first);
    if (it != w.inflight.end()) retire(w, it);
  }
  pump(w);
  events_.worker_progressed();
}

void WorkerPool::retire(WorkerState& w, std::map<uint64_t, WorkerState::InFlight>::iterator it) {
  const WorkerState::InFlight f = it->second;
  w.inflight.erase(it);
  w.inflight_count -= std::min(f.count, w.inflight_count);
  auto cit = w.session_cost_ns.find(f.session);
  if (cit != w.session_cost_ns.end()) {
    cit->second -= std::min(f.cost_ns, cit->second);
    if (cit->second == 0) w.session_cost_ns.erase(cit);
  }
  events_.batch_done(f.session, f.count);
}

}  // namespace gt::dispatcher
