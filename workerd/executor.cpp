#include "workerd/executor.h"

#include <spdlog/spdlog.h>

#include "libgtcore/instr_codec.h"
#include "libgtcore/shape_rules.h"
#include "workerd/peer/peer_link.h"

namespace gt::worker {

namespace {
constexpr uint64_t kAckEvery = 4096;  // instructions between acks while the queue stays busy
}

Executor::Executor(Backend& backend, SendFn send, uint64_t max_reply_chunk_bytes)
    : backend_(backend), send_(std::move(send)), max_reply_chunk_(max_reply_chunk_bytes) {}

Executor::~Executor() { stop(); }

void Executor::start() { thread_ = std::thread([this] { loop(); }); }

void Executor::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Executor::enqueue(std::unique_ptr<v1::WorkerBatch> batch) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(std::move(batch));
  }
  cv_.notify_one();
}

bool Executor::try_execute_inline(v1::WorkerBatch& batch) {
  if (batch.instrs_size() != 0) return false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (busy_ || !queue_.empty() || reset_requested_ || stopping_) return false;
    busy_ = true;
  }
  execute(batch);
  maybe_ack(false);
  bool wake;
  {
    std::lock_guard<std::mutex> lk(mu_);
    busy_ = false;
    wake = !queue_.empty() || reset_requested_ || stopping_;
  }
  // Waking the executor for nothing would cost a futex call and a context switch per request.
  if (wake) cv_.notify_one();
  return true;
}

void Executor::maybe_ack(bool more) {
  // Ack when the queue ran dry (the dispatcher's window reopens promptly) or every kAckEvery
  // instructions under sustained load (bounded ack traffic).
  if (executed_seq_ != acked_seq_ && (!more || executed_seq_ - acked_seq_ >= kAckEvery)) {
    v1::WorkerMessage m;
    m.mutable_ack()->set_executed_seq(executed_seq_);
    acked_seq_ = executed_seq_;
    send_(std::move(m));
  }
}

void Executor::reset() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.clear();
    reset_requested_ = true;
  }
  cv_.notify_one();
}

void Executor::loop() {
  while (true) {
    std::unique_ptr<v1::WorkerBatch> batch;
    bool more = false;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stopping_ || (!busy_ && (reset_requested_ || !queue_.empty())); });
      if (stopping_) return;
      if (reset_requested_) {
        reset_requested_ = false;
        lk.unlock();
        tensors_.clear();
        for (uint64_t s : sessions_) backend_.end_session(s);
        sessions_.clear();
        executed_seq_ = acked_seq_ = 0;
        continue;
      }
      batch = std::move(queue_.front());
      queue_.pop_front();
      more = !queue_.empty();
      busy_ = true;
    }
    execute(*batch);
    maybe_ack(more);
    {
      std::lock_guard<std::mutex> lk(mu_);
      busy_ = false;
    }
  }
}

void Executor::execute(v1::WorkerBatch& b) {
  uint64_t session = b.session();
  sessions_.insert(session);
  for (const auto& in : b.instrs()) run_instr(session, in);
  for (uint64_t h : b.frees()) tensors_.erase(h);
  for (const auto& r : b.requests()) answer(session, r);
  executed_seq_ = b.first_seq() + static_cast<uint64_t>(b.instrs_size()) +
                  static_cast<uint64_t>(b.frees_size());
  if (b.end_session()) {
    backend_.end_session(session);
    if (peer_) peer_->end_session(session);
    sessions_.erase(session);
  }
}

void Executor::fail(uint64_t session, uint64_t out, const char* op, const Status& st) {
  ++errors_;
  auto rec = std::make_shared<ErrorRecord>(
      ErrorRecord{op, st.message(), "worker " + std::to_string(worker_id_)});
  if (out != 0 && !tensors_.count(out)) {
    Tensor t;
    t.poison = rec;
    tensors_.emplace(out, std::move(t));
  }
  v1::WorkerMessage m;
  auto* e = m.mutable_error();
  e->set_session(session);
  e->set_handle(out);
  e->mutable_error()->set_op(rec->op);
  e->mutable_error()->set_message(rec->message);
  e->mutable_error()->set_origin(rec->origin);
  send_(std::move(m));
}

