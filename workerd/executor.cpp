#include "workerd/executor.h"

#include <sys/mman.h>

#include <spdlog/spdlog.h>

#include "libgtcore/comm.h"
#include "libgtcore/instr_codec.h"
#include "libgtcore/reply_payload.h"
#include "libgtcore/shape_rules.h"
#include "workerd/peer/peer_link.h"

namespace gt::worker {

namespace {
constexpr uint64_t kAckEvery = 4096;  // instructions between acks while the queue stays busy
// Under sustained load an ack goes out at least this often, so the dispatcher's per-session
// in-flight budget (by estimated cost) refills while the worker is still busy.
constexpr auto kAckInterval = std::chrono::milliseconds(1);
// An error record as it travels to the dispatcher (and from there to the client).
void error_to_wire(const ErrorRecord& rec, v1::ErrorInfo* e) {
  e->set_op(rec.op);
  e->set_message(rec.message);
  e->set_origin(rec.origin);
  e->set_code(static_cast<uint32_t>(rec.code));
  e->set_failed_handle(rec.handle);
}

}  // namespace

Executor::Executor(Backend& backend, SendFn send, uint64_t max_reply_chunk_bytes, int64_t slice_us)
    : backend_(backend),
      send_(std::move(send)),
      max_reply_chunk_(max_reply_chunk_bytes),
      slice_(std::max<int64_t>(slice_us, 1)) {
  hot_.set_graph_dropper([this](void* graph) { backend_.drop_graph(graph); });
  // Kernels that fail on an asynchronous device are reported from its completion thread, as
  // fail() reports them at issue on a synchronous one (the result is poisoned either way).
  backend_.set_async_error_sink([this](uint64_t session, uint64_t handle, const char* op,
                                       const Status& st) {
    ++errors_;
    v1::WorkerMessage m;
    auto* e = m.mutable_error();
    e->set_session(session);
    e->set_handle(handle);
    error_to_wire(record(op, st), e->mutable_error());
    send_(std::move(m));
  });
}

Executor::~Executor() {
  stop();
  hot_.clear();  // hands the paths' device graphs back while the backend is here
  backend_.set_async_error_sink(nullptr);  // the sink reports through this executor
}

void Executor::start() { thread_ = std::thread([this] { loop(); }); }

void Executor::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
    queue_.clear();
    note_queue_locked();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Completions still due capture this executor: they run before it goes.
  wait_for_completions();
}

void Executor::enqueue(std::unique_ptr<v1::WorkerBatch> batch,
                       std::chrono::steady_clock::time_point received) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    std::vector<FairQueue::SeqRange> dropped;
    queue_.push(std::move(batch), &dropped, received);
    for (const auto& [first, count] : dropped) complete_locked(first, count);
    note_queue_locked();
  }
  cv_.notify_one();
}

bool Executor::try_execute_inline(v1::WorkerBatch& batch) {
  if (batch.instrs_size() != 0) return false;
  // On an asynchronous device a fetch enqueues copies, which blocks while the stream's launch
  // queue is full: never on the I/O thread.
  if (backend_.asynchronous())
    for (const auto& r : batch.requests())
      if (r.kind() == v1::Request::FETCH) return false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (busy_ || queue_.size() != 0 || reset_requested_ || stopping_) return false;
    busy_ = true;
  }
  const auto started = std::chrono::steady_clock::now();
  execute(batch);
  add_busy(started);
  check_device();
  maybe_ack(false);
  bool wake;
  {
    std::lock_guard<std::mutex> lk(mu_);
    busy_ = false;
    wake = queue_.size() != 0 || reset_requested_ || stopping_;
  }
  // Waking the executor for nothing would cost a futex call and a context switch per request.
  if (wake) cv_.notify_one();
  return true;
}

uint64_t Executor::executed_seq() const {
  std::lock_guard<std::mutex> lk(mu_);
  return executed_seq_;
}

void Executor::complete_locked(uint64_t first, uint64_t count) {
  if (count == 0) return;
  unacked_count_ += count;
  if (first == executed_seq_) {
    executed_seq_ = first + count;
    for (auto it = done_ahead_.find(executed_seq_); it != done_ahead_.end();
         it = done_ahead_.find(executed_seq_)) {
      executed_seq_ = it->second;
      done_ahead_.erase(it);
    }
  } else if (first > executed_seq_) {
    done_ahead_[first] = first + count;
    unacked_done_.push_back(first);
  }
  // (first < executed_seq_: numbered before a dispatcher restart; nothing waits for it)
}

