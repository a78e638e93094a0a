#include "libgtclient/session_remote.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "gt/error.h"
#include "libgtcore/asio.h"
#include "libgtcore/framed_connection.h"
#include "libgtcore/instr_codec.h"
#include "libgtcore/payload_frame.h"
#include "libgtcore/upload_frame.h"
#include "libgtcore/reply_payload.h"
#include "libgtcore/secret_file.h"
#include "libgtcore/shm_arena.h"
#include "libgtcore/socket_io.h"
#include "libgtcore/version.h"

namespace gt::detail {

namespace {
constexpr size_t kMaxQueuedInstrs = 65536;  // user threads block beyond this (backpressure)
// Uploads (from_host / host_chunk payloads, upload_chunk_bytes() each) queued for one frame, at
// most (and at most half the dispatcher's max_frame_bytes): a user thread uploading faster than
// the socket drains blocks here, and no frame grows past the dispatcher's limit however many
// uploads come back to back.
constexpr size_t kMaxQueuedPayloadBytes = size_t{16} << 20;
// A compiled scope's instructions are held back at most this many (the dispatcher's default
// hot_path_max_length: a longer stretch is no hot path anyway).
constexpr size_t kMaxHeldInstrs = 4096;
// A stretch held because the dispatcher holds it too (Reply.hot_stretch) waits at most this long
// in the client before it goes (the dispatcher's own hold deadline), and the flusher stops
// polling for it after this many polls with nothing held.
constexpr auto kAutoHoldMax = std::chrono::milliseconds(2);
constexpr int kAutoHoldIdlePolls = 100;
constexpr int kConnectTimeoutMs = 10000;
// A fetch chunk at least this large is read from the socket straight into its destination
// (fetch_into) instead of through the frame decoder and a copy.
constexpr uint64_t kDirectPayloadMinBytes = 64 * 1024;
// An upload at least this large over the socket is written from the caller's memory
// (emit_upload_direct) instead of being copied into the queue: below it the copy costs less
// than the frame of its own it takes.
constexpr size_t kDirectUploadMinBytes = size_t{1} << 20;
// A fetch at least this large comes through the shared-memory arena when the session has one:
// below it the socket's copies cost less than the arena's page-granular regions are worth.
constexpr uint64_t kShmMinBytes = 256 * 1024;
constexpr int kWelcomeTimeoutMs = 60000;    // the dispatcher may wait for a first worker
// A sync point with no answer from the dispatcher for this long raises instead of hanging
// (GT_SYNC_TIMEOUT_S / gt::set_sync_timeout change it). Longer than the dispatcher's default
// progress_timeout_ms (10 min), so a stalled worker is reported by name before this fires.
constexpr int64_t kDefaultSyncTimeoutMs = 900 * 1000;

std::atomic<int64_t> g_sync_timeout_ms{-1};  // gt::set_sync_timeout; -1: not set

int64_t seconds_to_ms(double s) {
  return s > 0 ? std::max<int64_t>(1, static_cast<int64_t>(std::llround(s * 1000))) : 0;
}

int64_t sync_timeout_from_env() {
  const char* env = std::getenv("GT_SYNC_TIMEOUT_S");
  if (!env || !*env) return kDefaultSyncTimeoutMs;
  char* end = nullptr;
  double s = std::strtod(env, &end);
  if (end == env || *end != '\0' || !(s >= 0) || s > 1e9)
    throw Error(Code::kInvalidArgument, fmt::format("gt: GT_SYNC_TIMEOUT_S='{}' is not a number of seconds (0: no deadline)",
                            env));
  return seconds_to_ms(s);
}

std::string program_name() {
  char buf[256];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "client";
  buf[n] = 0;
  const char* slash = std::strrchr(buf, '/');
  return slash ? slash + 1 : buf;
}

bool queue_empty(const v1::ClientMessage& q) {
  const auto& b = q.batch();
  return b.instrs_size() == 0 && b.frees_size() == 0 && b.requests_size() == 0;
}
}  // namespace

std::string format_errors(const std::vector<v1::ErrorInfo>& errors) {
  if (errors.empty()) return "";
  const auto& e = errors.front();
  std::string s = fmt::format("{} failed: {} ({})", e.op(), e.message(), e.origin());
  if (errors.size() > 1)
    s += fmt::format(" [and {} more errors since the last sync]", errors.size() - 1);
  return s;
}

// The first error reported, with its status code from the wire (gt.v1.ErrorInfo.code).
[[noreturn]] void throw_errors(const std::vector<v1::ErrorInfo>& errors) {
  throw Error(error_code_from_wire(errors.front().code()), "gt: " + format_errors(errors))
      .set_deferred();
}

// An error of a sync point itself (the session lost, a malformed reply): deferred too.
[[noreturn]] void throw_sync(Code code, const std::string& what) {
  throw Error(code, what).set_deferred();
}

void set_sync_timeout_ms(int64_t ms) { g_sync_timeout_ms = ms < 0 ? -1 : ms; }

RemoteSession::RemoteSession(const std::string& address, std::unique_ptr<EmbeddedDaemons> daemons)
    : daemons_(std::move(daemons)) {
  try {
    env_sync_timeout_ms_ = sync_timeout_from_env();
    handshake(address);
    last_rx_ = std::chrono::steady_clock::now();
  } catch (...) {
    if (fd_ >= 0) ::close(fd_);
    if (daemons_) daemons_->stop(2000);
    throw;
  }
  flusher_ = std::thread([this] { flusher_loop(); });
}

void RemoteSession::handshake(const std::string& address) {
  asio::io_context io;
  auto sock = connect_stream(io, address, kConnectTimeoutMs);
  if (!sock.is_ok()) throw Error(Code::kUnavailable, "gt: " + sock.status().message());
  boost::system::error_code ec;
  fd_ = sock->release(ec);
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  enlarge_socket_buffers(fd_);
  v1::ClientMessage hello;
  auto* h = hello.mutable_hello();
  h->set_proto_major(kProtoMajor);
  h->set_proto_minor(kProtoMinor);
  h->set_op_table_hash(op_table_hash());
  h->set_role(v1::ROLE_CLIENT);
  h->set_client_name(program_name());
  if (const char* tok = std::getenv("GT_TOKEN")) {
    h->mutable_credentials()->set_token(tok);
  } else if (const char* file = std::getenv("GT_TOKEN_FILE")) {
    auto tok = read_secret_file(file);  // refuses a token file others can read
    if (!tok.is_ok()) throw Error(tok.status().code(), "gt: GT_TOKEN_FILE: " + tok.status().message());
    h->mutable_credentials()->set_token(*tok);
  }
  std::string out;
  (void)append_frame(&out, hello);
  if (Status st = send_all(fd_, out); !st.is_ok())
    throw Error(Code::kUnavailable, "gt: cannot start a session: " + st.message());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kWelcomeTimeoutMs);
  while (true) {
    auto frame = decoder_.next();
    if (!frame.is_ok())
      throw Error(Code::kUnavailable, "gt: cannot start a session: " + frame.status().message());
    if (frame->has_value()) {
      v1::ServerMessage m;
      if (!parse_frame(**frame, &m).is_ok())
        throw Error(Code::kDataLoss, "gt: cannot start a session: malformed answer to Hello");
      if (m.kind_case() == v1::ServerMessage::kWelcome) {
        session_id_ = m.welcome().session_id();
        sockaddr_storage local{};
        socklen_t len = sizeof(local);
        const bool unix_socket = ::getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
                                 local.ss_family == AF_UNIX;
        if (m.welcome().max_frame_bytes() > 0) max_frame_bytes_ = m.welcome().max_frame_bytes();
        hot_segment_ = m.welcome().hot_path_segment();
        const char* direct = std::getenv("GT_DIRECT_UPLOAD");
        direct_uploads_ = !(direct && std::string(direct) == "0");
        const char* env = std::getenv("GT_SHM");
        if (unix_socket && m.welcome().shm_arena_max_bytes() > 0 && !(env && std::string(env) == "0"))
          shm_ = std::make_shared<ShmArenaPool>(m.welcome().shm_arena_max_bytes());
        return;
      }
      if (m.kind_case() == v1::ServerMessage::kRefusal)
        throw Error(error_code_from_wire(m.refusal().code()),
                    "gt: cannot start a session: refused by the dispatcher: " +
                    m.refusal().reason());
      continue;
    }
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
    if (left <= 0)
      throw Error(Code::kDeadlineExceeded, "gt: cannot start a session: no answer from " + address);
    if (Status st = read_some(fd_, &decoder_, left); !st.is_ok())
      throw Error(Code::kUnavailable, "gt: cannot start a session: " + st.message());
  }
}

