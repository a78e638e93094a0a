// The dispatcher's side of each worker: per-session batches with sequence numbers, the
// acknowledgement window (backpressure, DESIGN §2), routing of replies and error reports back to
// sessions, and what happens when a worker goes away.
#include <spdlog/spdlog.h>

#include "dispatcherd/cost_model.h"
#include "dispatcherd/dispatcher.h"

namespace gt::dispatcher {

v1::WorkerBatch& Dispatcher::scratch_for(WorkerState& w, uint64_t session) {
  if (!w.scratch_used) {
    w.scratch_used = true;
    w.scratch.mutable_batch()->set_session(session);
    w.scratch_cost_ns = 0;
    w.speedup = device_speedup(w.info.device_kind());
    touched_.push_back(w.id);
  }
  return *w.scratch.mutable_batch();
}

void Dispatcher::emit_free(WorkerState& w, uint64_t session, uint64_t handle) {
  // In stream order: the worker releases it before the instructions that follow.
  v1::WorkerBatch& b = scratch_for(w, session);
  b.add_frees(handle);
  b.add_free_at(static_cast<uint32_t>(b.instrs_size()));
}

void Dispatcher::flush_worker(WorkerState& w) {
  if (!w.scratch_used) return;
  w.scratch_used = false;
  v1::WorkerBatch* b = w.scratch.mutable_batch();
  uint64_t count = static_cast<uint64_t>(b->instrs_size()) + static_cast<uint64_t>(b->frees_size());
  uint64_t session = b->session();
  double weight = 1.0;
  auto sit = sessions_.find(session);
  if (sit != sessions_.end()) {
    sit->second.outstanding += count;
    usage_[sit->second.user.name].outstanding += count;
    weight = sit->second.user.weight;
  }
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

void Dispatcher::send_now(WorkerState& w, DrrScheduler::Item&& item) {
  v1::WorkerBatch* b = item.msg.mutable_batch();
  const uint64_t first = w.sent_seq;
  b->set_first_seq(first);
  w.sent_seq += item.cost;
  if (item.cost > 0) {
    w.inflight.emplace(first, WorkerState::InFlight{w.sent_seq, item.session, item.cost, item.cost_ns});
    w.inflight_count += item.cost;
    w.session_cost_ns[item.session] += item.cost_ns;
  }
  Status st = w.conn->io->send(item.msg);
  if (!st.is_ok()) spdlog::error("worker {}: cannot send a batch: {}", w.id, st.message());
}

void Dispatcher::pump(WorkerState& w) {
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

void Dispatcher::retire(WorkerState& w, std::map<uint64_t, WorkerState::InFlight>::iterator it) {
  const WorkerState::InFlight f = it->second;
  w.inflight.erase(it);
  w.inflight_count -= std::min(f.count, w.inflight_count);
  auto cit = w.session_cost_ns.find(f.session);
  if (cit != w.session_cost_ns.end()) {
    cit->second -= std::min(f.cost_ns, cit->second);
    if (cit->second == 0) w.session_cost_ns.erase(cit);
  }
  auto sit = sessions_.find(f.session);
  if (sit != sessions_.end()) {
    ClientSession& s = sit->second;
    s.outstanding -= std::min(f.count, s.outstanding);
    UserUsage& use = usage_[s.user.name];
    use.outstanding -= std::min(f.count, use.outstanding);
  }
}

uint64_t Dispatcher::send_request(WorkerState& w, uint64_t session, v1::Request::Kind kind,
                                  uint64_t handle, const std::shared_ptr<PendingRequest>& pr) {
  uint64_t rid = next_request_id_++;
  auto* r = scratch_for(w, session).add_requests();
  r->set_request_id(rid);
  r->set_kind(kind);
  r->set_id(handle);
  pr->remaining++;
  requests_[rid] = RequestRoute{pr, w.id};
  return rid;
}

void Dispatcher::complete_if_done(const std::shared_ptr<PendingRequest>& pr) {
  if (pr->remaining > 0) return;
  auto sit = sessions_.find(pr->session);
  if (sit == sessions_.end()) return;  // the client left meanwhile
  ClientSession& s = sit->second;
  v1::Reply* r = pr->reply.mutable_reply();
  if (pr->kind == v1::Request::STATS && s.admin) {
    v1::DispatcherStats* d = r->mutable_dispatcher();
    for (const auto& [id, c] : conns_) {
      if (c->role == Conn::Role::kClient) {
        d->set_bytes_from_clients(d->bytes_from_clients() + c->io->bytes_in());
        d->set_bytes_to_clients(d->bytes_to_clients() + c->io->bytes_out());
      } else if (c->role == Conn::Role::kWorker) {
        d->set_bytes_from_workers(d->bytes_from_workers() + c->io->bytes_in());
        d->set_bytes_to_workers(d->bytes_to_workers() + c->io->bytes_out());
      }
    }
    d->set_bytes_from_clients(d->bytes_from_clients() + closed_client_bytes_in_);
    d->set_bytes_from_workers(d->bytes_from_workers() + closed_worker_bytes_in_);
    d->set_sessions(sessions_.size());
  }
  if (pr->kind == v1::Request::SYNC) {
    // Errors reported since the last sync come first: the client raises the first one.
    google::protobuf::RepeatedPtrField<v1::ErrorInfo> all;
    for (auto& e : s.errors) *all.Add() = std::move(e);
    for (auto& e : *r->mutable_errors()) *all.Add() = std::move(e);
    r->mutable_errors()->Swap(&all);
    s.errors.clear();
    dedupe_errors(r->mutable_errors());  // one failure reported by several paths: once
  }
  for (auto& e : *r->mutable_errors())
    if (e.id() == 0) e.set_id(new_error_id());
  r->set_last(true);
  if (log_->enabled())
    log_->write("REPLY", source_of(*s.conn), v1::Request::Kind_Name(pr->kind), 0,
                fmt::format("request={} errors={}", pr->client_request_id, r->errors_size()));
  reply_to_client(s, pr->reply);
}

void Dispatcher::on_worker_frame(WorkerState& w, std::string_view body) {
  Status st = parse_frame(body, &worker_msg_);
  if (!st.is_ok()) {
    spdlog::error("worker {}: {}; dropping it", w.id, st.message());
    w.conn->io->close(st);
    return;
  }
  w.last_heard = std::chrono::steady_clock::now();
  // The progress watchdog (heartbeat_tick): an Ack or a Reply is progress, a heartbeat is not.
  if (worker_msg_.has_ack() || worker_msg_.has_reply()) w.progress_at = w.last_heard;
  switch (worker_msg_.kind_case()) {
    case v1::WorkerMessage::kHeartbeat: break;  // last_heard is all it is for
    case v1::WorkerMessage::kAck: on_ack(w, worker_msg_.ack()); break;
    case v1::WorkerMessage::kError: {
      const auto& rep = worker_msg_.error();
      auto sit = sessions_.find(rep.session());
      if (sit != sessions_.end()) {
        ClientSession& s = sit->second;
        auto err = std::make_shared<v1::ErrorInfo>(rep.error());
        s.error_ledger.reported(*err, w.id, rep.handle(), w.next_handle);
        // The failed result is poisoned here too: later uses inherit this very error and a
        // fetch of it is answered here, without asking the worker.
        if (rep.handle() != 0 && !s.error_ledger.overflowed())
          poison_failed_result(s.tensors, w.id, rep.handle(), err);
        s.errors.push_back(*err);
        if (log_->enabled())
          log_->write("ERROR", source_of(*w.conn), rep.error().op(), 0, rep.error().message());
      }
      break;
    }
    case v1::WorkerMessage::kReply: on_worker_reply(w, *worker_msg_.mutable_reply()); break;
    default: spdlog::warn("worker {}: unexpected message", w.id);
  }
  worker_msg_.Clear();
}

void Dispatcher::on_ack(WorkerState& w, const v1::Ack& ack) {
  const uint64_t executed_seq = ack.executed_seq();
  if (executed_seq > w.sent_seq || executed_seq < w.acked_seq) {
    spdlog::warn("worker {}: ignoring ack {} outside [{}, {}]", w.id, executed_seq, w.acked_seq,
                 w.sent_seq);
    return;
  }
  w.acked_seq = executed_seq;
  // Everything below the executed prefix, then the batches done beyond it (any session's).
  while (!w.inflight.empty() && w.inflight.begin()->second.seq_end <= executed_seq)
    retire(w, w.inflight.begin());
  for (uint64_t first : ack.done()) {
    auto it = w.inflight.find(first);
    if (it != w.inflight.end()) retire(w, it);
  }
  pump(w);
  resume_paused_sessions();
  check_drained();
}

void Dispatcher::resume_paused_sessions() {
  for (auto& [sid, s] : sessions_) {
    if (!s.paused) continue;
    if (!over_window(s)) {
      s.paused = false;
      s.conn->io->resume_reading();
    }
  }
}

void Dispatcher::on_worker_reply(WorkerState& w, v1::Reply& reply) {
  auto it = requests_.find(reply.request_id());
  if (it == requests_.end()) return;
  std::shared_ptr<PendingRequest> pr = it->second.request;
  if (pr->kind == v1::Request::FETCH) {
    // Relay each chunk as it arrives (no reassembly here); errors end the request.
    auto sit = sessions_.find(pr->session);
    bool last = reply.last() || reply.errors_size() > 0;
    if (sit != sessions_.end()) {
      // A poison raised by this fetch is not raised again at the next SYNC, and the tensor is
      // poisoned here from now on (a later fetch of it needs no guess).
      ClientSession& s = sit->second;
      for (auto& e : *reply.mutable_errors()) {
        if (!s.error_ledger.identify_fetched(e, w.id, pr->fetch_handle)) continue;
        consume_fetched_error(s, pr->seq, e.id());
        poison_failed_result(s.tensors, w.id, pr->fetch_handle,
                             std::make_shared<v1::ErrorInfo>(e));
      }
      v1::ServerMessage m;
      v1::Reply* r = m.mutable_reply();
      r->Swap(&reply);
      r->set_request_id(pr->client_request_id);
      r->set_last(last);
      if (last && log_->enabled())
        log_->write("REPLY", source_of(*sit->second.conn), "FETCH", r->tensor().total_bytes(),
                    fmt::format("request={} errors={}", pr->client_request_id, r->errors_size()));
      reply_to_client(sit->second, m);
    }
    if (last) requests_.erase(it);
    return;
  }
  v1::Reply* acc = pr->reply.mutable_reply();
  for (auto& e : *reply.mutable_errors()) *acc->add_errors() = std::move(e);
  for (auto& st : *reply.mutable_stats()) *acc->add_stats() = std::move(st);
  requests_.erase(it);
  pr->remaining--;
  complete_if_done(pr);
}

void Dispatcher::on_worker_gone(WorkerState& w, const std::string& why) {
  std::string what = fmt::format("worker {} ({}) {}", w.id, w.info.device_name(), why);
  // Our own shutdown closes every worker: that is no warning (the embedded default's exit).
  spdlog::log(shutting_down_ ? spdlog::level::info : spdlog::level::warn, "{}", what);
  if (log_->enabled()) log_->write("WORKER_LEAVE", fmt::format("WORKER:{}", w.id), "-", 0, why);
  auto err = std::make_shared<v1::ErrorInfo>();
  err->set_op("worker");
  err->set_message(what + ": its tensors are lost");
  err->set_origin(fmt::format("worker {}", w.id));
  err->set_id(new_error_id());
  // Batches that never left for this worker are lost with it.
  while (auto item = w.sched.next()) {
    auto sit = sessions_.find(item->session);
    if (sit == sessions_.end()) continue;
    ClientSession& s = sit->second;
    s.outstanding -= std::min(item->cost, s.outstanding);
    UserUsage& use = usage_[s.user.name];
    use.outstanding -= std::min(item->cost, use.outstanding);
  }
  for (const auto& [first, f] : w.inflight) {
    auto sit = sessions_.find(f.session);
    if (sit == sessions_.end()) continue;
    ClientSession& s = sit->second;
    s.outstanding -= std::min(f.count, s.outstanding);
    UserUsage& use = usage_[s.user.name];
    use.outstanding -= std::min(f.count, use.outstanding);
  }
  w.inflight.clear();
  w.inflight_count = 0;
  w.session_cost_ns.clear();
  for (auto& [sid, s] : sessions_) {
    bool affected = s.workers_used.erase(w.id) > 0;
    for (auto& [id, e] : s.tensors) {
      if (e.live() && e.placement.index_of(w.id) >= 0) {
        // Any piece lost loses the tensor; the other pieces are freed on their workers.
        for (size_t m = 0; m < e.handles.size(); ++m) {
          auto wit = workers_.find(e.placement.workers[m]);
          if (e.placement.workers[m] != w.id && wit != workers_.end() && e.handles[m] != 0)
            s.deferred_frees[e.placement.workers[m]].push_back(e.handles[m]);
        }
        e.poison = err;
        e.handles.clear();
        charge(s, e, -e.charged);  // the bytes are gone with the worker
      }
    }
    s.deferred_frees.erase(w.id);
    if (affected) s.errors.push_back(*err);
    if (s.has_home && s.home_worker == w.id) s.has_home = false;
  }
  // Requests waiting on this worker complete with the error instead of hanging.
  std::vector<std::shared_ptr<PendingRequest>> affected;
  for (auto it = requests_.begin(); it != requests_.end();) {
    if (it->second.worker != w.id) {
      ++it;
      continue;
    }
    std::shared_ptr<PendingRequest> pr = it->second.request;
    it = requests_.erase(it);
    *pr->reply.mutable_reply()->add_errors() = *err;
    pr->remaining--;
    affected.push_back(std::move(pr));
  }
  for (auto& pr : affected) complete_if_done(pr);
  w.sessions_homed = 0;
}

}  // namespace gt::dispatcher