void Executor::maybe_ack(bool more) {
  // Ack when the queue ran dry (the dispatcher's window reopens promptly), and under sustained
  // load every kAckEvery instructions or kAckInterval, whichever comes first.
  std::lock_guard<std::mutex> order(ack_mu_);
  v1::WorkerMessage m;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (unacked_count_ == 0) return;
    auto now = std::chrono::steady_clock::now();
    if (more && unacked_count_ < kAckEvery && now - last_ack_ < kAckInterval) return;
    auto* ack = m.mutable_ack();
    ack->set_executed_seq(executed_seq_);
    for (uint64_t first : unacked_done_)
      if (first >= executed_seq_) ack->add_done(first);
    unacked_done_.clear();
    unacked_count_ = 0;
    last_ack_ = now;
  }
  if (timings_.any()) timings_.drain_into(m.mutable_ack());
  send_(std::move(m));
}

void Executor::send_timings() {
  // Sent by the thread running the batch (busy_ is held: no other ack is being built), with the
  // executed prefix as it stands, so it is an ordinary ack to the dispatcher.
  std::lock_guard<std::mutex> order(ack_mu_);
  v1::WorkerMessage m;
  {
    std::lock_guard<std::mutex> lk(mu_);
    m.mutable_ack()->set_executed_seq(executed_seq_);
  }
  timings_.drain_into(m.mutable_ack());
  send_(std::move(m));
}

void Executor::reset() {
  shm_.clear();  // now, not on the executor thread: the next dispatcher may attach at once
  {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.clear();
    note_queue_locked();
    reset_requested_ = true;
  }
  cv_.notify_one();
}

void Executor::loop() {
  while (true) {
    FairQueue::Entry e;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stopping_ || (!busy_ && (reset_requested_ || queue_.runnable())); });
      if (stopping_) return;
      if (reset_requested_) {
        reset_requested_ = false;
        lk.unlock();
        tensors_.clear();
        hot_.clear();
        note_hot_paths();
        for (uint64_t s : sessions_) backend_.end_session(s);
        sessions_.clear();
        lk.lock();
        device_backlog_.clear();
        executed_seq_ = 0;
        done_ahead_.clear();
        unacked_done_.clear();
        unacked_count_ = 0;
        timings_.clear();  // they were for the dispatcher that went away
        continue;
      }
      e = std::move(*queue_.pop());
      note_queue_locked();
      busy_ = true;
      // What the session may still issue before its device backlog is full.
      pace_left_ = UINT64_MAX;
      if (paced()) {
        auto b = device_backlog_.find(e.batch->session());
        const uint64_t backlog = b == device_backlog_.end() ? 0 : b->second;
        pace_left_ = backlog < device_queue_ops_ ? device_queue_ops_ - backlog : 0;
      }
    }
    const uint64_t session = e.batch->session();
    const auto started = std::chrono::steady_clock::now();
    pace_start_ops_ = ops_executed_.load(std::memory_order_relaxed);
    const bool done =
        run_batch(*e.batch, &e.next, &e.next_free, true, started + slice_, e.received);
    const uint64_t issued = ops_executed_.load(std::memory_order_relaxed) - pace_start_ops_;
    add_busy(started);
    check_device();
    bool more;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (done) {
        if (e.comm) queue_.comm_done(e.batch.get());
        complete_locked(e.batch->first_seq(), FairQueue::seq_count(*e.batch));
      } else if (!reset_requested_ && !stopping_) {
        queue_.push_front(std::move(e));  // its session continues on its next turn
      }
      if (paced() && issued > 0) note_issued_locked(session, issued);
      note_queue_locked();
      more = queue_.size() != 0;
      busy_ = false;
    }
    // (Registered after the count: it runs on the completion thread, later; counted, so that
    // stop() waits for it.)
    if (paced() && issued > 0)
      complete_later(session, [this, session, issued](const Status&) {
        note_device_done(session, issued);
      });
    maybe_ack(more);
  }
}

void Executor::note_issued_locked(uint64_t session, uint64_t ops) {
  uint64_t& backlog = device_backlog_[session];
  backlog += ops;
  if (backlog >= device_queue_ops_) queue_.set_paused(session, true);
}