RemoteSession::~RemoteSession() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  flusher_cv_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  flush_queue();  // what is still queued (frees, last ops) goes out before we close
  ::shutdown(fd_, SHUT_WR);
  // Wait briefly for the dispatcher to close its side, so the embedded daemons see a clean end.
  pollfd p{fd_, POLLIN, 0};
  char buf[4096];
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline && ::poll(&p, 1, 100) >= 0) {
    if (p.revents && ::recv(fd_, buf, sizeof(buf), 0) <= 0) break;
  }
  ::close(fd_);
  if (daemons_) daemons_->stop(5000);
}

void RemoteSession::flusher_loop() {
  std::unique_lock<std::mutex> lk(mu_);
  int idle_polls = 0;
  uint64_t requests_seen = 0;
  while (true) {
    while ((queue_empty(queue_) || holding_locked()) && !stopping_) {
      flusher_sleeping_ = true;
      if (!auto_hold_ || hold_depth_ > 0) {
        flusher_cv_.wait(lk);
        continue;
      }
      // While steps are sent whole (auto_hold_) this thread polls: what is held goes at most
      // kAutoHoldMax after it first sees it, as the dispatcher holds a stretch (a program that
      // stops short of a whole step, without a sync, is not left waiting), and frees queued
      // after a step went go within a poll. A program that stops syncing stops the polls.
      const auto now = std::chrono::steady_clock::now();
      if (!queue_empty(queue_)) {
        idle_polls = 0;
        if (held_since_ == std::chrono::steady_clock::time_point{}) {
          held_since_ = now;
        } else if (now - held_since_ >= kAutoHoldMax) {
          auto_released_ = true;
          continue;
        }
      } else if (next_request_id_ != requests_seen) {
        requests_seen = next_request_id_;
        idle_polls = 0;
      } else if (++idle_polls > kAutoHoldIdlePolls) {
        auto_hold_ = false;
        continue;
      }
      flusher_cv_.wait_for(lk, kAutoHoldMax);
    }
    flusher_sleeping_ = false;
    if (stopping_) return;
    lk.unlock();
    flush_queue();
    lk.lock();
  }
}