void Executor::run_instr(uint64_t session, const v1::Instr& in) {
  if (in.comm() != 0) {
    run_comm(session, in);
    return;
  }
  auto dec = decode_instr(in);
  if (!dec.is_ok()) {
    fail(session, in.out(), "instruction", dec.status());
    return;
  }
  const OpId op = dec->op;
  const OpAttrs& attrs = dec->attrs;
  const char* name = op_name(op);
  const bool in_place = is_in_place(op);
  if (!in_place && in.out() == 0) {
    fail(session, 0, name, invalid_argument("missing result handle"));
    return;
  }
  if (!in_place && tensors_.count(in.out())) {
    // Never overwrite a live tensor: report and leave the existing one alone.
    fail(session, 0, name, invalid_argument("result handle {} is already in use", in.out()));
    return;
  }
  if (in_place && in.out() != 0) {
    fail(session, 0, name, invalid_argument("in-place op with a result handle"));
    return;
  }
  inputs_.clear();
  metas_.clear();
  std::shared_ptr<const ErrorRecord> poison;
  for (uint64_t h : in.inputs()) {
    auto it = tensors_.find(h);
    if (it == tensors_.end()) {
      fail(session, in.out(), name, not_found("unknown tensor handle {}", h));
      return;
    }
    if (it->second.poison && !poison) poison = it->second.poison;
    inputs_.push_back(&it->second);
    metas_.push_back(it->second.meta);
  }
  if (poison) {  // dependents inherit the poison without a new report
    if (in_place) {
      Tensor* dst = const_cast<Tensor*>(inputs_[0]);
      dst->poison = poison;
      dst->storage.reset();
    } else {
      Tensor t;
      t.poison = poison;
      tensors_.emplace(in.out(), std::move(t));
    }
    return;
  }
  auto meta = infer_meta(op, metas_, attrs);
  if (!meta.is_ok()) {
    fail(session, in.out(), name, meta.status());
    return;
  }
  if (!backend_.supports(op)) {
    fail(session, in.out(), name,
         unimplemented("op {} is not supported by the {} backend", name, backend_.device_kind()));
    return;
  }
  if (in_place) {
    Tensor* dst = const_cast<Tensor*>(inputs_[0]);
    Status cow = unshare_storage(*dst, op, session);
    if (!cow.is_ok()) {
      fail(session, 0, name, cow);
      return;
    }
    Status st = backend_.run(KernelArgs{op, attrs, inputs_, *dst, session});
    if (!st.is_ok()) {
      fail(session, 0, name, st);
      return;
    }
    ++ops_executed_;
    return;
  }
  Tensor out;
  out.meta = *meta;
  if (op == OpId::k_reshape) {
    out.storage = inputs_[0]->storage;  // contiguous: a reshape is a view of the same bytes
  } else {
    auto storage = backend_.alloc(static_cast<size_t>(out.meta.nbytes()));
    if (!storage.is_ok()) {
      fail(session, in.out(), name, storage.status());
      return;
    }
    out.storage = std::move(*storage);
    Status st = backend_.run(KernelArgs{op, attrs, inputs_, out, session});
    if (!st.is_ok()) {
      fail(session, in.out(), name, st);
      return;
    }
  }
  ++ops_executed_;
  tensors_.emplace(in.out(), std::move(out));
}

Status Executor::unshare_storage(Tensor& dst, OpId op, uint64_t session) {
  // Reshape results share their input's bytes (a zero-copy view). Tensors have value
  // semantics, so the first in-place write to shared bytes gets a private copy first.
  if (!dst.storage || dst.storage.use_count() <= 1) return Status::ok();
  auto fresh = backend_.alloc(static_cast<size_t>(dst.meta.nbytes()));
  if (!fresh.is_ok()) return fresh.status();
  Tensor old = dst;  // keeps the shared bytes alive while they are copied
  dst.storage = std::move(*fresh);
  if (op == OpId::k_copy_) return Status::ok();  // copy_ overwrites every element
  OpAttrs none;
  const Tensor* src[] = {&old};
  return backend_.run(KernelArgs{OpId::k_copy_, none, std::span<const Tensor* const>(src, 1), dst,
                                 session});
}