void Executor::note_device_done(uint64_t session, uint64_t ops) {
  bool resumed = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = device_backlog_.find(session);
    if (it == device_backlog_.end()) return;
    it->second -= std::min(it->second, ops);
    if (it->second < device_queue_ops_ && queue_.paused(session)) {
      queue_.set_paused(session, false);
      resumed = true;
    }
    if (it->second == 0) device_backlog_.erase(it);
  }
  if (resumed) cv_.notify_one();
}

void Executor::execute(v1::WorkerBatch& b) {
  int next = 0, next_free = 0;
  run_batch(b, &next, &next_free, false, {});
  std::lock_guard<std::mutex> lk(mu_);
  complete_locked(b.first_seq(), FairQueue::seq_count(b));
}

bool Executor::run_batch(v1::WorkerBatch& b, int* next, int* next_free, bool may_yield,
                         std::chrono::steady_clock::time_point yield_at,
                         std::chrono::steady_clock::time_point received) {
  using Clock = std::chrono::steady_clock;
  const uint64_t session = b.session();
  const int n = b.instrs_size(), n_free = b.frees_size();
  // Frees in stream order (free_at places each after that many instructions); a batch without
  // positions frees after all its instructions.
  const bool placed = b.free_at_size() == n_free;
  // Timed only when the dispatcher asked (its instruction log or a live trace records).
  tracing_ = b.trace();
  const int begin = *next;
  const Clock::time_point started = tracing_ ? Clock::now() : Clock::time_point{};
  const bool log_instrs = spdlog::should_log(spdlog::level::trace);
  if (n > 0 && *next < n) sessions_.insert(session);  // a stats request leaves no state
  if (*next == 0 && *next_free == 0 && b.hot_define_size() > 0) define_hot_paths(b);
  while (*next < n) {
    while (placed && *next_free < n_free && b.free_at(*next_free) <= static_cast<uint32_t>(*next))
      free_handle(session, b.frees((*next_free)++));
    v1::Instr& in = *b.mutable_instrs((*next)++);
    if (log_instrs) log_instr(session, in);
    if (in.op() == 0 && in.comm() == 0 && in.has_hot()) {
      // The batch's last instruction: FETCHes after it may be answered while the path still
      // runs (nothing after it in the batch can change what they read). Not while traced: the
      // timings go before the replies.
      early_batch_ = early_fetches_on_ && *next == n && !tracing_ ? &b : nullptr;
      run_hot(session, in);
      early_batch_ = nullptr;
    } else {
      run_instr(session, in);
    }
    // Another session waits: take turns once this one has had its slice. Or the session has
    // issued as much as the device may have queued for it (device pacing): it waits for its
    // completions.
    auto backlog_full = [&] {
      return pace_left_ != UINT64_MAX &&
             ops_executed_.load(std::memory_order_relaxed) - pace_start_ops_ >= pace_left_;
    };
    if (may_yield && *next < n &&
        (backlog_full() || (waiting_.load(std::memory_order_relaxed) > 0 &&
                            std::chrono::steady_clock::now() >= yield_at))) {
      if (tracing_) timings_.add_turn(b, begin, *next, received, started, Clock::now(), false);
      spdlog::debug("session {} batch {}: yields after {} of {} instructions", session,
                   b.first_seq(), *next, n);
      return false;
    }
  }
  while (*next_free < n_free) free_handle(session, b.frees((*next_free)++));
  if (tracing_) {
    timings_.add_turn(b, begin, n, received, started, Clock::now(), true);
    if (b.requests_size() > 0) send_timings();  // before the replies (flows in gt-trace)
  }
  if (spdlog::should_log(spdlog::level::debug))
    spdlog::debug("session {} batch {}: ran instructions {}-{} of {}, {} frees, {} requests{}",
                  session, b.first_seq(), begin, n, n, n_free, b.requests_size(),
                  b.end_session() ? ", end of session" : "");
  finish_batch(b);
  return true;
}

void Executor::log_instr(uint64_t session, const v1::Instr& in) const {
  // trace level: one line per instruction (tests and debugging; never at info).
  std::string inputs;
  for (uint64_t h : in.inputs()) inputs += (inputs.empty() ? "" : ",") + std::to_string(h);
  if (in.comm() != 0) {
    auto c = comm_from_wire(in.comm());
    spdlog::trace("session {}: {} [{}] -> {}", session, c ? comm_name(*c) : "comm?", inputs,
                  in.out());
    return;
  }
  auto op = op_from_wire(in.op());
  spdlog::trace("session {}: {} [{}] -> {}", session, op ? op_name(*op) : "op?", inputs, in.out());
}

