#include "libgtclient/session_remote.h"

#include <unistd.h>

#include <chrono>
#include <cstring>

#include "gt/error.h"
#include "libgtcore/instr_codec.h"
#include "libgtcore/version.h"

namespace gt::detail {

namespace {
constexpr size_t kMaxQueuedInstrs = 65536;     // user threads block beyond this (backpressure)
constexpr size_t kWriteHighWater = 8u << 20;   // serialized bytes waiting for the socket
constexpr int kConnectTimeoutMs = 10000;
constexpr int kWelcomeTimeoutMs = 60000;

std::string program_name() {
  char buf[256];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "client";
  buf[n] = 0;
  const char* slash = std::strrchr(buf, '/');
  return slash ? slash + 1 : buf;
}
}  // namespace

std::string format_errors(const std::vector<v1::ErrorInfo>& errors) {
  if (errors.empty()) return "";
  const auto& e = errors.front();
  std::string s = fmt::format("{} failed: {} ({})", e.op(), e.message(), e.origin());
  if (errors.size() > 1) s += fmt::format(" [and {} more errors since the last sync]", errors.size() - 1);
  return s;
}

RemoteSession::RemoteSession(const std::string& address, std::unique_ptr<EmbeddedDaemons> daemons)
    : daemons_(std::move(daemons)) {
  auto sock = connect_stream(io_, address, kConnectTimeoutMs);
  if (!sock.is_ok()) throw Error("gt: " + sock.status().message());
  conn_ = std::make_shared<FramedConnection>(std::move(*sock), kDefaultMaxFrameBytes);
  conn_->set_write_handler([this] {
    if (awaiting_drain_ && conn_->pending_bytes() < kWriteHighWater) {
      awaiting_drain_ = false;
      flush();
    }
  });
  conn_->start([this](std::string_view b) { on_frame(b); },
               [this](const Status& s) { on_close(s); });
  v1::ClientMessage hello;
  auto* h = hello.mutable_hello();
  h->set_proto_major(kProtoMajor);
  h->set_proto_minor(kProtoMinor);
  h->set_op_table_hash(op_table_hash());
  h->set_role(v1::ROLE_CLIENT);
  h->set_client_name(program_name());
  if (const char* tok = std::getenv("GT_TOKEN")) h->mutable_credentials()->set_token(tok);
  (void)conn_->send(hello);
  io_thread_ = std::thread([this] { io_.run(); });

  std::unique_lock<std::mutex> lk(mu_);
  bool ok = cv_.wait_for(lk, std::chrono::milliseconds(kWelcomeTimeoutMs),
                         [&] { return welcomed_ || !lost_.empty(); });
  if (!welcomed_) {
    std::string why = ok ? lost_ : "no answer from the dispatcher at " + address;
    lk.unlock();
    asio::post(io_, [this] { conn_->close(Status::ok()); });
    io_.stop();
    io_thread_.join();
    if (daemons_) daemons_->stop(2000);
    throw Error("gt: cannot start a session: " + why);
  }
}

RemoteSession::~RemoteSession() {
  // Send what is queued, then close; the dispatcher frees this session's tensors.
  asio::post(io_, [this] {
    flush();
    conn_->close_after_flush();
  });
  {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, std::chrono::seconds(5), [&] { return !lost_.empty(); });
  }
  io_.stop();
  if (io_thread_.joinable()) io_thread_.join();
  if (daemons_) daemons_->stop(5000);
}

void RemoteSession::post_flush_locked() {
  if (flush_posted_) return;
  flush_posted_ = true;
  asio::post(io_, [this] { flush(); });
}

void RemoteSession::flush() {
  while (!conn_->closed()) {
    if (conn_->pending_bytes() >= kWriteHighWater) {
      awaiting_drain_ = true;  // resumed by the write handler
      return;
    }
    {
      std::lock_guard<std::mutex> lk(mu_);
      const auto& b = queue_.batch();
      if (b.instrs_size() == 0 && b.frees_size() == 0 && b.requests_size() == 0) {
        flush_posted_ = false;
        return;
      }
      queue_.Swap(&sending_);
      queued_ = 0;
    }
    cv_.notify_all();  // user threads blocked on a full queue
    Status st = conn_->send(sending_);
    if (!st.is_ok()) {
      conn_->close(st);
      return;
    }
    sending_.Clear();
  }
  std::lock_guard<std::mutex> lk(mu_);
  flush_posted_ = false;
}

uint64_t RemoteSession::emit(OpId op, const OpAttrs& attrs, std::span<const uint64_t> inputs) {
  std::unique_lock<std::mutex> lk(mu_);
  if (queued_ >= kMaxQueuedInstrs)
    cv_.wait(lk, [&] { return queued_ < kMaxQueuedInstrs || !lost_.empty(); });
  uint64_t id = is_in_place(op) ? 0 : next_id_++;
  if (!lost_.empty()) return id;  // ops after a lost session are dropped; the next sync raises
  v1::Instr* in = queue_.mutable_batch()->add_instrs();
  encode_instr(op, attrs, in);
  in->set_out(id);
  for (uint64_t i : inputs) in->add_inputs(i);
  ++queued_;
  post_flush_locked();
  return id;
}