void Executor::answer(uint64_t session, const v1::Request& req) {
  switch (req.kind()) {
    case v1::Request::SYNC: {
      v1::WorkerMessage m;
      m.mutable_reply()->set_request_id(req.request_id());
      m.mutable_reply()->set_last(true);
      Status st = backend_.synchronize(session);
      if (!st.is_ok()) {
        auto* e = m.mutable_reply()->add_errors();
        e->set_op("synchronize");
        e->set_message(st.message());
        e->set_origin("worker " + std::to_string(worker_id_));
      }
      send_(std::move(m));
      return;
    }
    case v1::Request::FETCH: answer_fetch(session, req); return;
    case v1::Request::STATS: {
      v1::WorkerMessage m;
      m.mutable_reply()->set_request_id(req.request_id());
      m.mutable_reply()->set_last(true);
      fill_stats(m.mutable_reply()->add_stats());
      send_(std::move(m));
      return;
    }
    default: {
      v1::WorkerMessage m;
      m.mutable_reply()->set_request_id(req.request_id());
      m.mutable_reply()->set_last(true);
      auto* e = m.mutable_reply()->add_errors();
      e->set_op("request");
      e->set_message(fmt::format("unknown request kind {}", static_cast<int>(req.kind())));
      send_(std::move(m));
    }
  }
}

void Executor::answer_fetch(uint64_t session, const v1::Request& req) {
  auto reply_error = [&](const std::string& op, const std::string& msg, const std::string& origin) {
    v1::WorkerMessage m;
    m.mutable_reply()->set_request_id(req.request_id());
    m.mutable_reply()->set_last(true);
    auto* e = m.mutable_reply()->add_errors();
    e->set_op(op);
    e->set_message(msg);
    e->set_origin(origin);
    send_(std::move(m));
  };
  auto it = tensors_.find(req.id());
  if (it == tensors_.end()) {
    reply_error("fetch", fmt::format("unknown tensor handle {}", req.id()),
                "worker " + std::to_string(worker_id_));
    return;
  }
  const Tensor& t = it->second;
  if (t.poison) {
    reply_error(t.poison->op, t.poison->message, t.poison->origin);
    return;
  }
  const uint64_t total = static_cast<uint64_t>(t.meta.nbytes());
  uint64_t offset = 0;
  do {
    uint64_t n = std::min<uint64_t>(total - offset, max_reply_chunk_);
    v1::WorkerMessage m;
    auto* r = m.mutable_reply();
    r->set_request_id(req.request_id());
    auto* td = r->mutable_tensor();
    for (int64_t d : t.meta.shape) td->add_shape(d);
    td->set_dtype(static_cast<v1::DType>(t.meta.dtype));
    td->set_total_bytes(total);
    td->set_offset(offset);
    std::string* data = td->mutable_data();
    data->resize(n);
    Status st = backend_.copy_to_host(t, offset, data->data(), n, session);
    if (!st.is_ok()) {
      reply_error("fetch", st.message(), "worker " + std::to_string(worker_id_));
      return;
    }
    offset += n;
    r->set_last(offset >= total);
    send_(std::move(m));
  } while (offset < total);
}

void Executor::fill_stats(v1::WorkerStats* s) {
  BackendStats bs = backend_.stats();
  s->set_worker_id(worker_id_);
  s->set_device(backend_.device_name());
  s->set_tensors(tensors_.size());
  s->set_bytes(bs.allocated_bytes);
  s->set_ops_executed(ops_executed_);
  s->set_errors(errors_);
  s->set_peak_bytes(bs.peak_bytes);
  s->set_reserved_bytes(bs.reserved_bytes);
  s->set_sessions(sessions_.size());
  if (peer_) {
    PeerStats ps = peer_->stats();
    s->set_peer_bytes_sent(ps.bytes_sent);
    s->set_peer_bytes_received(ps.bytes_received);
  }
}

}  // namespace gt::worker