bool RemoteSession::flush_queue() {
  std::lock_guard<std::mutex> wl(write_mu_);
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (queue_empty(queue_)) return false;
    take_queue_locked();
  }
  space_cv_.notify_all();
  Status st = send_frames(sending_);
  clear_sent();
  if (!st.is_ok()) mark_lost(st.message());
  return true;
}

void RemoteSession::take_queue_locked() {
  queue_.Swap(&sending_);
  queued_ = 0;
  queued_payload_ = 0;
  hold_overflow_ = false;
  held_since_ = {};
}

void RemoteSession::clear_sent() {
  // The batch stays (cleared) and the next queue, swapped with it, reuses its instruction
  // messages: deleting the batch freed every instruction and the next queue allocated them
  // again (an eighth of a compiled MLP step's client instructions, callgrind). A frame that
  // carried large payloads goes whole: their buffers would stay with the cleared messages.
  constexpr size_t kKeptFrameBytes = size_t{1} << 20;
  if (sending_.kind_case() == v1::ClientMessage::kBatch &&
      static_cast<size_t>(sending_.GetCachedSize()) <= kKeptFrameBytes)
    sending_.mutable_batch()->Clear();
  else
    sending_.Clear();
}

Status RemoteSession::send_frames(v1::ClientMessage& msg) {
  Status st = wparts_.build(msg, max_frame_bytes_);
  if (st.is_ok()) return send_all_parts(fd_, wparts_.parts());
  v1::ClientBatch& b = *msg.mutable_batch();
  const int n = b.instrs_size();
  if (st.code() != Code::kResourceExhausted || n < 2) return st;
  // Over the dispatcher's frame limit (many instructions queued against a small limit): the
  // first half of the instructions goes first, with the frees placed among them, then the rest
  // with the later frees and the requests. Stream order is the same.
  const int k = n / 2;
  const bool placed = b.free_at_size() == b.frees_size();
  v1::ClientMessage first;
  v1::ClientBatch& f = *first.mutable_batch();
  for (int i = 0; i < k; ++i) *f.add_instrs() = std::move(*b.mutable_instrs(i));
  b.mutable_instrs()->DeleteSubrange(0, k);
  v1::ClientBatch rest_frees;
  for (int i = 0; i < b.frees_size(); ++i) {
    if (placed && b.free_at(i) <= static_cast<uint32_t>(k)) {
      f.add_frees(b.frees(i));
      f.add_free_at(b.free_at(i));
    } else {
      rest_frees.add_frees(b.frees(i));
      if (placed) rest_frees.add_free_at(b.free_at(i) - static_cast<uint32_t>(k));
    }
  }
  *b.mutable_frees() = rest_frees.frees();
  *b.mutable_free_at() = rest_frees.free_at();
  GT_RETURN_IF_ERROR(send_frames(first));
  return send_frames(msg);
}

void RemoteSession::mark_lost(const std::string& why) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (lost_.empty()) lost_ = why;
  }
  space_cv_.notify_all();
  reply_cv_.notify_all();
}

size_t RemoteSession::upload_chunk_bytes() const {
  // A quarter of the frame limit, whole 64-byte blocks (every dtype's elements stay whole in a
  // chunk), at least one block: a chunk and a queue of at most half the limit share a frame.
  const uint64_t quarter = (max_frame_bytes_ / 4) & ~uint64_t{63};
  return static_cast<size_t>(std::clamp<uint64_t>(quarter, 64, kHostChunkBytes));
}

size_t RemoteSession::max_queued_payload() const {
  return static_cast<size_t>(std::min<uint64_t>(kMaxQueuedPayloadBytes, max_frame_bytes_ / 2));
}

