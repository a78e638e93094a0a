#include "workerd/worker_link.h"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>

#include "gt/core/ops.h"
#include "libgtcore/socket_io.h"
#include "libgtcore/upload_frame.h"
#include "libgtcore/version.h"

namespace gt::worker {

namespace {
constexpr int kMaxBackoffMs = 30000;
constexpr int kConnectTimeoutMs = 2000;
}  // namespace

namespace {
// Fetch reply chunks: half a frame (room for the header), at most 8 MiB (the dispatcher relays a
// chunk at a time), at least 4 KiB.
uint64_t max_reply_chunk(uint64_t max_frame_bytes) {
  return std::max<uint64_t>(4096, std::min<uint64_t>(max_frame_bytes / 2, 8ull << 20));
}
}  // namespace

WorkerLink::WorkerLink(asio::io_context& io, Backend& backend, WorkerLinkOptions opts,
                       PeerLink* peer)
    : io_(io),
      backend_(backend),
      opts_(std::move(opts)),
      peer_(peer),
      executor_(backend, [this](v1::WorkerMessage&& m) { send_direct(m); },
                max_reply_chunk(opts_.max_frame_bytes), opts_.turn_us),
      reconnect_timer_(io),
      watchdog_(io),
      backoff_ms_(opts_.reconnect_ms) {
  executor_.set_peer_link(peer_);
  executor_.set_device_graphs(opts_.device_graphs);
  executor_.set_early_fetches(opts_.early_fetches);
  executor_.set_device_queue_ops(opts_.device_queue_ops);
  executor_.set_payload_sender(
      [this](std::string_view header, std::string_view payload) { send_direct_parts(header, payload); });
  // A lost device (a sticky error) cannot recover: leave the dispatcher -- which tells the
  // sessions with tensors here that this worker is gone -- and exit non-zero, so that systemd
  // restarts the worker (ARCHITECTURE §6).
  executor_.set_on_device_lost([this](const Status& why) {
    asio::post(io_, [this, why] {
      if (fatal_) return;
      fatal_ = true;
      stopping_ = true;
      reconnect_timer_.cancel();
      if (conn_) conn_->close(why);
      if (on_exit) on_exit();
    });
  });
}

WorkerLink::~WorkerLink() {
  executor_.stop();
  set_out_fd(-1);
}

void WorkerLink::start() {
  executor_.start();
  connect();
}

void WorkerLink::stop() {
  stopping_ = true;
  reconnect_timer_.cancel();
  if (conn_) conn_->close(Status::ok());
  executor_.stop();
}

void WorkerLink::connect() {
  if (stopping_) return;
  auto sock = connect_stream(io_, opts_.dispatcher, kConnectTimeoutMs);
  if (!sock.is_ok()) {
    spdlog::warn("cannot reach the dispatcher at {}: {}", opts_.dispatcher,
                 sock.status().message());
    if (opts_.exit_on_disconnect) {
      if (on_exit) on_exit();
      return;
    }
    schedule_reconnect();
    return;
  }
  conn_ = std::make_shared<FramedConnection>(std::move(*sock), opts_.max_frame_bytes);
  // Over a Unix socket the dispatcher passes clients' shared-memory arenas (kShmArena).
  if (conn_->peer() == "unix") conn_->accept_fds(8);
  ++generation_;
  set_out_fd(::dup(conn_->socket().native_handle()));
  v1::WorkerMessage hello_msg;
  auto* h = hello_msg.mutable_hello();
  h->set_proto_major(kProtoMajor);
  h->set_proto_minor(kProtoMinor);
  h->set_op_table_hash(op_table_hash());
  h->set_role(v1::ROLE_WORKER);
  h->mutable_credentials()->set_worker_secret(opts_.worker_secret);
  auto* w = h->mutable_worker();
  w->set_device_kind(backend_.device_kind());
  w->set_device_name(backend_.device_name());
  w->set_memory_bytes(backend_.memory_bytes());
  if (peer_) w->set_peer_address(peer_->address());
  executor_.fill_load(w->mutable_load());
  // A large upload's payload is read into the instruction's own string as it arrives (the
  // dispatcher writes it payload-last): never copied by a parse (libgtcore/upload_frame.h).
  conn_->set_payload_split(kSplitUploadBytes, scan_worker_upload_frame,
                           [this](std::string_view head, std::string&& payload) {
                             on_payload_frame(head, std::move(payload));
                           });
  conn_->start([this](std::string_view b) { on_frame(b); },
               [this, gen = generation_](const Status& s) {
                 if (gen == generation_) on_close(s);
               });
  send_direct(hello_msg);
}

void WorkerLink::schedule_reconnect() {
  if (stopping_) return;
  reconnect_timer_.expires_after(std::chrono::milliseconds(backoff_ms_));
  backoff_ms_ = std::min(backoff_ms_ * 2, kMaxBackoffMs);
  reconnect_timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) connect();
  });
}

