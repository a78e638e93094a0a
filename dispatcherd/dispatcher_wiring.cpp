// How the Dispatcher wires the WorkerPool to the ClientSessions: the pool's events (by session
// id) delivered to the session they concern, and what a session asks of the dispatcher
// (SessionHost): replies within the unread-reply bounds, and stats spanning sessions or
// connections.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "dispatcherd/client_session.h"
#include "dispatcherd/dispatcher.h"
#include "libgtcore/reply_payload.h"

namespace gt::dispatcher {

ClientSession* Dispatcher::find_session(uint64_t id) {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second.get();
}

double Dispatcher::batch_queued(uint64_t session, uint64_t count) {
  ClientSession* s = find_session(session);
  if (!s) return 1.0;
  s->add_outstanding(count);
  return s->user().weight;
}

void Dispatcher::batch_done(uint64_t session, uint64_t count) {
  if (ClientSession* s = find_session(session)) s->release_outstanding(count);
}

void Dispatcher::worker_progressed() {
  resume_paused_sessions();
  check_drained();
}

void Dispatcher::worker_error(const WorkerState& w, const v1::ErrorReport& rep) {
  if (ClientSession* s = find_session(rep.session())) s->worker_error(w, rep);
}

void Dispatcher::fetch_reply(const WorkerState& w, const PendingRequest& pr, v1::Reply& head,
                             const v1::TensorData* meta, std::string_view payload, bool last) {
  if (ClientSession* s = find_session(pr.session)) s->relay_fetch(w, pr, head, meta, payload, last);
}

void Dispatcher::request_done(PendingRequest& pr) {
  if (ClientSession* s = find_session(pr.session)) s->complete_request(pr);  // else it left
}

void Dispatcher::worker_lost(uint32_t worker, const std::shared_ptr<const v1::ErrorInfo>& err) {
  for (auto& [sid, s] : sessions_) s->worker_lost(worker, err);
}

void Dispatcher::send_reply(ClientSession& s, v1::ServerMessage& m) {
  if (!may_reply(s)) return;
  (void)s.conn()->io->send(m);
  bound_total_backlog();
}

void Dispatcher::send_fetch_chunk(ClientSession& s, const v1::Reply& head,
                                  const v1::TensorData& meta, std::string_view payload) {
  if (!may_reply(s)) return;
  // A small header of our own, then the worker's payload bytes as they came (reply_payload.h).
  chunk_header_.clear();
  Status st = append_reply_header(&chunk_header_, kServerReplyField, head, meta, payload.size());
  if (st.is_ok()) st = s.conn()->io->send_parts(chunk_header_, payload);
  if (!st.is_ok()) spdlog::warn("session {}: cannot relay a fetch reply: {}", s.id(), st.message());
  bound_total_backlog();
}

bool Dispatcher::may_reply(ClientSession& s) {
  FramedConnection& io = *s.conn()->io;
  if (io.closing()) return false;  // refused or dropped already: nothing more goes out (or is logged)
  if (io.pending_bytes() > opts_.max_client_backlog_bytes) {
    // A client that does not read its replies must not grow our memory without bound.
    refuse(s.conn(), resource_exhausted("more than {} bytes of replies unread",
                                        opts_.max_client_backlog_bytes));
    return false;
  }
  return true;
}

void Dispatcher::bound_total_backlog() {
  const uint64_t limit = opts_.max_total_client_backlog_bytes;
  if (*client_backlog_ <= limit) return;
  // All clients' unread replies together are over the dispatcher-wide bound: drop the clients
  // holding the most (those that do not read) until the rest fit. abort() frees their queues
  // now and closes them from the io_context, never inside this call (callers still use `s`).
  // Clients dropped already count as freed: only their write in flight is left.
  std::vector<std::pair<uint64_t, ClientSession*>> by_backlog;
  for (auto& [id, o] : sessions_)
    if (o->conn()->io->pending_bytes() > 0)
      by_backlog.emplace_back(o->conn()->io->pending_bytes(), o.get());
  std::sort(by_backlog.begin(), by_backlog.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  uint64_t excess = *client_backlog_ - limit;
  for (auto& [bytes, o] : by_backlog) {
    if (excess == 0) break;
    excess -= std::min(excess, bytes);
    FramedConnection& oio = *o->conn()->io;
    if (oio.closing()) {
      // Refused already (or dropped): its queue goes now, without a new warning.
      oio.abort(resource_exhausted("more than {} bytes of replies unread", bytes));
      continue;
    }
    uint64_t held = 0;
    if (backlog_log_.allow(&held))
      spdlog::warn("dropping session {} (user {}): {} bytes of replies unread while all clients' "
                   "unread replies exceed max_total_client_backlog_bytes ({}){}",
                   o->id(), o->user().name, bytes, limit,
                   held ? fmt::format(" ({} more dropped, not logged)", held) : std::string());
    oio.abort(resource_exhausted(
        "dropped: {} bytes of replies unread while all clients' unread replies exceed {}", bytes,
        limit));
  }
}

void Dispatcher::fill_own_stats(const ClientSession& s, v1::Reply* r) const {
  // Non-admins see their own tensors only: what other users hold is not theirs to know.
  for (const auto& [wid, w] : pool_.all()) {
    v1::WorkerStats* st = r->add_stats();
    st->set_worker_id(wid);
    st->set_device(w.info.device_name());
    uint64_t n = 0, bytes = 0;
    for (const auto& [sid, other] : sessions_) {
      if (other->user().name != s.user().name) continue;
      for (const auto& [id, e] : other->tensors()) {
        int m = e.live() ? e.placement.index_of(wid) : -1;
        if (m < 0) continue;
        ++n;
        bytes += static_cast<uint64_t>(e.placement.local_meta(e.meta, m).nbytes());
      }
    }
    st->set_tensors(n);
    st->set_bytes(bytes);
  }
}

void Dispatcher::fill_dispatcher_stats(v1::DispatcherStats* d) const {
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

}  // namespace gt::dispatcher