std::optional<uint64_t> RemoteSession::emit_upload_direct(OpId op, const OpAttrs& attrs,
                                                          std::span<const uint64_t> inputs) {
  std::lock_guard<std::mutex> wl(write_mu_);
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    // A compiled scope keeps it in its queue; a plain loop's held step (auto_hold_) goes now,
    // with the upload from the caller's memory (the copy into the queue would cost more than
    // the frame it saves).
    if (hold_depth_ > 0 && holding_locked()) return std::nullopt;
    id = is_in_place(op) ? 0 : next_id_++;
    if (!lost_.empty()) return id;  // ops after a lost session are dropped; the next sync raises
    count_stretch_instr_locked();  // (whole or not, what is held goes with it)
    take_queue_locked();
  }
  space_cv_.notify_all();
  OpAttrs no_data = attrs;
  no_data.data = {};
  direct_instr_.Clear();
  encode_instr(op, no_data, &direct_instr_);
  direct_instr_.set_out(id);
  for (uint64_t i : inputs) direct_instr_.add_inputs(i);
  // ClientMessage.batch: the queue's batch, whose frees and requests precede this instruction
  // in stream order, then ClientBatch.instrs: this one, its Instr.data last (upload_frame.h:
  // the dispatcher reads the payload into the instruction's own buffer). (The queue's own small
  // payloads are serialized into the header.)
  Status st;
  if (sending_.ByteSizeLong() + direct_instr_.ByteSizeLong() + attrs.data.size() + 64 > max_frame_bytes_) {
    // Together they would pass the dispatcher's frame limit: the queue goes on its own first.
    st = send_frames(sending_);
    sending_.Clear();
  }
  const PayloadLevel levels[] = {{kClientBatchField, sending_.mutable_batch()},
                                 {kBatchInstrsField, &direct_instr_}};
  direct_header_.clear();
  if (st.is_ok())
    st = append_payload_frame_header(&direct_header_, levels, kInstrDataField, attrs.data.size(),
                                     max_frame_bytes_);
  if (st.is_ok()) st = send_all_parts(fd_, {std::string_view(direct_header_), attrs.data});
  sending_.Clear();
  if (!st.is_ok()) mark_lost(st.message());
  return id;
}

uint64_t RemoteSession::emit(OpId op, const OpAttrs& attrs, std::span<const uint64_t> inputs) {
  // A large upload over the socket is written from the caller's memory, in the caller's thread.
  if (!shm_ && direct_uploads_ && attrs.data.size() >= kDirectUploadMinBytes)
    if (std::optional<uint64_t> id = emit_upload_direct(op, attrs, inputs)) return *id;
  // A large upload goes through shared memory: copied into the arena here (before the lock:
  // a new arena is registered under the write lock), only its region in the instruction.
  std::shared_ptr<ShmRegion> upload = shm_upload(attrs.data);
  std::unique_lock<std::mutex> lk(mu_);
  send_whole_segment(lk);
  const size_t payload = upload ? 0 : attrs.data.size();
  auto full = [&] {
    return queued_ >= kMaxQueuedInstrs ||
           (queued_payload_ > 0 && queued_payload_ + payload > max_queued_payload());
  };
  if (full()) {
    // The queue goes out now, held by a compiled scope or not (a held one waited for a flush
    // that never came: the scope then reaches the dispatcher in parts, which runs it eagerly);
    // this thread waits for the space.
    hold_overflow_ = true;
    wake_flusher_locked();
    space_cv_.wait(lk, [&] { return !full() || !lost_.empty(); });
  }
  queued_payload_ += payload;
  uint64_t id = is_in_place(op) ? 0 : next_id_++;
  if (!lost_.empty()) return id;  // ops after a lost session are dropped; the next sync raises
  v1::Instr* in = queue_.mutable_batch()->add_instrs();
  if (upload) {
    OpAttrs no_data = attrs;
    no_data.data = {};
    encode_instr(op, no_data, in);
    auto* shm = in->mutable_shm();
    shm->set_generation(upload->generation());
    shm->set_offset(upload->offset());
    shm->set_bytes(attrs.data.size());
    uploads_held_.push_back(UploadHeld{std::move(upload), attrs.data.size(), next_request_id_});
  } else {
    encode_instr(op, attrs, in);
  }
  in->set_out(id);
  for (uint64_t i : inputs) in->add_inputs(i);
  ++queued_;
  if (hold_depth_ > 0) ++held_ops_;
  if (count_stretch_instr_locked()) {
    // A whole step goes now, from this thread (a hand-off to the flusher would cost a
    // wake-up); what follows is sent as it comes.
    lk.unlock();
    flush_queue();
    return id;
  }
  wake_flusher_locked();
  return id;
}

void RemoteSession::send_whole_segment(std::unique_lock<std::mutex>& lk) {
  if (hold_depth_ == 0 || segment_end_ == 0 || held_ops_ != segment_end_) return;
  // The compiled scope's queue holds a whole segment (the dispatcher cuts its stretch there),
  // and the frees that followed its last instruction: this thread sends it at once, marked as
  // a segment's end, as it does its own requests (a hand-off to the flusher would take a
  // wake-up while the rest of the function is queued). The next ends twice as many later.
  segment_end_ = 2 * segment_end_ + hot_segment_;
  if (!lost_.empty()) return;
  queue_.mutable_batch()->set_segment_end(true);
  lk.unlock();
  flush_queue();
  lk.lock();
}

bool RemoteSession::holding_locked() const {
  return (hold_depth_ > 0 || auto_holding_locked()) && !hold_overflow_ && queued_ < kMaxHeldInstrs;
}

bool RemoteSession::auto_holding_locked() const {
  return auto_hold_ && !auto_released_ && hold_depth_ == 0 && last_stretch_ > 1;
}