void Executor::finish_batch(v1::WorkerBatch& b) {
  const uint64_t session = b.session();
  if (b.hot_forget_size() > 0) forget_hot_paths(b);
  for (const auto& r : b.requests()) answer(session, r);
  if (b.end_session()) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      device_backlog_.erase(session);  // (late completions find nothing to count down)
      queue_.set_paused(session, false);
    }
    shm_.drop(session);
    hot_.drop_session(session);
    note_hot_paths();
    // Whatever the session still holds goes with it, whether or not a free named it.
    size_t left = drop_session_tensors(session);
    if (left > 0) spdlog::debug("session {} ended holding {} tensors", session, left);
    backend_.end_session(session);
    if (peer_) peer_->end_session(session);
    sessions_.erase(session);
  }
}

ErrorRecord Executor::record(const char* op, const Status& st) const {
  return ErrorRecord{op, st.message(), "worker " + std::to_string(worker_id_), st.code()};
}

void Executor::fail(uint64_t session, uint64_t out, const char* op, const Status& st) {
  if (!held_errors_) ++errors_;  // (held ones are counted when sent)
  auto rec = std::make_shared<ErrorRecord>(record(op, st));
  rec->handle = out;
  if (out != 0 && !tensors_.count(out)) {
    Tensor t;
    t.poison = rec;
    put(session, out, std::move(t));
  }
  v1::WorkerMessage m;
  auto* e = m.mutable_error();
  e->set_session(session);
  e->set_handle(out);
  error_to_wire(*rec, e->mutable_error());
  if (held_errors_) {
    held_errors_->push_back(std::move(m));
    return;
  }
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
  // An upload from the client's shared memory: its payload is read in place, and once the
  // instruction has run (whatever came of it) its region is the client's again -- or, where the
  // device reads the registered arena itself (CUDA, sim), once the session's work so far is done.
  ShmArenaTable::Upload upload;
  bool release_when_done = false;
  struct ReleaseAtExit {
    Executor* ex;
    uint64_t session;
    ShmArenaTable::Upload* u;
    const bool* when_done;
    ~ReleaseAtExit() {
      if (!u->region) return;
      if (!*when_done) {
        shm_mark_released(u->region, u->bytes);
        return;
      }
      ex->complete_later(session, [m = u->mapping, r = u->region, n = u->bytes](const Status&) {
        shm_mark_released(r, n);
      });
    }
  } release_at_exit{this, session, &upload, &release_when_done};
  if (in.has_shm()) {
    auto found = shm_.upload(session, in.shm().generation(), in.shm().offset(), in.shm().bytes());
    if (!found.is_ok()) {
      fail(session, in.out(), op_name(dec->op), found.status());
      return;
    }
    upload = std::move(*found);
    dec->attrs.data = std::string_view(upload.region, static_cast<size_t>(upload.bytes));
    release_when_done = backend_.asynchronous() && register_arena(session, *upload.mapping);
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
    if (it == tensors_.end() || it->second.session != session) {
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
      put(session, in.out(), std::move(t));
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
    if (op == OpId::k_copy_ && shares_copy(*dst, *inputs_[1])) {
      dst->storage = inputs_[1]->storage;
      count_op();
      return;
    }
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
    count_op();
    return;
  }
  Tensor out;
  out.meta = *meta;
  out.handle = in.out();
  out.session = session;
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
  count_op();
  put(session, in.out(), std::move(out));
}

void Executor::put(uint64_t session, uint64_t handle, Tensor&& t) {
  t.session = session;
  t.handle = handle;
  tensors_.emplace(handle, std::move(t));
}

void Executor::free_handle(uint64_t session, uint64_t handle) {
  // Only the session's own tensors: a handle of another session is left alone.
  auto it = tensors_.find(handle);
  if (it != tensors_.end() && it->second.session == session) tensors_.erase(it);
}

size_t Executor::drop_session_tensors(uint64_t session) {
  return std::erase_if(tensors_, [&](const auto& kv) { return kv.second.session == session; });
}

bool Executor::shares_copy(const Tensor& dst, const Tensor& src) const {
  // copy_ of a value of the same shape and dtype: the destination takes the source's bytes,
  // shared copy-on-write as a reshape's are (unshare_storage copies them at the first in-place
  // write to either), instead of a pass over them. An in-place update computed out of place
  // (p.sub_(g, lr) is p - lr g, then copy_) then costs no copy once the temporary is freed.
  // Synchronous devices only, and never inside a device graph's capture: a captured copy is
  // replayed as a kernel, and a queued kernel may still be writing the destination's old bytes.
  return !backend_.asynchronous() && !replaced_storages_ && &dst != &src &&
         src.storage && src.meta.shape == dst.meta.shape && src.meta.dtype == dst.meta.dtype;
}

Status Executor::unshare_storage(Tensor& dst, OpId op, uint64_t session) {
  // Reshape results share their input's bytes (a zero-copy view). Tensors have value
  // semantics, so the first in-place write to shared bytes gets a private copy first.
  if (!dst.storage || dst.storage.use_count() <= 1) return Status::ok();
  auto fresh = backend_.alloc(static_cast<size_t>(dst.meta.nbytes()));
  if (!fresh.is_ok()) return fresh.status();
  Tensor old = dst;  // keeps the shared bytes alive while they are copied
  if (replaced_storages_) replaced_storages_->push_back(ReplacedStorage{dst.handle, dst.storage});
  dst.storage = std::move(*fresh);
  if (op == OpId::k_copy_) return Status::ok();  // copy_ overwrites every element
  // The others (host_chunk, strided_copy_) write only some elements: the rest keep the old
  // values. copy_'s inputs are (destination, source), the destination being the one written.
  OpAttrs none;
  const Tensor* ins[] = {&dst, &old};
  return backend_.run(KernelArgs{OpId::k_copy_, none, std::span<const Tensor* const>(ins, 2), dst,
                                 session});
}

void Executor::answer(uint64_t session, const v1::Request& req) {
  switch (req.kind()) {
    case v1::Request::SYNC: {
      // Answered once the session's queued device work is done (at once on the CPU), from
      // whichever thread completes it: never a device wait here (ARCHITECTURE §6).
      auto m = std::make_shared<v1::WorkerMessage>();
      m->mutable_reply()->set_request_id(req.request_id());
      m->mutable_reply()->set_last(true);
      complete_later(session, [this, m](const Status& st) {
        if (!st.is_ok()) error_to_wire(record("synchronize", st), m->mutable_reply()->add_errors());
        send_(std::move(*m));
      });
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
      error_to_wire(record("request", invalid_argument("unknown request kind {}",
                                                       static_cast<int>(req.kind()))),
                    m.mutable_reply()->add_errors());
      send_(std::move(m));
    }
  }
}

namespace {
// A fetch chunk's metadata: the whole tensor's shape, dtype and size, and where the chunk starts.
void fill_chunk_meta(v1::TensorData* td, const TensorMeta& meta, uint64_t offset) {
  for (int64_t d : meta.shape) td->add_shape(d);
  td->set_dtype(static_cast<v1::DType>(meta.dtype));
  td->set_total_bytes(static_cast<uint64_t>(meta.nbytes()));
  td->set_offset(offset);
}
}  // namespace

// A fetch reply chunk of `n` bytes at `offset` of t's contents: the header, and the buffer the
// bytes go to (sized).
std::string* Executor::start_fetch_chunk(v1::Reply* r, uint64_t request_id, const Tensor& t,
                                         uint64_t offset, uint64_t n) {
  r->set_request_id(request_id);
  auto* td = r->mutable_tensor();
  fill_chunk_meta(td, t.meta, offset);
  std::string* data = td->mutable_data();
  data->resize(n);
  return data;
}

void Executor::answer_fetch(uint64_t session, const v1::Request& req) {
  auto reply_error = [&](const ErrorRecord& rec) { this->reply_error(req.request_id(), rec); };
  auto it = tensors_.find(req.id());
  if (it == tensors_.end() || it->second.session != session) {
    reply_error(record("fetch", not_found("unknown tensor handle {}", req.id())));
    return;
  }
  const Tensor& t = it->second;
  if (t.poison) {
    reply_error(*t.poison);
    return;
  }
  if (req.has_shm()) {
    // Unknown arena (an older generation, or one this worker could not map), or a region that
    // does not hold the value: over the socket instead.
    std::shared_ptr<ShmMapping> arena = shm_.find(session, req.shm().generation());
    if (arena && send_fetch_to_shm(session, req, t, std::move(arena))) return;
  }
  if (backend_.asynchronous()) {
    answer_fetch_async(session, req, t);
    return;
  }
  const uint64_t total = static_cast<uint64_t>(t.meta.nbytes());
  if (send_parts_ && total > 0) {
    auto host = backend_.host_view(t, 0, static_cast<size_t>(total));
    if (!host.is_ok()) {
      reply_error(record("fetch", host.status()));
      return;
    }
    if (*host != nullptr) {
      send_fetch_from_host(req, t, *host);
      return;
    }
  }
  uint64_t offset = 0;
  do {
    uint64_t n = std::min<uint64_t>(total - offset, max_reply_chunk_.load(std::memory_order_relaxed));
    v1::WorkerMessage m;
    auto* r = m.mutable_reply();
    std::string* data = start_fetch_chunk(r, req.request_id(), t, offset, n);
    Status st = backend_.copy_to_host(t, offset, data->data(), n, session);
    if (!st.is_ok()) {
      reply_error(record("fetch", st));
      return;
    }
    offset += n;
    r->set_last(offset >= total);
    send_(std::move(m));
  } while (offset < total);
}

namespace {
// Chunks small enough that the client copies one out while the next is written, large enough
// that their replies cost nothing next to the copies.
constexpr uint64_t kShmChunkBytes = 8ull << 20;

// The header-only reply for bytes [offset, offset + n) of a fetch written into shared memory.
v1::WorkerMessage shm_chunk_reply(uint64_t request_id, const TensorMeta& meta, uint64_t offset,
                                  uint64_t n) {
  const auto total = static_cast<uint64_t>(meta.nbytes());
  v1::WorkerMessage m;
  v1::Reply* r = m.mutable_reply();
  r->set_request_id(request_id);
  auto* td = r->mutable_tensor();
  fill_chunk_meta(td, meta, offset);
  td->set_shm_bytes(n);
  r->set_last(offset + n >= total);
  return m;
}
}  // namespace

bool Executor::send_fetch_to_shm(uint64_t session, const v1::Request& req, const Tensor& t,
                                 std::shared_ptr<ShmMapping> arena) {
  const uint64_t total = static_cast<uint64_t>(t.meta.nbytes());
  const v1::ShmTarget& to = req.shm();
  if (total == 0 || to.bytes() < total || to.offset() > arena->size() ||
      to.bytes() > arena->size() - to.offset())
    return false;
  char* base = arena->data() + to.offset();
  const uint64_t request_id = req.request_id();
  if (!backend_.asynchronous()) {
    for (uint64_t offset = 0; offset < total;) {
      const uint64_t n = std::min(total - offset, kShmChunkBytes);
      Status st = backend_.copy_to_host(t, offset, base + offset, n, session);
      if (!st.is_ok()) {
        reply_error(request_id, record("fetch", st));
        return true;
      }
      send_(shm_chunk_reply(request_id, t.meta, offset, n));
      offset += n;
    }
    return true;
  }
  // An asynchronous device: the copies are enqueued now, in stream order, straight into the
  // region; the replies leave once they are done (the arena stays mapped until then). The
  // arena is registered with the device (register_arena): the device writes into it directly.
  register_arena(session, *arena);
  Status st;
  for (uint64_t offset = 0; offset < total && st.is_ok(); offset += kShmChunkBytes)
    st = backend_.start_copy_to_host(t, offset, base + offset,
                                     std::min(total - offset, kShmChunkBytes), session);
  answer_fetch_later(session, request_id, t, st, [this, arena = std::move(arena), request_id,
                                                   meta = t.meta, total] {
    for (uint64_t offset = 0; offset < total; offset += kShmChunkBytes)
      send_(shm_chunk_reply(request_id, meta, offset, std::min(total - offset, kShmChunkBytes)));
  });
  return true;
}

bool Executor::register_arena(uint64_t session, ShmMapping& arena) {
  if (arena.device_registration == 0) {
    Status reg = backend_.register_host_memory(arena.data(), arena.size());
    arena.device_registration = reg.is_ok() ? 1 : -1;
    if (reg.is_ok())
      arena.set_unmapper([&backend = backend_](char* p, uint64_t n) {
        backend.unregister_host_memory(p, [p, n] { ::munmap(p, static_cast<size_t>(n)); });
      });
    else
      spdlog::debug("session {}: shared-memory arena not registered with the device ({}): its "
                    "transfers are staged", session, reg.message());
  }
  return arena.device_registration == 1;
}

void Executor::send_fetch_from_host(const v1::Request& req, const Tensor& t, const char* host) {
  // The header is a few dozen bytes; the payload leaves from the tensor's own memory. This
  // thread runs the session's work, so nothing writes or frees the tensor meanwhile.
  const uint64_t total = static_cast<uint64_t>(t.meta.nbytes());
  v1::Reply head;
  head.set_request_id(req.request_id());
  v1::TensorData meta;
  fill_chunk_meta(&meta, t.meta, 0);
  uint64_t offset = 0;
  while (offset < total) {
    const uint64_t n = std::min<uint64_t>(total - offset, max_reply_chunk_.load(std::memory_order_relaxed));
    meta.set_offset(offset);
    head.set_last(offset + n >= total);
    header_scratch_.clear();
    Status st = append_reply_header(&header_scratch_, kWorkerReplyField, head, meta, n);
    if (!st.is_ok()) {
      reply_error(req.request_id(), record("fetch", st));
      return;
    }
    send_parts_(header_scratch_, std::string_view(host + offset, static_cast<size_t>(n)));
    offset += n;
  }
}

void Executor::reply_error(uint64_t request_id, const ErrorRecord& rec) {
  v1::WorkerMessage m;
  m.mutable_reply()->set_request_id(request_id);
  m.mutable_reply()->set_last(true);
  error_to_wire(rec, m.mutable_reply()->add_errors());
  send_(std::move(m));
}

void Executor::check_device() {
  if (device_lost_reported_.load(std::memory_order_relaxed)) return;
  Status lost = backend_.device_lost();
  if (lost.is_ok() || device_lost_reported_.exchange(true)) return;
  spdlog::critical("worker {}: the device is lost ({}); this worker must be restarted",
                   worker_id_, lost.message());
  if (on_device_lost_) on_device_lost_(lost);
}

void Executor::complete_later(uint64_t session, std::function<void(const Status&)> done) {
  {
    std::lock_guard<std::mutex> lk(completions_mu_);
    ++completions_pending_;
    ++completions_by_session_[session];
  }
  backend_.when_done(session, [this, session, done = std::move(done)](Status st) {
    if (!st.is_ok()) check_device();  // the device may have been lost since the last batch
    done(st);
    std::lock_guard<std::mutex> lk(completions_mu_);
    --completions_pending_;
    auto it = completions_by_session_.find(session);
    if (it != completions_by_session_.end() && --it->second == 0) completions_by_session_.erase(it);
    completions_cv_.notify_all();
  });
}

bool Executor::completions_pending_for(uint64_t session) {
  std::lock_guard<std::mutex> lk(completions_mu_);
  return completions_by_session_.count(session) != 0;
}

void Executor::wait_for_completions() {
  std::unique_lock<std::mutex> lk(completions_mu_);
  completions_cv_.wait(lk, [&] { return completions_pending_ == 0; });
}

// An asynchronous device: every chunk's copy is enqueued now, in stream order (later ops of the
// session may overwrite the tensor), into messages that are sent once the copies are done.
void Executor::answer_fetch_async(uint64_t session, const v1::Request& req, const Tensor& t) {
  const uint64_t total = static_cast<uint64_t>(t.meta.nbytes());
  // A small fetch from an idle stream is copied and sent from here: the copy is all it waits
  // for (microseconds), and it skips the completion thread's hand-offs (a round trip's worth).
  // Not while an earlier reply of the session waits there: it would be overtaken.
  constexpr uint64_t kDirectFetchBytes = 64 << 10;
  const uint64_t max_chunk = max_reply_chunk_.load(std::memory_order_relaxed);
  if (total <= std::min<uint64_t>(kDirectFetchBytes, max_chunk) &&
      !completions_pending_for(session)) {
    v1::WorkerMessage m;
    std::string* data = start_fetch_chunk(m.mutable_reply(), req.request_id(), t, 0, total);
    Result<bool> copied = backend_.copy_to_host_if_idle(t, 0, data->data(), total, session);
    if (copied.is_ok() && *copied) {
      const DeviceErrorSlot::Error* poisoned = t.storage ? t.storage->device_error() : nullptr;
      if (!poisoned) {
        m.mutable_reply()->set_last(true);
        send_(std::move(m));
        return;
      }
      // Its failure's report may still wait on the completion thread: the reply follows it
      // there, so the dispatcher knows the error it raises (and does not raise it twice).
      complete_later(session, [this, request_id = req.request_id(),
                               err = *poisoned](const Status&) {
        reply_error(request_id, record(err.op.c_str(), err.status));
      });
      return;
    }
    if (!copied.is_ok()) check_device();  // a failed copy may be the device's loss
  }
  const uint64_t chunks = total == 0 ? 1 : (total + max_chunk - 1) / max_chunk;
  auto msgs = std::make_shared<std::vector<v1::WorkerMessage>>(chunks);
  Status st;
  for (uint64_t i = 0, offset = 0; i < chunks && st.is_ok(); ++i) {
    const uint64_t n = std::min<uint64_t>(total - offset, max_chunk);
    auto* r = (*msgs)[i].mutable_reply();
    std::string* data = start_fetch_chunk(r, req.request_id(), t, offset, n);
    st = backend_.start_copy_to_host(t, offset, data->data(), n, session);
    offset += n;
    r->set_last(offset >= total);
  }
  answer_fetch_later(session, req.request_id(), t, st, [this, msgs] {
    for (auto& m : *msgs) send_(std::move(m));
  });
}

void Executor::answer_fetch_later(uint64_t session, uint64_t request_id, const Tensor& t,
                                  const Status& started, std::function<void()> send) {
  // The block may be freed meanwhile (stream-ordered reuse waits for the copies); whether its
  // kernel failed on the device is known once they are done.
  std::shared_ptr<DeviceErrorSlot> slot = t.storage ? t.storage->error_slot() : nullptr;
  complete_later(session, [this, started, request_id, slot, send = std::move(send)](const Status& done) {
    Status failed = started.is_ok() ? done : started;
    const DeviceErrorSlot::Error* poisoned = slot ? slot->get() : nullptr;
    if (!failed.is_ok() || poisoned) {
      // A result that failed on the device answers with its failure, as a poisoned tensor does.
      reply_error(request_id, failed.is_ok() ? record(poisoned->op.c_str(), poisoned->status)
                                             : record("fetch", failed));
      return;
    }
    send();
  });
}

void Executor::fill_load(v1::WorkerLoad* l) const {
  BackendStats bs = backend_.stats();
  l->set_ops_executed(ops_executed_.load(std::memory_order_relaxed));
  l->set_busy_ns(busy_ns_.load(std::memory_order_relaxed));
  l->set_queue_depth(queue_depth_.load(std::memory_order_relaxed));
  l->set_allocated_bytes(bs.allocated_bytes);
  l->set_reserved_bytes(bs.reserved_bytes);
  l->set_errors(errors_.load(std::memory_order_relaxed));
  l->set_hot_path_hits(hot_runs_.load(std::memory_order_relaxed));
  l->set_hot_paths(hot_paths_.load(std::memory_order_relaxed));
  l->set_fused_ops(fused_ops_.load(std::memory_order_relaxed));
  l->set_graph_launches(graph_launches_.load(std::memory_order_relaxed));
  l->set_graph_instantiations(graph_instantiations_.load(std::memory_order_relaxed));
  l->set_graph_fallbacks(graph_fallbacks_.load(std::memory_order_relaxed));
  l->set_fused_kernels_compiled(bs.fused_kernels_compiled);
  l->set_fused_kernels_from_disk(bs.fused_kernels_from_disk);
  l->set_fused_kernels_failed(bs.fused_kernels_failed);
  l->set_early_fetches(early_fetches_.load(std::memory_order_relaxed));
  if (peer_) {
    PeerStats ps = peer_->stats();
    l->set_peer_bytes_sent(ps.bytes_sent);
    l->set_peer_bytes_received(ps.bytes_received);
  }
}

void Executor::fill_stats(v1::WorkerStats* s) {
  BackendStats bs = backend_.stats();
  s->set_worker_id(worker_id_);
  s->set_device(backend_.device_name());
  s->set_tensors(tensors_.size());
  s->set_bytes(bs.allocated_bytes);
  s->set_ops_executed(ops_executed_.load(std::memory_order_relaxed));
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