void WorkerLink::watch_dispatcher() {
  // A dispatcher that stops talking (hung, or a half-open connection) is treated as gone after
  // three missed heartbeats: no waiting without a deadline on a peer.
  if (heartbeat_ms_ == 0) return;
  watchdog_.expires_after(std::chrono::milliseconds(3 * heartbeat_ms_ + 1000));
  watchdog_.async_wait([this, gen = generation_](boost::system::error_code ec) {
    if (ec || gen != generation_ || !conn_ || conn_->closed()) return;
    auto silent = std::chrono::steady_clock::now() - last_heard_;
    if (silent > std::chrono::milliseconds(3 * heartbeat_ms_)) {
      conn_->close(deadline_exceeded("the dispatcher has been silent for {} ms",
                                     std::chrono::duration_cast<std::chrono::milliseconds>(silent).count()));
      return;
    }
    watch_dispatcher();
  });
}

void WorkerLink::on_frame(std::string_view body) {
  last_heard_ = std::chrono::steady_clock::now();
  v1::DispatchMessage msg;
  Status st = parse_frame(body, &msg);
  if (!st.is_ok()) {
    spdlog::error("dropping the dispatcher connection: {}", st.message());
    conn_->close(st);
    return;
  }
  on_message(msg);
}

void WorkerLink::on_payload_frame(std::string_view head, std::string&& payload) {
  last_heard_ = std::chrono::steady_clock::now();
  v1::DispatchMessage msg;
  Status st = merge_upload_frame(head, head.size() + payload.size(), std::move(payload), &msg);
  if (!st.is_ok()) {
    spdlog::error("dropping the dispatcher connection: {}", st.message());
    conn_->close(st);
    return;
  }
  on_message(msg);
}