bool RemoteSession::count_stretch_instr_locked() {
  ++stretch_instrs_;
  if (!auto_holding_locked() || stretch_instrs_ < last_stretch_) return false;
  auto_released_ = true;  // as long as the last stretch: whole (a loop's step)
  return true;
}

void RemoteSession::wake_flusher_locked() {
  if (!holding_locked()) notify_flusher_locked();
}

void RemoteSession::notify_flusher_locked() {
  if (flusher_sleeping_) {
    flusher_sleeping_ = false;
    flusher_cv_.notify_one();
  }
}

v1::Instr* RemoteSession::append_annotation_locked() {
  v1::Instr* in = queue_.mutable_batch()->add_instrs();
  ++queued_;
  wake_flusher_locked();
  return in;
}

void RemoteSession::signal_enter(const std::string& name, const std::string& backward,
                                 bool backward_pass) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!lost_.empty()) return;
  const bool holds = compile_signals_.count(name) != 0;
  scope_holds_.push_back(holds);
  if (holds && hold_depth_++ == 0) {  // (the dispatcher's stretch begins at this boundary)
    held_ops_ = 0;
    segment_end_ = hot_segment_;
  }
  auto* ev = append_annotation_locked()->mutable_signal();
  ev->set_kind(v1::SignalEvent::ENTER);
  ev->set_name(name);
  ev->set_backward(backward);
  ev->set_backward_pass(backward_pass);
}

void RemoteSession::signal_exit(const std::string& name) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!lost_.empty()) return;
  if (!scope_holds_.empty()) {
    // A compiled scope goes when it ends (its function's result may be waited for at once).
    if (scope_holds_.back() && --hold_depth_ == 0) auto_released_ = true;
    scope_holds_.pop_back();
  }
  auto* ev = append_annotation_locked()->mutable_signal();  // (wakes the flusher once released)
  ev->set_kind(v1::SignalEvent::EXIT);
  ev->set_name(name);
}

void RemoteSession::register_config(const ConfigEntry& c) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!lost_.empty()) return;
  auto* e = append_annotation_locked()->mutable_config();
  e->set_name(c.name);
  e->set_has_shard(c.has_shard);
  e->set_axis(c.axis);
  for (uint32_t w : c.workers) e->add_workers(w);
  e->set_replicated(c.replicated);
  e->set_backward(c.backward);
  if (c.compile) e->set_compile(*c.compile);
  if (c.compile.value_or(false)) compile_signals_.insert(c.name);
  else compile_signals_.erase(c.name);
}

void RemoteSession::free(uint64_t id) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!lost_.empty() || stopping_) return;
  // In stream order, so the worker releases a loop's temporaries as the loop makes them.
  auto* b = queue_.mutable_batch();
  b->add_frees(id);
  b->add_free_at(static_cast<uint32_t>(b->instrs_size()));
  // Memory on the worker comes back even if no op follows: at once, or, while steps are sent
  // whole (auto_hold_), with the next frame (the step's fetch) or the flusher's next poll.
  if (!auto_hold_) wake_flusher_locked();
}

RemoteSession::Pending RemoteSession::request(v1::Request::Kind kind, uint64_t id) {
  return request(kind, id, Pending{});
}

RemoteSession::Pending RemoteSession::request(v1::Request::Kind kind, uint64_t id, Pending init) {
  uint64_t rid;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!lost_.empty()) throw_sync(lost_code_, "gt: session lost: " + lost_);
    rid = next_request_id_++;
    // The stretch the dispatcher cuts here ends: the next is held (auto_hold_) until it has as
    // many instructions as this one.
    last_stretch_ = stretch_instrs_;
    stretch_instrs_ = 0;
    auto_released_ = false;
    pending_.emplace(rid, std::move(init));
    auto* r = queue_.mutable_batch()->add_requests();
    r->set_request_id(rid);
    r->set_kind(kind);
    r->set_id(id);
    if (const auto& region = pending_[rid].region) {
      auto* shm = r->mutable_shm();
      shm->set_generation(region->generation());
      shm->set_offset(region->offset());
      shm->set_bytes(region->bytes());
    }
  }
  flush_queue();  // this thread writes its own request: no hand-off to the flusher
  const int64_t limit_ms = sync_timeout_ms();
  const auto started = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lk(mu_);
  while (!pending_[rid].done && lost_.empty()) {
    if (reader_active_) {
      reply_cv_.wait(lk);
      continue;
    }
    // Take the reader role: read until our reply is complete, handing others theirs.
    reader_active_ = true;
    while (!pending_[rid].done && lost_.empty()) {
      auto frame = decoder_.next();
      if (!frame.is_ok()) {
        lost_ = frame.status().message();
        break;
      }
      if (frame->has_value()) {
        on_frame_locked(**frame);
        continue;
      }
      int wait_ms = -1;
      if (limit_ms > 0) {
        // Not a byte from the dispatcher for limit_ms while this request waits: it is hung or
        // unreachable. The session is lost (no waiting forever); closing the connection lets a
        // dispatcher that is merely slow free the session's tensors.
        auto now = std::chrono::steady_clock::now();
        int64_t quiet = std::chrono::duration_cast<std::chrono::milliseconds>(
                            now - std::max(started, last_rx_))
                            .count();
        if (quiet >= limit_ms) {
          lost_code_ = Code::kDeadlineExceeded;
          lost_ = fmt::format(
              "no answer from the dispatcher for {:g} s (the sync deadline: GT_SYNC_TIMEOUT_S or "
              "gt::set_sync_timeout, 0 = none); it is hung or unreachable",
              static_cast<double>(limit_ms) / 1000.0);
          ::shutdown(fd_, SHUT_RDWR);
          break;
        }
        wait_ms = static_cast<int>(std::min<int64_t>(limit_ms - quiet, 1 << 30));
      }
      if (receive_payload_direct(lk, wait_ms)) continue;
      lk.unlock();
      Status st = read_some(fd_, &decoder_, wait_ms);
      lk.lock();
      if (st.is_ok())
        last_rx_ = std::chrono::steady_clock::now();
      else if (st.code() != Code::kDeadlineExceeded && lost_.empty())
        lost_ = st.message();
    }
    reader_active_ = false;
    reply_cv_.notify_all();
  }
  Pending p = std::move(pending_[rid]);
  pending_.erase(rid);
  // Everything queued before an answered SYNC has run or failed: its upload regions are free
  // whether or not a worker read them (a refused or failed upload never sets its word).
  if (kind == v1::Request::SYNC && p.done) release_uploads_locked(rid + 1);
  if (!p.done) throw_sync(lost_code_, "gt: session lost: " + lost_);
  return p;
}

