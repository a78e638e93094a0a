// WorkerPool's registry and the workers' side of the conversation: registration and the peer
// table, frames from workers (acks, error reports, replies), routing of replies to the requests
// that wait for them, heartbeats and the progress watchdog, and what a worker's departure
// fails. The batches themselves (scratch, fair queue, window) are in worker_batches.cpp.
#include <spdlog/spdlog.h>

#include <random>
#include <set>

#include "dispatcherd/dispatcher.h"
#include "dispatcherd/error_ledger.h"
#include "dispatcherd/worker_pool.h"
#include "libgtcore/version.h"

namespace gt::dispatcher {

WorkerPool::WorkerPool(const DispatcherOptions& opts, InstructionLog* log, Events& events)
    : opts_(opts), log_(log), events_(events) {
  // Collective tags start at a random epoch, so a worker that has not yet noticed a dispatcher
  // restart cannot match a stale message to new work.
  std::random_device rd;
  next_comm_tag_ = (static_cast<uint64_t>(rd()) << 32) + 1;
}

WorkerState& WorkerPool::add(const std::shared_ptr<Conn>& c, const v1::Hello& hello) {
  c->worker = next_worker_id_++;  // ids are never reused: a restarted worker gets a new one
  ++epoch_;
  WorkerState& w = workers_[c->worker];
  w.id = c->worker;
  w.conn = c;
  w.info = hello.worker();
  w.load = w.info.load();  // the rates count from what it had done before registering
  w.ops_rate.prime(w.load.ops_executed(), std::chrono::steady_clock::now());
  w.busy_rate.prime(w.load.busy_ns(), std::chrono::steady_clock::now());
  v1::DispatchMessage m;
  auto* wel = m.mutable_welcome();
  wel->set_proto_major(kProtoMajor);
  wel->set_proto_minor(kProtoMinor);
  wel->set_worker_id(w.id);
  wel->set_num_workers(static_cast<uint32_t>(workers_.size()));
  wel->set_max_frame_bytes(opts_.max_frame_bytes);
  wel->set_server_version(kVersion);
  wel->set_heartbeat_interval_ms(static_cast<uint32_t>(opts_.heartbeat_interval_ms));
  (void)c->io->send(m);
  spdlog::info("worker {} registered: {} {} ({} MiB)", w.id, w.info.device_kind(),
               w.info.device_name(), w.info.memory_bytes() >> 20);
  if (log_->enabled())
    log_->write("WORKER_JOIN", source_of(*c), "Hello", 0,
                fmt::format("device={} name={}", w.info.device_kind(), w.info.device_name()));
  broadcast_peer_table();
  return w;
}

void WorkerPool::remove(uint32_t id, const std::string& why, bool expected) {
  auto it = workers_.find(id);
  if (it != workers_.end()) {
    on_gone(it->second, why, expected);
    workers_.erase(it);
    ++epoch_;
  }
  broadcast_peer_table();
}

void WorkerPool::broadcast_peer_table() {
  // Workers exchange shards directly: each learns where its peers listen.
  v1::DispatchMessage m;
  for (const auto& [id, w] : workers_) {
    if (w.info.peer_address().empty()) continue;
    auto* p = m.mutable_peers()->add_peers();
    p->set_worker_id(id);
    p->set_address(w.info.peer_address());
  }
  for (auto& [id, w] : workers_) (void)w.conn->io->send(m);
}

std::vector<uint32_t> WorkerPool::live_ids() const {
  std::vector<uint32_t> ids;
  for (const auto& [id, w] : workers_) ids.push_back(id);
  return ids;
}

uint32_t WorkerPool::least_loaded() const {
  const WorkerState* best = nullptr;
  for (const auto& [id, w] : workers_)
    if (!best || w.sessions_homed < best->sessions_homed) best = &w;
  return best ? best->id : 0;
}

bool WorkerPool::idle() const {
  // A request still waiting for its answer counts: an asynchronous device (CUDA, sim) acks work
  // when it is issued, and answers a SYNC or FETCH only once the work is done.
  if (!requests_.empty()) return false;
  for (const auto& [id, w] : workers_)
    if (w.outstanding() > 0 || !w.sched.empty()) return false;
  return true;
}

void WorkerPool::check_liveness() {
  auto now = std::chrono::steady_clock::now();
  std::vector<std::pair<std::shared_ptr<Conn>, Status>> dead;
  v1::DispatchMessage ping;
  ping.mutable_heartbeat()->set_nonce(++heartbeat_nonce_);
  std::set<uint32_t> awaited;  // workers with a request not yet answered
  if (opts_.progress_timeout_ms > 0)
    for (const auto& [rid, route] : requests_) awaited.insert(route.worker);
  for (auto& [id, w] : workers_) {
    auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - w.last_heard);
    if (silent.count() > opts_.heartbeat_timeout_ms) {
      spdlog::warn("worker {} stopped answering ({} ms without a heartbeat)", id, silent.count());
      dead.emplace_back(w.conn, deadline_exceeded("no heartbeat for over {} ms",
                                                  opts_.heartbeat_timeout_ms));
      continue;
    }
    if (opts_.progress_timeout_ms > 0) {
      // Answering heartbeats is not enough: a worker with work outstanding must also make
      // progress (Ack / Reply frames), else it is wedged, or not a real worker at all.
      if (w.outstanding() == 0 && w.inflight.empty() && !awaited.count(id)) {
        w.progress_at = now;
      } else if (auto stalled =
                     std::chrono::duration_cast<std::chrono::milliseconds>(now - w.progress_at);
                 stalled.count() > opts_.progress_timeout_ms) {
        spdlog::warn("worker {} made no progress for {} ms with work outstanding ({} "
                     "instructions unacknowledged): dropping it",
                     id, stalled.count(), w.outstanding());
        dead.emplace_back(w.conn,
                          deadline_exceeded("made no progress for over {} ms with work "
                                            "outstanding (progress_timeout_ms)",
                                            opts_.progress_timeout_ms));
        continue;
      }
    }
    (void)w.conn->io->send(ping);
  }
  for (auto& [c, why] : dead) c->io->close(why);
}

