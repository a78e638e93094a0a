// Rewriting one client's instruction stream into worker streams (DESIGN §2, §5): validate every
// instruction against the session's private id namespace and the shape rules, place it, assign
// worker handles, and batch per worker. Failures poison the result here, without a round trip.
#include <spdlog/spdlog.h>

#include "dispatcherd/cost_model.h"
#include "dispatcherd/dispatcher.h"
#include "libgtcore/instr_codec.h"
#include "libgtcore/shape_rules.h"

namespace gt::dispatcher {

void Dispatcher::on_client_frame(ClientSession& s, std::string_view body) {
  bytes_from_clients_ += body.size();
  Status st = parse_frame(body, &client_msg_);
  if (!st.is_ok()) {
    refuse(s.conn, st.message());
    return;
  }
  if (client_msg_.kind_case() != v1::ClientMessage::kBatch) {
    refuse(s.conn, "expected an instruction batch");
    return;
  }
  v1::ClientBatch* batch = client_msg_.mutable_batch();
  const int n_free = batch->frees_size();
  const bool placed = batch->free_at_size() == n_free;
  if (batch->free_at_size() != 0 && !placed) {
    refuse(s.conn, fmt::format("malformed batch: {} frees but {} free_at positions", n_free,
                               batch->free_at_size()));
    client_msg_.Clear();
    return;
  }
  touched_.clear();
  // Temporaries of earlier fetches: freed now, after the requests that read them.
  for (auto& [wid, hs] : s.deferred_frees) {
    auto wit = workers_.find(wid);
    if (wit != workers_.end())
      for (uint64_t h : hs) emit_free(wit->second, s.id, h);
  }
  s.deferred_frees.clear();
  // Frees in stream order, between the instructions free_at places them after.
  int next_free = 0;
  const int n_instr = batch->instrs_size();
  for (int i = 0; i < n_instr; ++i) {
    while (placed && next_free < n_free && batch->free_at(next_free) <= static_cast<uint32_t>(i))
      process_free(s, batch->frees(next_free++));
    process_instr(s, *batch->mutable_instrs(i));
  }
  while (next_free < n_free) process_free(s, batch->frees(next_free++));
  for (const auto& r : batch->requests()) process_request(s, r);
  for (uint32_t wid : touched_) {
    auto it = workers_.find(wid);
    if (it != workers_.end()) flush_worker(it->second);
  }
  touched_.clear();
  client_msg_.Clear();
  update_flow_control(s);
}

void Dispatcher::poison(ClientSession& s, uint64_t out, const std::string& op,
                        const std::string& message) {
  auto err = std::make_shared<v1::ErrorInfo>();
  err->set_op(op);
  err->set_message(message);
  err->set_origin("dispatcher");
  err->set_id(new_error_id());
  s.errors.push_back(*err);
  if (log_->enabled()) log_->write("ERROR", source_of(*s.conn), op, 0, message);
  if (out != 0 && !s.tensors.count(out)) {
    TensorEntry e;
    e.poison = std::move(err);
    s.tensors.emplace(out, std::move(e));
  }
}

void Dispatcher::process_instr(ClientSession& s, v1::Instr& in) {
  ++s.instrs_received;
  if (in.op() == 0 && in.comm() == 0) {  // stream annotations
    Status st = in.has_signal() ? s.signals.apply(in.signal())
                : in.has_config() ? s.signals.register_config(in.config())
                                  : invalid_argument("empty instruction");
    if (!st.is_ok()) poison(s, 0, in.has_config() ? "config" : "signal", st.message());
    if (log_->enabled() && in.has_signal())
      log_->write("SIGNAL", source_of(*s.conn), v1::SignalEvent::Kind_Name(in.signal().kind()), 0,
                  fmt::format("name={}{}", in.signal().name(), in.signal().backward_pass() ? " backward" : ""));
    return;
  }
  if (in.comm() != 0) {
    poison(s, in.out(), "instruction", "communication instructions are for workers only");
    return;
  }
  auto dec = decode_instr(in);
  if (!dec.is_ok()) {
    poison(s, in.out(), "instruction", dec.status().message());
    return;
  }
  const OpId op = dec->op;
  const char* name = op_name(op);
  const bool in_place = is_in_place(op);
  const uint64_t out = in.out();
  if (in_place ? out != 0 : out == 0) {
    poison(s, 0, name, in_place ? "in-place op with a result id" : "missing result id");
    return;
  }
  if (!in_place && s.tensors.count(out)) {
    poison(s, 0, name, fmt::format("tensor id {} is already in use in this session", out));
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
    auto it = s.tensors.find(id);
    if (it == s.tensors.end()) {
      poison(s, out, name, fmt::format("unknown tensor id {} (not a tensor of this session)", id));
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
    if (in_place) {
      entries[0]->poison = inherited;
    } else {
      TensorEntry e;
      e.poison = inherited;
      s.tensors.emplace(out, std::move(e));
    }
    return;
  }
  auto meta = infer_meta(op, metas, dec->attrs);
  if (!meta.is_ok()) {
    poison(s, out, name, meta.status().message());
    return;
  }
  auto scope = s.signals.current();
  const bool plain = one_worker && !scope && !(opts_.auto_shard && is_creation(op));
  if (!plain) {
    run_planned(s, in, op, dec->attrs, entries, *meta, scope ? scope->second.shard : std::nullopt);
    return;
  }
  // The common case: everything on one worker (the session's home for creations).
  uint32_t wid = n_in > 0 ? entries[0]->placement.workers[0] : s.home_worker;
  auto wit = workers_.find(wid);
  if ((n_in == 0 && !s.has_home) || wit == workers_.end()) {
    poison(s, out, name, "no worker is available for this session");
    return;
  }
  WorkerState& w = wit->second;
  if (log_->enabled())
    log_->write("RECV", source_of(*s.conn), name, static_cast<uint64_t>(meta->nbytes()),
                fmt::format("id={} shape={} dtype={} -> worker{}", out, meta->shape.str(),
                            dtype_name(meta->dtype), w.id));
  for (int i = 0; i < n_in; ++i) in.set_inputs(i, entries[static_cast<size_t>(i)]->handles[0]);
  if (!in_place) {
    if (!charge_new(s, out, name, meta->nbytes())) return;
    TensorEntry e;
    e.meta = *meta;
    e.placement = Placement::single(w.id);
    e.handles = {w.next_handle++};
    charge(s, e, meta->nbytes());
    in.set_out(e.handles[0]);
    s.tensors.emplace(out, std::move(e));
  }
  s.workers_used.insert(w.id);
  // Move (not copy) the instruction into the worker's batch: payloads are not copied again.
  *scratch_for(w, s.id).add_instrs() = std::move(in);
  w.scratch_cost_ns += estimate_cost_ns(op, *meta, metas, w.speedup);
}

bool Dispatcher::charge_new(ClientSession& s, uint64_t out, const char* name, int64_t bytes) {
  UserUsage& use = usage_[s.user.name];
  if (s.user.max_bytes && use.bytes + static_cast<uint64_t>(bytes) > s.user.max_bytes) {
    poison(s, out, name,
           fmt::format("memory quota exceeded: user {} holds {} bytes, this needs {} more "
                       "(limit {})",
                       s.user.name, use.bytes, bytes, s.user.max_bytes));
    return false;
  }
  return true;
}

void Dispatcher::process_free(ClientSession& s, uint64_t id) {
  auto it = s.tensors.find(id);
  if (it == s.tensors.end()) return;  // freeing an unknown id is harmless
  TensorEntry& e = it->second;
  free_handles(s, e);
  charge(s, e, -e.charged);
  s.tensors.erase(it);
}

void Dispatcher::free_handles(ClientSession& s, const TensorEntry& e) {
  for (size_t m = 0; m < e.handles.size(); ++m) {
    if (e.handles[m] == 0) continue;
    auto wit = workers_.find(e.placement.workers[m]);
    if (wit != workers_.end()) emit_free(wit->second, s.id, e.handles[m]);
  }
}

void Dispatcher::charge(ClientSession& s, TensorEntry& e, int64_t bytes) {
  UserUsage& use = usage_[s.user.name];
  if (bytes < 0 && static_cast<uint64_t>(-bytes) > use.bytes) bytes = -static_cast<int64_t>(use.bytes);
  use.bytes = static_cast<uint64_t>(static_cast<int64_t>(use.bytes) + bytes);
  e.charged += bytes;
}

void Dispatcher::fill_own_stats(const ClientSession& s, v1::Reply* r) const {
  // Non-admins see their own tensors only: what other users hold is not theirs to know.
  for (const auto& [wid, w] : workers_) {
    v1::WorkerStats* st = r->add_stats();
    st->set_worker_id(wid);
    st->set_device(w.info.device_name());
    uint64_t n = 0, bytes = 0;
    for (const auto& [sid, other] : sessions_) {
      if (other.user.name != s.user.name) continue;
      for (const auto& [id, e] : other.tensors) {
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

void Dispatcher::process_request(ClientSession& s, const v1::Request& r) {
  auto pr = std::make_shared<PendingRequest>();
  pr->session = s.id;
  pr->client_request_id = r.request_id();
  pr->kind = r.kind();
  pr->seq = ++s.requests;
  pr->reply.mutable_reply()->set_request_id(r.request_id());
  if (log_->enabled())
    log_->write("REQUEST", source_of(*s.conn), v1::Request::Kind_Name(r.kind()), 0,
                fmt::format("request={} id={}", r.request_id(), r.id()));
  switch (r.kind()) {
    case v1::Request::SYNC:
      for (uint32_t wid : s.workers_used) {
        auto it = workers_.find(wid);
        if (it != workers_.end()) send_request(it->second, s.id, v1::Request::SYNC, 0, pr);
      }
      break;
    case v1::Request::FETCH: {
      auto it = s.tensors.find(r.id());
      if (it == s.tensors.end()) {
        auto* e = pr->reply.mutable_reply()->add_errors();
        e->set_op("fetch");
        e->set_message(fmt::format("unknown tensor id {} (not a tensor of this session)", r.id()));
        e->set_origin("dispatcher");
        break;
      }
      if (it->second.poison || it->second.handles.empty()) {
        if (it->second.poison) {
          *pr->reply.mutable_reply()->add_errors() = *it->second.poison;
          consume_fetched_error(s, pr->seq, it->second.poison->id());  // not again at SYNC
        }
        break;
      }
      // A tensor spread over workers is assembled, in order, on its first worker first.
      auto where = fetch_source(s, it->second);
      if (!where.is_ok()) {
        auto* e = pr->reply.mutable_reply()->add_errors();
        e->set_op("fetch");
        e->set_message(where.status().message());
        e->set_origin("dispatcher");
        break;
      }
      auto wit = workers_.find(where->first);
      if (wit == workers_.end()) {
        auto* e = pr->reply.mutable_reply()->add_errors();
        e->set_op("fetch");
        e->set_message(fmt::format("worker {} is gone", where->first));
        e->set_origin("dispatcher");
        break;
      }
      pr->fetch_handle = where->second;
      send_request(wit->second, s.id, v1::Request::FETCH, where->second, pr);
      break;
    }
    case v1::Request::STATS:
      if (!s.admin) {
        fill_own_stats(s, pr->reply.mutable_reply());
        break;
      }
      for (auto& [wid, w] : workers_) send_request(w, s.id, v1::Request::STATS, 0, pr);
      break;
    default: {
      auto* e = pr->reply.mutable_reply()->add_errors();
      e->set_op("request");
      e->set_message(fmt::format("unknown request kind {}", static_cast<int>(r.kind())));
      e->set_origin("dispatcher");
    }
  }
  complete_if_done(pr);
}

void Dispatcher::consume_fetched_error(ClientSession& s, uint64_t seq, uint64_t id) {
  for (const auto& [rid, route] : requests_) {
    const PendingRequest& p = *route.request;
    if (p.session == s.id && p.kind == v1::Request::SYNC && p.seq < seq) return;
  }
  consume_error(s.errors, id);
}

void Dispatcher::reply_to_client(ClientSession& s, v1::ServerMessage& m) {
  FramedConnection& io = *s.conn->io;
  if (io.closing()) return;  // refused or dropped already: nothing more goes out (or is logged)
  if (io.pending_bytes() > opts_.max_client_backlog_bytes) {
    // A client that does not read its replies must not grow our memory without bound.
    refuse(s.conn, fmt::format("more than {} bytes of replies unread", opts_.max_client_backlog_bytes));
    return;
  }
  (void)io.send(m);
  const uint64_t limit = opts_.max_total_client_backlog_bytes;
  if (*client_backlog_ <= limit) return;
  // All clients' unread replies together are over the dispatcher-wide bound: drop the clients
  // holding the most (those that do not read) until the rest fit. abort() frees their queues
  // now and closes them from the io_context, never inside this call (callers still use `s`).
  // Clients dropped already count as freed: only their write in flight is left.
  std::vector<std::pair<uint64_t, ClientSession*>> by_backlog;
  for (auto& [id, o] : sessions_)
    if (o.conn->io->pending_bytes() > 0) by_backlog.emplace_back(o.conn->io->pending_bytes(), &o);
  std::sort(by_backlog.begin(), by_backlog.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  uint64_t excess = *client_backlog_ - limit;
  for (auto& [bytes, o] : by_backlog) {
    if (excess == 0) break;
    excess -= std::min(excess, bytes);
    if (o->conn->io->closing()) {
      // Refused already (or dropped): its queue goes now, without a new warning.
      o->conn->io->abort(resource_exhausted("more than {} bytes of replies unread", bytes));
      continue;
    }
    uint64_t held = 0;
    if (backlog_log_.allow(&held))
      spdlog::warn("dropping session {} (user {}): {} bytes of replies unread while all clients' "
                   "unread replies exceed max_total_client_backlog_bytes ({}){}",
                   o->id, o->user.name, bytes, limit,
                   held ? fmt::format(" ({} more dropped, not logged)", held) : std::string());
    o->conn->io->abort(resource_exhausted(
        "dropped: {} bytes of replies unread while all clients' unread replies exceed {}", bytes,
        limit));
  }
}

bool Dispatcher::over_window(const ClientSession& s) const {
  if (s.outstanding >= opts_.session_window) return true;
  auto it = usage_.find(s.user.name);
  return it != usage_.end() && it->second.outstanding >= s.user.window;
}

void Dispatcher::update_flow_control(ClientSession& s) {
  // Backpressure: stop reading the client's socket, so it blocks in its own send path.
  if (over_window(s) && !s.paused) {
    s.paused = true;
    s.conn->io->pause_reading();
  }
}

void Dispatcher::end_session(ClientSession& s) {
  // Batches still waiting in the schedulers are dropped: the tensors they would create are
  // never made, and the frees below for their handles are harmless on the worker. Their own
  // frees still go out: they may name tensors that batches already sent did make (found by
  // fuzzing: a client that freed and hung up while its batches waited leaked them).
  touched_.clear();
  for (auto& [wid, w] : workers_)
    for (auto& item : w.sched.take_session(s.id))
      for (uint64_t h : item.msg.batch().frees()) emit_free(w, s.id, h);
  for (auto it = requests_.begin(); it != requests_.end();) {
    if (it->second.request->session == s.id) it = requests_.erase(it);
    else ++it;
  }
  // A disconnected client's tensors are freed on every worker (DESIGN §8).
  for (auto& [id, e] : s.tensors) free_handles(s, e);
  for (auto& [wid, hs] : s.deferred_frees) {
    auto wit = workers_.find(wid);
    if (wit != workers_.end())
      for (uint64_t h : hs) emit_free(wit->second, s.id, h);
  }
  s.deferred_frees.clear();
  for (uint32_t wid : s.workers_used) {
    auto wit = workers_.find(wid);
    if (wit != workers_.end()) scratch_for(wit->second, s.id).set_end_session(true);
  }
  for (uint32_t wid : touched_) {
    auto it = workers_.find(wid);
    if (it != workers_.end()) flush_worker(it->second);
  }
  touched_.clear();
  if (s.has_home) {
    auto it = workers_.find(s.home_worker);
    if (it != workers_.end() && it->second.sessions_homed > 0) it->second.sessions_homed--;
  }
  for (auto& [id, e] : s.tensors) charge(s, e, -e.charged);
  UserUsage& use = usage_[s.user.name];
  if (use.sessions > 0) use.sessions--;
  // Everything this session had queued or in flight stops counting against its user (acks for
  // it that arrive later find no session and are ignored).
  use.outstanding -= std::min(s.outstanding, use.outstanding);
  s.outstanding = 0;
  spdlog::info("session {} ended ({} tensors freed)", s.id, s.tensors.size());
  if (log_->enabled())
    log_->write("DISCONNECT", fmt::format("CLIENT:{}", s.id), "-", 0,
                fmt::format("freed={} instrs={}", s.tensors.size(), s.instrs_received));
  s.tensors.clear();
}

}  // namespace gt::dispatcher