int64_t RemoteSession::sync_timeout_ms() const {
  int64_t set = g_sync_timeout_ms.load();
  return set >= 0 ? set : env_sync_timeout_ms_;
}

HostTensor RemoteSession::fetch(uint64_t id) {
  Pending p = request(v1::Request::FETCH, id);
  if (!p.errors.empty()) throw_errors(p.errors);
  if (!p.have_meta) throw_sync(Code::kDataLoss, "gt: fetch returned no data");
  if (static_cast<int64_t>(p.tensor.bytes.size()) != p.tensor.meta.nbytes())
    throw_sync(Code::kDataLoss, "gt: fetch returned a truncated tensor");
  return std::move(p.tensor);
}

void RemoteSession::fetch_into(uint64_t id, const TensorMeta& meta, void* dst) {
  Pending init;
  init.into = true;
  init.dst = static_cast<char*>(dst);
  init.expect = meta;
  init.region = shm_region(static_cast<uint64_t>(meta.nbytes()));
  Pending p = request(v1::Request::FETCH, id, std::move(init));
  if (!p.errors.empty()) throw_errors(p.errors);
  if (!p.have_meta) throw_sync(Code::kDataLoss, "gt: fetch returned no data");
  if (static_cast<int64_t>(p.received) != meta.nbytes())
    throw_sync(Code::kDataLoss, "gt: fetch returned a truncated tensor");
}

std::shared_ptr<ShmRegion> RemoteSession::shm_region(uint64_t bytes) {
  if (!shm_ || bytes < kShmMinBytes) return nullptr;
  ShmArenaPool::NewArena made;
  std::shared_ptr<ShmRegion> region = shm_->allocate(bytes, &made);
  if (!region || !made.fd.valid()) return region;
  // Registered before any request names it: the frame and its descriptor go out under the
  // write lock, ahead of the request this thread queues next.
  v1::ClientMessage m;
  auto* a = m.mutable_shm_arena();
  a->set_generation(made.generation);
  a->set_bytes(made.bytes);
  std::string frame;
  Status st = append_frame(&frame, m);
  if (st.is_ok()) {
    std::lock_guard<std::mutex> wl(write_mu_);
    st = send_all_with_fd(fd_, frame, made.fd.get());
  }
  if (!st.is_ok()) {
    mark_lost(st.message());
    return nullptr;
  }
  return region;
}

std::shared_ptr<ShmRegion> RemoteSession::shm_upload(std::string_view payload) {
  if (!shm_ || payload.size() < kShmMinBytes) return nullptr;
  {
    std::lock_guard<std::mutex> lk(mu_);
    release_uploads_locked();  // what the workers have read makes room first
  }
  std::shared_ptr<ShmRegion> region = shm_region(shm_upload_region_bytes(payload.size()));
  if (!region) return nullptr;
  std::memcpy(region->data(), payload.data(), payload.size());
  shm_clear_released(region->data(), payload.size());
  return region;
}

void RemoteSession::release_uploads_locked(uint64_t synced_before) {
  std::erase_if(uploads_held_, [&](const UploadHeld& u) {
    return u.before_request < synced_before || shm_released(u.region->data(), u.payload_bytes);
  });
}