uint64_t WorkerPool::send_request(WorkerState& w, uint64_t session, v1::Request::Kind kind,
                                  uint64_t handle, const std::shared_ptr<PendingRequest>& pr,
                                  const v1::ShmTarget* shm) {
  uint64_t rid = next_request_id_++;
  auto* r = scratch_for(w, session).add_requests();
  r->set_request_id(rid);
  r->set_kind(kind);
  r->set_id(handle);
  if (shm) {
    *r->mutable_shm() = *shm;
    pr->shm_region = shm->bytes();
  }
  pr->remaining++;
  requests_[rid] = RequestRoute{pr, w.id};
  return rid;
}

bool WorkerPool::sync_pending_before(uint64_t session, uint64_t seq) const {
  for (const auto& [rid, route] : requests_) {
    const PendingRequest& p = *route.request;
    if (p.session == session && p.kind == v1::Request::SYNC && p.seq < seq) return true;
  }
  return false;
}

void WorkerPool::drop_requests(uint64_t session) {
  for (auto it = requests_.begin(); it != requests_.end();) {
    if (it->second.request->session == session) it = requests_.erase(it);
    else ++it;
  }
}

void WorkerPool::on_frame(WorkerState& w, std::string_view body) {
  // A fetch reply's payload is relayed as it came, never parsed (libgtcore/reply_payload.h).
  // Anything else, or bytes that are not a valid message, takes the whole parse below.
  if (auto scan = scan_reply_payload(body, body.size(), kWorkerReplyField);
      scan.is_ok() && scan->state == ReplyScan::kFound) {
    on_payload_reply(w, body, scan->layout);
    return;
  }
  Status st = parse_frame(body, &worker_msg_);
  if (!st.is_ok()) {
    spdlog::error("worker {}: {}; dropping it", w.id, st.message());
    w.conn->io->close(st);
    return;
  }
  w.last_heard = std::chrono::steady_clock::now();
  // The progress watchdog (check_liveness): an Ack or a Reply is progress, a heartbeat is not.
  if (worker_msg_.has_ack() || worker_msg_.has_reply()) w.progress_at = w.last_heard;
  switch (worker_msg_.kind_case()) {
    case v1::WorkerMessage::kHeartbeat:  // last_heard, and the worker's live figures
      if (worker_msg_.heartbeat().has_load()) w.load.Swap(worker_msg_.mutable_heartbeat()->mutable_load());
      break;
    case v1::WorkerMessage::kAck: on_ack(w, worker_msg_.ack()); break;
    case v1::WorkerMessage::kError: events_.worker_error(w, worker_msg_.error()); break;
    case v1::WorkerMessage::kReply: on_reply(w, *worker_msg_.mutable_reply()); break;
    default: spdlog::warn("worker {}: unexpected message", w.id);
  }
  worker_msg_.Clear();
}

void WorkerPool::on_payload_reply(WorkerState& w, std::string_view body,
                                  const ReplyPayloadLayout& layout) {
  v1::Reply& head = *worker_msg_.mutable_reply();
  Status st = parse_reply_header(body, layout, &head, &payload_meta_);
  if (!st.is_ok()) {
    spdlog::error("worker {}: {}; dropping it", w.id, st.message());
    worker_msg_.Clear();
    w.conn->io->close(st);
    return;
  }
  w.last_heard = w.progress_at = std::chrono::steady_clock::now();  // a Reply is progress
  const std::string_view payload = body.substr(layout.payload_begin, layout.payload_bytes);
  auto it = requests_.find(head.request_id());
  if (it != requests_.end()) {
    std::shared_ptr<PendingRequest> pr = it->second.request;
    if (pr->kind == v1::Request::FETCH)
      relay_fetch_chunk(w, head.request_id(), *pr, head, &payload_meta_, payload);
    else
      on_reply(w, head);  // a tensor nobody asked for: the rest of the reply counts, not it
  }
  worker_msg_.Clear();
  payload_meta_.Clear();
}