void WorkerLink::on_message(v1::DispatchMessage& msg) {
  // Batches are moved into the object handed to the executor (no second copy).
  auto batch = std::make_unique<v1::WorkerBatch>();
  switch (msg.kind_case()) {
    case v1::DispatchMessage::kHeartbeat: {
      // Answered here on the I/O thread, so a long kernel on the executor does not make this
      // worker look dead.
      v1::WorkerMessage pong;
      pong.mutable_heartbeat()->set_nonce(msg.heartbeat().nonce());
      executor_.fill_load(pong.mutable_heartbeat()->mutable_load());
      send_direct(pong);
      break;
    }
    case v1::DispatchMessage::kWelcome:
      registered_ = true;
      // A batch is a client's frame (at most the dispatcher's max_frame_bytes) re-addressed,
      // which can make it a little larger: never refuse one for that (it would drop this link
      // and every session's tensors on it).
      conn_->decoder().set_max_frame_bytes(
          std::max<uint64_t>(opts_.max_frame_bytes, 2 * msg.welcome().max_frame_bytes()));
      // One link, carrying every upload: its read buffer stays as large as the largest frame
      // read whole (as the dispatcher's side does). Else, between large frames read whole and
      // uploads read split (which leave it idle), it shrank and grew back each time, faulting
      // in fresh pages (up to a million faults per 150 uploads of 64 MiB, bench/upload_cpu.py).
      conn_->decoder().set_retain_bytes(conn_->decoder().max_frame_bytes());
      // And no fetch reply larger than the dispatcher takes: it would refuse the frame and drop
      // this link, and every session's tensors on it.
      executor_.set_max_reply_chunk(std::min<uint64_t>(
          max_reply_chunk(opts_.max_frame_bytes),
          msg.welcome().max_frame_bytes() > 0 ? msg.welcome().max_frame_bytes() / 2 : UINT64_MAX));
      heartbeat_ms_ = msg.welcome().heartbeat_interval_ms();
      watch_dispatcher();
      backoff_ms_ = opts_.reconnect_ms;
      executor_.set_worker_id(msg.welcome().worker_id());
      if (peer_) peer_->set_self(msg.welcome().worker_id());
      spdlog::info("registered with the dispatcher at {} as worker {}", opts_.dispatcher,
                   msg.welcome().worker_id());
      if (on_registered) on_registered(msg.welcome().worker_id());
      break;
    case v1::DispatchMessage::kRefusal:
      spdlog::error("the dispatcher refused this worker: {}", msg.refusal().reason());
      conn_->close(permission_denied("refused: {}", msg.refusal().reason()));
      break;
    case v1::DispatchMessage::kBatch:
      if (!registered_) {
        conn_->close(failed_precondition("batch before welcome"));
        return;
      }
      batch->Swap(msg.mutable_batch());
      if (spdlog::should_log(spdlog::level::debug))
        spdlog::debug("batch {} of session {}: {} instructions, {} frees, {} requests{}",
                      batch->first_seq(), batch->session(), batch->instrs_size(),
                      batch->frees_size(), batch->requests_size(), batch->trace() ? " (traced)" : "");
      if (!executor_.try_execute_inline(*batch)) {
        // last_heard_: when this frame arrived (its timing's "received", when traced).
        const auto received = batch->trace() ? last_heard_ : std::chrono::steady_clock::time_point{};
        executor_.enqueue(std::move(batch), received);
      }
      break;
    case v1::DispatchMessage::kShmArena: {
      // Mapped here, before any later batch (with the fetch that writes into it) is queued. A
      // worker that cannot map it answers that session's fetches over the socket.
      UniqueFd fd = conn_->take_fd();
      const auto& a = msg.shm_arena();
      Status mapped = registered_ ? executor_.attach_shm_arena(a.session(), a.generation(), a.bytes(), std::move(fd))
                                  : failed_precondition("before welcome");
      if (!mapped.is_ok())
        spdlog::warn("session {}: shared-memory arena {} not used: {}", a.session(),
                     a.generation(), mapped.message());
      break;
    }
    case v1::DispatchMessage::kPeers: {
      if (!registered_) {
        conn_->close(failed_precondition("peer table before welcome"));
        return;
      }
      if (!peer_) {
        spdlog::warn("ignoring the dispatcher's peer table: this worker has no peer link");
        break;
      }
      // Applied on the I/O thread before any later batch is queued, so the communication
      // instructions that follow it find their peers.
      std::map<uint32_t, std::string> peers;
      for (const auto& p : msg.peers().peers()) {
        if (p.worker_id() > 0xffff || p.address().empty() || p.address().size() > 256) {
          spdlog::warn("ignoring a malformed peer table entry for worker {}", p.worker_id());
          continue;
        }
        peers[p.worker_id()] = p.address();
      }
      peer_->set_peers(peers);
      spdlog::debug("peer table: {} workers", peers.size());
      break;
    }
    default:
      spdlog::warn("ignoring an unknown message from the dispatcher");
  }
}

void WorkerLink::on_close(const Status& why) {
  bool was_registered = registered_;
  registered_ = false;
  set_out_fd(-1);
  executor_.reset();  // a dispatcher restart starts from nothing: drop every tensor
  if (peer_) peer_->reset();  // and every message and connection between workers
  if (stopping_) return;
  if (why.is_ok())
    spdlog::info("the dispatcher closed the connection");
  else
    spdlog::warn("lost the dispatcher: {}", why.message());
  if (opts_.exit_on_disconnect && (was_registered || !why.is_ok())) {
    if (on_exit) on_exit();
    return;
  }
  schedule_reconnect();
}

void WorkerLink::set_out_fd(int fd) {
  std::lock_guard<std::mutex> lk(out_mu_);
  if (out_fd_ >= 0) ::close(out_fd_);
  out_fd_ = fd;
}

void WorkerLink::send_direct_parts(std::string_view header, std::string_view payload) {
  std::lock_guard<std::mutex> lk(out_mu_);
  if (out_fd_ < 0) return;  // no dispatcher: replies for it are moot
  Status st = send_all_parts(out_fd_, {header, payload});
  if (!st.is_ok()) spdlog::debug("send to the dispatcher failed: {}", st.message());
}

void WorkerLink::send_direct(const v1::WorkerMessage& m) {
  std::lock_guard<std::mutex> lk(out_mu_);
  if (out_fd_ < 0) return;  // no dispatcher: replies for it are moot
  out_buf_.clear();
  Status st = append_frame(&out_buf_, m);
  if (st.is_ok()) st = send_all(out_fd_, out_buf_);
  if (out_buf_.capacity() > (64u << 20)) out_buf_ = std::string();
  // A failed write means the connection is going: the I/O thread sees it and reconnects.
  if (!st.is_ok()) spdlog::debug("send to the dispatcher failed: {}", st.message());
}

}  // namespace gt::worker
