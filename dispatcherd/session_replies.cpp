// A session's requests and what comes back for it from workers (ARCHITECTURE §2: errors are values,
// raised at sync points, each once): SYNC / FETCH / STATS sent to the workers that must answer,
// replies assembled and sent to the client, error reports recorded and their results
// poisoned, fetched poisons identified, and the loss of a worker's tensors.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "dispatcherd/client_session.h"
#include "dispatcherd/dispatcher.h"

namespace gt::dispatcher {
namespace {

// An error the dispatcher itself answers a request with.
void add_error(PendingRequest& pr, const char* op, const Status& why) {
  auto* e = pr.reply.mutable_reply()->add_errors();
  e->set_op(op);
  e->set_message(why.message());
  e->set_origin("dispatcher");
  e->set_code(static_cast<uint32_t>(why.code()));
}

}  // namespace

void ClientSession::process_request(const v1::Request& r) {
  auto pr = std::make_shared<PendingRequest>();
  pr->session = id_;
  pr->client_request_id = r.request_id();
  pr->kind = r.kind();
  pr->seq = ++requests_;
  pr->hot_stretch = last_stretch_replayed_;
  pr->reply.mutable_reply()->set_request_id(r.request_id());
  pr->reply.mutable_reply()->set_hot_stretch(pr->hot_stretch);
  // The instruction log names each worker's part (worker:request id, as in its EXEC line's
  // requests=), so gt-trace can draw the request to the worker and back.
  fmt::memory_buffer routes;
  auto send = [&](WorkerState& w, v1::Request::Kind kind, uint64_t handle,
                  const v1::ShmTarget* shm = nullptr) {
    const uint64_t rid = pool_.send_request(w, id_, kind, handle, pr, shm);
    if (log_->enabled())
      fmt::format_to(fmt::appender(routes), "{}{}:{}", routes.size() ? "," : "", w.id, rid);
  };
  switch (r.kind()) {
    case v1::Request::SYNC:
      for (uint32_t wid : workers_used_) {
        if (WorkerState* w = pool_.find(wid)) send(*w, v1::Request::SYNC, 0);
      }
      break;
    case v1::Request::FETCH: {
      auto it = tensors_.find(r.id());
      if (it == tensors_.end()) {
        add_error(*pr, "fetch", not_found("unknown tensor id {} (not a tensor of this session)", r.id()));
        break;
      }
      if (it->second.poison || it->second.handles.empty()) {
        if (it->second.poison) {
          *pr->reply.mutable_reply()->add_errors() = *it->second.poison;
          consume_fetched_error(pr->seq, it->second.poison->id());  // not again at SYNC
        }
        break;
      }
      // A tensor spread over workers is assembled, in order, on its first worker first.
      auto where = fetch_source(it->second);
      if (!where.is_ok()) {
        add_error(*pr, "fetch", where.status());
        break;
      }
      WorkerState* w = pool_.find(where->first);
      if (!w) {
        add_error(*pr, "fetch", unavailable("worker {} is gone", where->first));
        break;
      }
      pr->fetch_handle = where->second;
      pr->fetch_age = where->first == it->second.placement.workers[0]
                          ? std::max(where->second, it->second.written_at)
                          : where->second;
      const bool shm = r.has_shm() &&
                       shm_fetch_possible(*w, r.shm(), static_cast<uint64_t>(it->second.meta.nbytes()));
      send(*w, v1::Request::FETCH, where->second, shm ? &r.shm() : nullptr);
      break;
    }
    case v1::Request::STATS:
      if (!admin()) {
        host_.fill_own_stats(*this, pr->reply.mutable_reply());
        break;
      }
      for (auto& [wid, w] : pool_.all()) send(w, v1::Request::STATS, 0);
      break;
    case v1::Request::STATUS:  // answered by the dispatcher alone
      host_.fill_status(*this, pr->reply.mutable_reply()->mutable_status());
      break;
    default: {
      add_error(*pr, "request", invalid_argument("unknown request kind {}", static_cast<int>(r.kind())));
    }
  }
  if (log_->enabled())
    log_->write("REQUEST", source_of(*conn_), v1::Request::Kind_Name(r.kind()), 0,
                fmt::format("request={} id={} workers={}", r.request_id(), r.id(),
                            routes.size() ? fmt::to_string(routes) : "-"));
  if (pr->remaining <= 0) complete_request(*pr);
}

void ClientSession::observe_latency(const PendingRequest& pr) {
  if (pr.kind != v1::Request::SYNC && pr.kind != v1::Request::FETCH) return;
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - pr.received_at).count();
  sync_latency_.observe(s);
  usage_.sync_latency.observe(s);
}

void ClientSession::consume_fetched_error(uint64_t seq, uint64_t id) {
  if (pool_.sync_pending_before(id_, seq)) return;
  consume_error(errors_, id);
}