void RemoteSession::free(uint64_t id) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!lost_.empty()) return;
  queue_.mutable_batch()->add_frees(id);
  post_flush_locked();
}

void RemoteSession::throw_lost_locked() {
  throw Error("gt: session lost: " + lost_);
}

RemoteSession::Pending RemoteSession::request(v1::Request::Kind kind, uint64_t id) {
  std::unique_lock<std::mutex> lk(mu_);
  if (!lost_.empty()) throw_lost_locked();
  uint64_t rid = next_request_id_++;
  pending_.emplace(rid, Pending{});
  auto* r = queue_.mutable_batch()->add_requests();
  r->set_request_id(rid);
  r->set_kind(kind);
  r->set_id(id);
  post_flush_locked();
  cv_.wait(lk, [&] { return pending_[rid].done || !lost_.empty(); });
  Pending p = std::move(pending_[rid]);
  pending_.erase(rid);
  if (!p.done) throw_lost_locked();
  return p;
}

HostTensor RemoteSession::fetch(uint64_t id) {
  Pending p = request(v1::Request::FETCH, id);
  if (!p.errors.empty()) throw Error("gt: " + format_errors(p.errors));
  if (!p.have_meta) throw Error("gt: fetch returned no data");
  if (static_cast<int64_t>(p.tensor.bytes.size()) != p.tensor.meta.nbytes())
    throw Error("gt: fetch returned a truncated tensor");
  return std::move(p.tensor);
}

void RemoteSession::synchronize() {
  Pending p = request(v1::Request::SYNC, 0);
  if (!p.errors.empty()) throw Error("gt: " + format_errors(p.errors));
}

std::vector<WorkerStatsInfo> RemoteSession::worker_stats() {
  Pending p = request(v1::Request::STATS, 0);
  if (!p.errors.empty()) throw Error("gt: " + format_errors(p.errors));
  return std::move(p.stats);
}

uint64_t RemoteSession::seed() const {
  std::lock_guard<std::mutex> lk(mu_);
  return seed_;
}

uint64_t RemoteSession::next_rng_counter() {
  std::lock_guard<std::mutex> lk(mu_);
  return rng_counter_++;
}

void RemoteSession::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lk(mu_);
  seed_ = seed;
  rng_counter_ = 0;
}

void RemoteSession::on_frame(std::string_view body) {
  v1::ServerMessage m;
  Status st = parse_frame(body, &m);
  if (!st.is_ok()) {
    conn_->close(st);
    return;
  }
  std::unique_lock<std::mutex> lk(mu_);
  switch (m.kind_case()) {
    case v1::ServerMessage::kWelcome:
      welcomed_ = true;
      session_id_ = m.welcome().session_id();
      break;
    case v1::ServerMessage::kRefusal:
      lost_ = "refused by the dispatcher: " + m.refusal().reason();
      break;
    case v1::ServerMessage::kReply: {
      auto it = pending_.find(m.reply().request_id());
      if (it == pending_.end()) return;
      Pending& p = it->second;
      v1::Reply* r = m.mutable_reply();
      for (auto& e : *r->mutable_errors()) p.errors.push_back(std::move(e));
      for (const auto& s : r->stats())
        p.stats.push_back(WorkerStatsInfo{s.worker_id(), s.device(), s.tensors(), s.bytes(),
                                          s.ops_executed(), s.errors(), s.peak_bytes(),
                                          s.reserved_bytes(), s.sessions()});
      if (r->has_tensor()) {
        const auto& t = r->tensor();
        if (!p.have_meta) {
          auto shape = Shape::from({t.shape().data(), static_cast<size_t>(t.shape_size())});
          if (!shape.is_ok() || !is_valid_dtype(t.dtype())) {
            lk.unlock();
            conn_->close(data_loss("malformed fetch reply"));
            return;
          }
          p.tensor.meta = TensorMeta{*shape, static_cast<DType>(t.dtype())};
          if (static_cast<int64_t>(t.total_bytes()) != p.tensor.meta.nbytes()) {
            lk.unlock();
            conn_->close(data_loss("fetch reply size does not match its shape"));
            return;
          }
          p.tensor.bytes.resize(t.total_bytes());
          p.have_meta = true;
        }
        if (t.offset() > p.tensor.bytes.size() ||
            t.data().size() > p.tensor.bytes.size() - t.offset()) {
          lk.unlock();
          conn_->close(data_loss("fetch reply chunk out of bounds"));
          return;
        }
        std::memcpy(p.tensor.bytes.data() + t.offset(), t.data().data(), t.data().size());
      }
      if (r->last()) p.done = true;
      break;
    }
    default: break;
  }
  lk.unlock();
  cv_.notify_all();
}

void RemoteSession::on_close(const Status& why) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (lost_.empty())
      lost_ = why.is_ok() ? "the dispatcher closed the connection" : why.message();
  }
  cv_.notify_all();
}

}  // namespace gt::detail