std::shared_ptr<const char> RemoteSession::fetch_shared(uint64_t id, const TensorMeta& meta) {
  std::shared_ptr<ShmRegion> region = shm_region(static_cast<uint64_t>(meta.nbytes()));
  if (!region) return Session::fetch_shared(id, meta);
  Pending init;
  init.into = true;
  init.dst = region->data();  // where the worker writes it: nothing to copy here
  init.expect = meta;
  init.region = region;
  Pending p = request(v1::Request::FETCH, id, std::move(init));
  if (!p.errors.empty()) throw_errors(p.errors);
  if (!p.have_meta) throw_sync(Code::kDataLoss, "gt: fetch returned no data");
  if (static_cast<int64_t>(p.received) != meta.nbytes())
    throw_sync(Code::kDataLoss, "gt: fetch returned a truncated tensor");
  const char* data = region->data();
  return std::shared_ptr<const char>(std::move(region), data);
}

void RemoteSession::synchronize() {
  Pending p = request(v1::Request::SYNC, 0);
  if (!p.errors.empty()) throw_errors(p.errors);
}

std::vector<WorkerStatsInfo> RemoteSession::worker_stats() {
  Pending p = request(v1::Request::STATS, 0);
  if (!p.errors.empty()) throw_errors(p.errors);
  return std::move(p.stats);
}