void ClientSession::complete_request(PendingRequest& pr) {
  v1::Reply* r = pr.reply.mutable_reply();
  if (pr.kind == v1::Request::STATS && admin()) host_.fill_dispatcher_stats(r->mutable_dispatcher());
  if (pr.kind == v1::Request::SYNC) {
    // Errors reported since the last sync come first: the client raises the first one.
    google::protobuf::RepeatedPtrField<v1::ErrorInfo> all;
    for (auto& e : errors_) *all.Add() = std::move(e);
    for (auto& e : *r->mutable_errors()) *all.Add() = std::move(e);
    r->mutable_errors()->Swap(&all);
    errors_.clear();
    dedupe_errors(r->mutable_errors());  // one failure reported by several paths: once
  }
  for (auto& e : *r->mutable_errors())
    if (e.id() == 0) e.set_id(new_error_id());
  r->set_last(true);
  observe_latency(pr);
  if (log_->enabled())
    log_->write("REPLY", source_of(*conn_), v1::Request::Kind_Name(pr.kind), 0,
                fmt::format("request={} errors={}", pr.client_request_id, r->errors_size()));
  host_.send_reply(*this, pr.reply);
}

void ClientSession::worker_error(const WorkerState& w, const v1::ErrorReport& rep) {
  auto err = std::make_shared<v1::ErrorInfo>(rep.error());
  error_ledger_.reported(*err, w.id, rep.handle(), w.next_handle);
  // The failed result is poisoned here too: later uses inherit this very error and a fetch of
  // it is answered here, without asking the worker.
  if (rep.handle() != 0 && !error_ledger_.overflowed())
    poison_failed_result(tensors_, w.id, rep.handle(), err);
  errors_.push_back(*err);
  ++errors_reported_;
  ++usage_.errors;
  host_.note_error(*this, rep.error().op(), rep.error().message());
  if (log_->enabled())
    log_->write("ERROR", source_of(*w.conn), rep.error().op(), 0, rep.error().message());
}

void ClientSession::relay_fetch(const WorkerState& w, const PendingRequest& pr, v1::Reply& head,
                                const v1::TensorData* meta, std::string_view payload, bool last) {
  // A poison raised by this fetch is not raised again at the next SYNC, and the tensor is
  // poisoned here from now on (a later fetch of it needs no guess).
  for (auto& e : *head.mutable_errors()) {
    if (!error_ledger_.identify_fetched(e, w.id, pr.fetch_handle, pr.fetch_age)) continue;
    consume_fetched_error(pr.seq, e.id());
    poison_failed_result(tensors_, w.id, pr.fetch_handle, std::make_shared<v1::ErrorInfo>(e));
  }
  head.set_request_id(pr.client_request_id);
  head.set_last(last);
  head.set_hot_stretch(pr.hot_stretch);
  if (last) observe_latency(pr);
  if (last && log_->enabled())
    log_->write("REPLY", source_of(*conn_), "FETCH", meta ? meta->total_bytes() : 0,
                fmt::format("request={} errors={}", pr.client_request_id, head.errors_size()));
  if (meta) {
    shm_bytes_ += meta->shm_bytes();
    host_.send_fetch_chunk(*this, head, *meta, payload);  // the payload is not copied into a message
    return;
  }
  v1::ServerMessage m;
  m.mutable_reply()->Swap(&head);
  host_.send_reply(*this, m);
}

void ClientSession::worker_lost(uint32_t worker, const std::shared_ptr<const v1::ErrorInfo>& err) {
  if (held_.active) {  // held work for it is lost with it; the rest goes as it is
    auto lost = std::find_if(held_.batches.begin(), held_.batches.end(),
                             [&](const HeldBatch& h) { return h.worker == worker; });
    if (lost != held_.batches.end()) {
      held_.batches.erase(lost);
      span_.eligible = false;  // (the stretch runs eagerly, what is left of it)
      if (held_.batches.empty()) held_.active = false;
    }
  }
  for (auto& [path, parts] : hot_defined_)  // (a part for it is defined again if it is back)
    std::erase_if(parts, [&](const HotPart& p) { return p.worker == worker; });
  bool affected = workers_used_.erase(worker) > 0;
  for (auto& [id, e] : tensors_) {
    if (e.live() && e.placement.index_of(worker) >= 0) {
      // Any piece lost loses the tensor; the other pieces are freed on their workers.
      for (size_t m = 0; m < e.handles.size(); ++m) {
        const uint32_t other = e.placement.workers[m];
        if (other != worker && pool_.contains(other) && e.handles[m] != 0)
          deferred_frees_[other].push_back(e.handles[m]);
      }
      e.poison = err;
      e.handles.clear();
      charge(e, -e.charged);  // the bytes are gone with the worker
    }
  }
  deferred_frees_.erase(worker);
  if (affected) {
    errors_.push_back(*err);
    ++errors_reported_;
    ++usage_.errors;
    host_.note_error(*this, err->op(), err->message());
  }
  if (has_home_ && home_worker_ == worker) has_home_ = false;
}

}  // namespace gt::dispatcher