void WorkerPool::relay_fetch_chunk(WorkerState& w, uint64_t rid, PendingRequest& pr,
                                   v1::Reply& head, const v1::TensorData* meta,
                                   std::string_view payload) {
  // Relayed chunk by chunk as it arrives (no reassembly here); errors end the request. A worker
  // is not trusted with the client's memory: a chunk that does not fit the tensor it describes,
  // or comes out of order, or a last chunk short of the whole, fails this fetch with a clear
  // error; the worker's other work and every other session go on.
  bool last = head.last() || head.errors_size() > 0;
  Status bad;
  if (head.errors_size() == 0) {
    // A chunk the worker wrote into the client's shared memory carries its size instead of its
    // bytes: only where the request asked for that, inside the region, never both.
    const uint64_t shm_bytes = meta ? meta->shm_bytes() : 0;
    if (shm_bytes > 0 && (!payload.empty() || pr.shm_region == 0))
      bad = data_loss("fetch reply: shared memory used where the request did not ask for it");
    else if (shm_bytes > 0 && meta->total_bytes() > pr.shm_region)
      bad = data_loss("fetch reply: {} bytes do not fit the shared-memory region of {}",
                      meta->total_bytes(), pr.shm_region);
    const uint64_t chunk = shm_bytes > 0 ? shm_bytes : payload.size();
    if (bad.is_ok() && meta) bad = check_fetch_chunk(*meta, chunk, static_cast<int64_t>(pr.fetch_relayed));
    if (bad.is_ok() && meta) pr.fetch_relayed += chunk;
    if (bad.is_ok() && last && (!meta || pr.fetch_relayed != meta->total_bytes()))
      bad = data_loss("fetch reply: the reply ended after {} bytes of {}", pr.fetch_relayed,
                      meta ? meta->total_bytes() : 0);
  }
  if (!bad.is_ok()) {
    spdlog::warn("worker {}: malformed answer to a fetch of session {}: {}", w.id, pr.session,
                 bad.message());
    v1::Reply err;
    err.set_request_id(head.request_id());
    v1::ErrorInfo* e = err.add_errors();
    e->set_op("fetch");
    e->set_message(fmt::format("worker {} sent a malformed reply: {}", w.id, bad.message()));
    e->set_origin(fmt::format("worker {}", w.id));
    e->set_code(static_cast<uint32_t>(Code::kDataLoss));
    events_.fetch_reply(w, pr, err, nullptr, {}, true);
    requests_.erase(rid);
    return;
  }
  events_.fetch_reply(w, pr, head, meta, payload, last);
  if (last) {
    requests_.erase(rid);
    if (requests_.empty()) events_.worker_progressed();  // (a drain may be waiting for it)
  }
}

void WorkerPool::on_reply(WorkerState& w, v1::Reply& reply) {
  auto it = requests_.find(reply.request_id());
  if (it == requests_.end()) return;
  std::shared_ptr<PendingRequest> pr = it->second.request;
  if (pr->kind == v1::Request::FETCH) {
    // An ordinary message (errors, or a device that sent its chunk whole): the same checks.
    std::unique_ptr<v1::TensorData> meta(reply.has_tensor() ? reply.release_tensor() : nullptr);
    std::string data;
    if (meta) data.swap(*meta->mutable_data());
    relay_fetch_chunk(w, reply.request_id(), *pr, reply, meta.get(), data);
    return;
  }
  v1::Reply* acc = pr->reply.mutable_reply();
  for (auto& e : *reply.mutable_errors()) *acc->add_errors() = std::move(e);
  for (auto& st : *reply.mutable_stats()) *acc->add_stats() = std::move(st);
  requests_.erase(it);
  pr->remaining--;
  finish_if_answered(*pr);
  if (requests_.empty()) events_.worker_progressed();  // (a drain may be waiting for it)
}

void WorkerPool::on_gone(WorkerState& w, const std::string& why, bool expected) {
  std::string what = fmt::format("worker {} ({}) {}", w.id, w.info.device_name(), why);
  // Our own shutdown closes every worker: that is no warning (the embedded default's exit).
  spdlog::log(expected ? spdlog::level::info : spdlog::level::warn, "{}", what);
  if (log_->enabled()) log_->write("WORKER_LEAVE", fmt::format("WORKER:{}", w.id), "-", 0, why);
  auto err = std::make_shared<v1::ErrorInfo>();
  err->set_op("worker");
  err->set_message(what + ": its tensors are lost");
  err->set_code(static_cast<uint32_t>(Code::kUnavailable));
  err->set_origin(fmt::format("worker {}", w.id));
  err->set_id(new_error_id());
  // Batches that never left for this worker are lost with it.
  while (auto item = w.sched.next()) events_.batch_done(item->session, item->cost);
  for (const auto& [first, f] : w.inflight) events_.batch_done(f.session, f.count);
  w.inflight.clear();
  w.inflight_count = 0;
  w.session_cost_ns.clear();
  events_.worker_lost(w.id, err);
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
  for (auto& pr : affected) finish_if_answered(*pr);
  w.sessions_homed = 0;
}

}  // namespace gt::dispatcher