std::string RemoteSession::status_report() {
  Pending p = request(v1::Request::STATUS, 0);
  if (!p.errors.empty()) throw_errors(p.errors);
  return std::move(p.status);
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

void RemoteSession::on_frame_locked(std::string_view body) {
  // Small frames reuse one message (no allocation per reply); a large one gets its own, so its
  // bytes are not kept after it.
  v1::ServerMessage large;
  v1::ServerMessage& m = body.size() > kDirectPayloadMinBytes ? large : rx_msg_;
  m.Clear();
  if (!parse_frame(body, &m).is_ok()) {
    lost_ = "malformed frame from the dispatcher";
    return;
  }
  if (m.kind_case() == v1::ServerMessage::kRefusal) {
    lost_ = "the dispatcher ended the session: " + m.refusal().reason();
    lost_code_ = error_code_from_wire(m.refusal().code());
    return;
  }
  if (m.kind_case() != v1::ServerMessage::kReply) return;
  auto it = pending_.find(m.reply().request_id());
  if (it == pending_.end()) return;
  Pending& p = it->second;
  v1::Reply* r = m.mutable_reply();
  for (auto& e : *r->mutable_errors()) p.errors.push_back(std::move(e));
  for (const auto& s : r->stats())
    p.stats.push_back(WorkerStatsInfo{s.worker_id(), s.device(), s.tensors(), s.bytes(),
                                      s.ops_executed(), s.errors(), s.peak_bytes(),
                                      s.reserved_bytes(), s.sessions(), s.peer_bytes_sent(),
                                      s.peer_bytes_received()});
  if (r->has_status()) p.status = r->status().SerializeAsString();
  if (r->has_tensor() && r->tensor().shm_bytes() > 0) {
    // Written into the fetch's shared-memory region: checked like a socket chunk (and against
    // the region), then used in place or copied out.
    const auto& t = r->tensor();
    if (!p.into || !p.region || !t.data().empty()) {
      lost_ = "malformed fetch reply (shared memory)";
      return;
    }
    if (!accept_chunk_locked(p, t, t.shm_bytes())) return;
    const char* src = p.region->data() + t.offset();
    if (p.dst + t.offset() != src) std::memcpy(p.dst + t.offset(), src, t.shm_bytes());
    p.received += t.shm_bytes();
  } else if (r->has_tensor() && p.into) {
    const auto& t = r->tensor();
    if (!accept_chunk_locked(p, t, t.data().size())) return;
    if (!t.data().empty()) std::memcpy(p.dst + t.offset(), t.data().data(), t.data().size());
    p.received += t.data().size();
  } else if (r->has_tensor()) {
    auto& t = *r->mutable_tensor();
    bool moved = false;
    if (!p.have_meta) {
      auto shape = Shape::from({t.shape().data(), static_cast<size_t>(t.shape_size())});
      if (!shape.is_ok() || !is_valid_dtype(t.dtype())) {
        lost_ = "malformed fetch reply";
        return;
      }
      p.tensor.meta = TensorMeta{*shape, static_cast<DType>(t.dtype())};
      if (static_cast<int64_t>(t.total_bytes()) != p.tensor.meta.nbytes()) {
        lost_ = "fetch reply size does not match its shape";
        return;
      }
      p.have_meta = true;
      if (t.offset() == 0 && t.data().size() == t.total_bytes()) {
        p.tensor.bytes = std::move(*t.mutable_data());  // the whole tensor in one chunk: no copy
        moved = true;
      } else {
        p.tensor.bytes.resize(t.total_bytes());
      }
    }
    if (!moved) {
      if (t.offset() > p.tensor.bytes.size() ||
          t.data().size() > p.tensor.bytes.size() - t.offset()) {
        lost_ = "fetch reply chunk out of bounds";
        return;
      }
      std::memcpy(p.tensor.bytes.data() + t.offset(), t.data().data(), t.data().size());
    }
  }
  if (r->last()) {
    note_hot_stretch_locked(r->hot_stretch());
    p.done = true;
    reply_cv_.notify_all();
  }
}

bool RemoteSession::accept_chunk_locked(Pending& p, const v1::TensorData& t,
                                        uint64_t payload_bytes) {
  // The dispatcher checked the chunk against what the worker said; here it is checked against
  // what this client asked for, before a byte lands in the caller's memory.
  auto shape = Shape::from({t.shape().data(), static_cast<size_t>(t.shape_size())});
  if (!shape.is_ok() || !is_valid_dtype(t.dtype())) {
    lost_ = "malformed fetch reply";
    return false;
  }
  // Its dtype and size must be those asked for (the bytes land in a buffer of that size); the
  // shape is the dispatcher's business (the same bytes may be labelled [4, 4] or [16]).
  const TensorMeta got{*shape, static_cast<DType>(t.dtype())};
  if (got.dtype != p.expect.dtype || got.nbytes() != p.expect.nbytes()) {
    lost_ = fmt::format("fetch reply is a {} {} tensor where a {} {} was asked for",
                        dtype_name(got.dtype), got.shape.str(), dtype_name(p.expect.dtype),
                        p.expect.shape.str());
    return false;
  }
  const auto total = static_cast<uint64_t>(p.expect.nbytes());
  if (t.total_bytes() != total || t.offset() != p.received || payload_bytes > total - p.received) {
    lost_ = "fetch reply chunk out of bounds";
    return false;
  }
  p.have_meta = true;
  return true;
}

bool RemoteSession::receive_payload_direct(std::unique_lock<std::mutex>& lk, int wait_ms) {
  const std::string_view buf = decoder_.peek();
  if (buf.size() < kFrameHeaderBytes) return false;
  const auto* b = reinterpret_cast<const uint8_t*>(buf.data());
  const uint64_t len = static_cast<uint64_t>(b[0]) | (static_cast<uint64_t>(b[1]) << 8) |
                       (static_cast<uint64_t>(b[2]) << 16) | (static_cast<uint64_t>(b[3]) << 24);
  const std::string_view body = buf.substr(kFrameHeaderBytes);
  // Small frames, whole frames and oversized ones take the ordinary path (next() reports the
  // last); only a large frame still arriving is worth reading around the decoder.
  if (len < kDirectPayloadMinBytes || len > decoder_.max_frame_bytes() || body.size() >= len)
    return false;
  auto scan = scan_reply_payload(body, static_cast<size_t>(len), kServerReplyField);
  if (!scan.is_ok() || scan->state != ReplyScan::kFound) return false;
  const ReplyPayloadLayout& l = scan->layout;
  if (!parse_reply_header(body, l, &rx_head_, &rx_meta_).is_ok()) return false;
  auto it = pending_.find(rx_head_.request_id());
  if (it == pending_.end() || !it->second.into || rx_head_.errors_size() > 0) return false;
  Pending& p = it->second;
  if (!accept_chunk_locked(p, rx_meta_, l.payload_bytes)) return true;  // lost_ says why
  char* dst = p.dst + rx_meta_.offset();
  const size_t have = body.size() - l.payload_begin;  // payload bytes read with the header
  if (have > 0) std::memcpy(dst, body.data() + l.payload_begin, have);
  decoder_.discard_buffered();  // all of it was this frame's; the rest is read below
  const bool last = rx_head_.last();
  const bool hot_stretch = rx_head_.hot_stretch();
  lk.unlock();
  Status st = read_exact(fd_, dst + have, l.payload_bytes - have, wait_ms);
  lk.lock();
  if (!st.is_ok()) {
    // Part of a frame is gone: the stream cannot be resynchronized.
    if (lost_.empty()) {
      if (st.code() == Code::kDeadlineExceeded) lost_code_ = Code::kDeadlineExceeded;
      lost_ = "fetch reply interrupted: " + st.message();
    }
    ::shutdown(fd_, SHUT_RDWR);
    return true;
  }
  last_rx_ = std::chrono::steady_clock::now();
  p.received += l.payload_bytes;
  if (last) {
    note_hot_stretch_locked(hot_stretch);
    p.done = true;
    reply_cv_.notify_all();
  }
  return true;
}

void RemoteSession::note_hot_stretch_locked(bool hot) {
  // The dispatcher held the stretch this request ended until its end (a hot path's replay): the
  // next one, the same again in a loop, goes whole too, from this side (one frame instead of
  // one per flush while it is built). Not where segments are sent as they fill.
  const bool was = auto_hold_;
  auto_hold_ = hot && hot_segment_ == 0;
  if (auto_hold_ && !was) notify_flusher_locked();  // it bounds the hold: it polls meanwhile
}

}  // namespace gt::detail

namespace gt {
// Public spelling (gt/tensor.h).
void set_sync_timeout(double seconds) {
  if (std::isnan(seconds) || seconds > 1e9)
    throw Error(Code::kInvalidArgument, fmt::format("gt::set_sync_timeout: {} is not a number of seconds", seconds));
  detail::set_sync_timeout_ms(seconds < 0 ? -1 : detail::seconds_to_ms(seconds));
}
}  // namespace gt
