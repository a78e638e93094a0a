#include "libgtcore/framed_connection.h"

#include "libgtcore/shm_arena.h"
#include "libgtcore/socket_io.h"
#include "libgtcore/uninit_string.h"

#include <spdlog/spdlog.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

namespace gt {

namespace {
// Small reads in a row after which the read size halves (hysteresis: a busy stream whose reads
// vary in size keeps its buffer instead of reallocating back and forth).
constexpr uint8_t kSmallReadsBeforeShrink = 16;

std::string describe_peer(StreamSocket& s) {
  boost::system::error_code ec;
  auto ep = s.remote_endpoint(ec);
  if (ec) return "?";
  if (ep.protocol().family() == AF_UNIX) return "unix";
  if (ep.protocol().family() == AF_INET || ep.protocol().family() == AF_INET6) {
    // Re-interpret the generic endpoint as TCP to print host:port.
    asio::ip::tcp::endpoint tcp;
    if (ep.size() <= tcp.capacity()) {
      std::memcpy(tcp.data(), ep.data(), ep.size());
      tcp.resize(ep.size());
      return tcp.address().to_string() + ":" + std::to_string(tcp.port());
    }
  }
  return "?";
}
}  // namespace

FramedConnection::FramedConnection(StreamSocket socket, uint64_t max_frame_bytes)
    : socket_(std::move(socket)), decoder_(max_frame_bytes) {
  decoder_.set_retain_bytes(0);  // memory follows the traffic (owners of few, busy links raise it)
  peer_ = describe_peer(socket_);
  if (socket_.is_open()) enlarge_socket_buffers(socket_.native_handle());
}

FramedConnection::~FramedConnection() = default;

void FramedConnection::start(FrameFn on_frame, CloseFn on_close) {
  on_frame_ = std::move(on_frame);
  on_close_ = std::move(on_close);
  do_read();
}

void FramedConnection::set_payload_split(size_t min_body_bytes, PayloadSplitFn split,
                                         PayloadFrameFn on_payload_frame) {
  split_min_bytes_ = min_body_bytes;
  split_ = std::move(split);
  on_payload_frame_ = std::move(on_payload_frame);
}

void FramedConnection::pause_reading() {
  paused_ = true;
  if (!watching_hangup_ && !closed_) watch_hangup();
}

void FramedConnection::watch_hangup() {
  // Nothing reads the socket while paused, so a dead peer would go unnoticed (and its session
  // would keep the workers busy for nobody). Armed only while paused: no cost on the hot path.
  if (!hangup_timer_) hangup_timer_ = std::make_unique<asio::steady_timer>(socket_.get_executor());
  watching_hangup_ = true;
  hangup_timer_->expires_after(std::chrono::milliseconds(kHangupPollMs));
  hangup_timer_->async_wait([self = shared_from_this()](boost::system::error_code ec) {
    self->watching_hangup_ = false;
    if (ec || self->closed_ || !self->paused_ || self->close_after_flush_ || self->abort_pending_)
      return;
    // POLLRDHUP: the peer closed (or shut down) its side; Linux reports it even while unread
    // data is still buffered here. POLLHUP / POLLERR: reset.
    pollfd p{self->socket_.native_handle(), POLLRDHUP, 0};
    if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
      self->close(unavailable("the peer hung up while its reads were paused by flow control"));
      return;
    }
    self->watch_hangup();
  });
}

void FramedConnection::adapt_read_size(size_t n) {
  if (n >= read_size_) {
    // The read filled what was asked for: more is probably waiting.
    small_reads_ = 0;
    if (read_size_ < kMaxReadBytes) read_size_ *= 2;
  } else if (n <= read_size_ / 8 && read_size_ > kMinReadBytes) {
    if (++small_reads_ >= kSmallReadsBeforeShrink) {
      small_reads_ = 0;
      read_size_ /= 2;
      decoder_.release_unused(read_size_);
    }
  } else {
    small_reads_ = 0;
  }
}

void FramedConnection::set_backlog_counter(std::shared_ptr<uint64_t> counter) {
  if (backlog_) *backlog_ -= std::min(*backlog_, static_cast<uint64_t>(pending_bytes()));
  backlog_ = std::move(counter);
  if (backlog_ && !closed_) *backlog_ += pending_bytes();
}

void FramedConnection::resume_reading() {
  if (!paused_ || closed_) return;
  paused_ = false;
  // Frames already buffered come first, then the socket.
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->drain_frames();
    if (!self->closed_ && !self->paused_ && !self->reading_active_) self->do_read();
  });
}

void FramedConnection::drain_frames() {
  if (in_drain_) return;  // a handler resumed us from inside on_frame
  in_drain_ = true;
  while (!closed_ && !paused_) {
    if (splitting_) {  // (nothing else is buffered until its payload is complete)
      if (split_filled_ < split_payload_.size()) break;
      split_read_done();
      continue;
    }
    auto next = decoder_.next();
    if (!next.is_ok()) {
      in_drain_ = false;
      bad_frame(next.status());
      return;
    }
    if (!next->has_value()) {
      if (split_ && !split_declined_) {
        Status st = split_payload();
        if (!st.is_ok()) {
          in_drain_ = false;
          bad_frame(st);
          return;
        }
      }
      break;
    }
    split_declined_ = false;  // the next frame is looked at afresh
    on_frame_(**next);
  }
  in_drain_ = false;
}

void FramedConnection::bad_frame(const Status& why) {
  paused_ = true;
  if (on_bad_frame_) {
    auto fn = on_bad_frame_;
    fn(why);
  } else {
    close(why);
  }
}

Status FramedConnection::split_payload() {
  const std::string_view buf = decoder_.peek();
  if (buf.size() < kFrameHeaderBytes) return Status::ok();
  const auto* b = reinterpret_cast<const uint8_t*>(buf.data());
  const size_t len = static_cast<size_t>(b[0]) | (static_cast<size_t>(b[1]) << 8) |
                     (static_cast<size_t>(b[2]) << 16) | (static_cast<size_t>(b[3]) << 24);
  // (next() checked the length against the limit and found the frame incomplete.)
  const std::string_view prefix = buf.substr(kFrameHeaderBytes);
  if (len < split_min_bytes_ || prefix.size() >= len) {
    split_declined_ = true;
    return Status::ok();
  }
  auto scan = split_(prefix, len);
  if (!scan.is_ok()) return scan.status();
  // A long header (several uploads batched, the payload only the last) is read whole: it
  // would be copied here and parsed anyway, and the decoder would grow to hold it.
  const bool long_header = scan->state == PayloadScan::kFound
                               ? scan->layout.payload_begin > kMaxSplitHeaderBytes
                               : prefix.size() > kMaxSplitHeaderBytes;
  if (scan->state == PayloadScan::kNoPayload || long_header) {
    split_declined_ = true;
    return Status::ok();
  }
  if (scan->state == PayloadScan::kNeedMore) return Status::ok();  // looked at again next read
  // kFound: the header is all here (the scan read the payload's length), the payload is not.
  const PayloadFrameLayout& l = scan->layout;
  split_head_.assign(prefix.data(), l.payload_begin);
  split_payload_ = std::string();
  resize_uninitialized(split_payload_, l.payload_bytes);
  split_filled_ = prefix.size() - l.payload_begin;
  std::memcpy(split_payload_.data(), prefix.data() + l.payload_begin, split_filled_);
  decoder_.discard_buffered();  // all of it was this frame's
  splitting_ = true;
  return Status::ok();
}

void FramedConnection::split_read_done() {
  splitting_ = false;
  split_declined_ = false;
  std::string payload = std::move(split_payload_);
  split_payload_ = std::string();
  on_payload_frame_(split_head_, std::move(payload));
}

std::pair<char*, size_t> FramedConnection::read_target() {
  if (splitting_)  // the payload's rest, straight into its own string
    return {split_payload_.data() + split_filled_, split_payload_.size() - split_filled_};
  char* p = decoder_.prepare(read_size_);
  return {p, decoder_.prepared_size()};
}

void FramedConnection::do_read() {
  if (closed_ || paused_ || reading_active_) return;
  reading_active_ = true;
  if (max_fds_in_ > 0) {
    socket_.async_wait(StreamSocket::wait_read,
                       [self = shared_from_this()](boost::system::error_code ec) {
                         self->reading_active_ = false;
                         if (self->closed_) return;
                         if (ec) return self->on_read(ec, 0);
                         self->read_with_fds();
                       });
    return;
  }
  auto [p, room] = read_target();
  socket_.async_read_some(asio::buffer(p, room), [self = shared_from_this()](
                                                     boost::system::error_code ec, size_t n) {
    self->reading_active_ = false;
    if (self->closed_) return;
    self->on_read(ec, n);
  });
}

void FramedConnection::read_with_fds() {
  auto [p, room] = read_target();
  bool truncated = false;
  std::vector<UniqueFd> got;
  const ssize_t n = recv_with_fds(socket_.native_handle(), p, room, &got, &truncated);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return do_read();
    return on_read(boost::system::error_code(errno, boost::system::system_category()), 0);
  }
  for (auto& fd : got) fds_in_.push_back(std::move(fd));
  if (truncated || fds_in_.size() > max_fds_in_) {
    close(invalid_argument("the peer passed more file descriptors than expected (at most {} "
                           "may wait)", max_fds_in_));
    return;
  }
  if (n == 0) return on_read(asio::error::eof, 0);
  on_read({}, static_cast<size_t>(n));
}

void FramedConnection::on_read(boost::system::error_code ec, size_t n) {
  if (ec) {
    if (ec == asio::error::eof || ec == asio::error::connection_reset ||
        ec == asio::error::operation_aborted) {
      if (mid_frame())
        close(data_loss("connection closed in the middle of a frame ({} bytes)",
                        splitting_ ? split_head_.size() + split_filled_ : decoder_.buffered()));
      else
        close(Status::ok());
    } else {
      close(unavailable("read failed: {}", ec.message()));
    }
    return;
  }
  bytes_in_ += n;
  if (splitting_) {
    split_filled_ += n;  // drain_frames hands it out once complete (and not paused)
  } else {
    decoder_.commit(n);
    adapt_read_size(n);
  }
  drain_frames();
  do_read();
}

UniqueFd FramedConnection::take_fd() {
  if (fds_in_.empty()) return UniqueFd();
  UniqueFd fd = std::move(fds_in_.front());
  fds_in_.pop_front();
  return fd;
}

Status FramedConnection::send_with_fd(const google::protobuf::MessageLite& msg, UniqueFd fd) {
  if (closed_ || abort_pending_) return unavailable("connection closed");
  if (!fd.valid()) return invalid_argument("send_with_fd: no descriptor");
  GT_RETURN_IF_ERROR(send(msg));
  fds_out_.push_back(FdOut{std::move(fd), out_.size()});
  return Status::ok();
}

Status FramedConnection::send(const google::protobuf::MessageLite& msg) {
  if (closed_ || abort_pending_) return unavailable("connection closed");
  const size_t before = out_.size();
  GT_RETURN_IF_ERROR(append_frame(&out_, msg, 0xffffffffull));
  if (backlog_) *backlog_ += out_.size() - before;
  schedule_write();
  return Status::ok();
}

Status FramedConnection::send_parts(std::string_view header, std::string_view payload) {
  if (closed_ || abort_pending_) return unavailable("connection closed");
  if (header.size() < kFrameHeaderBytes) return invalid_argument("send_parts: no frame header");
  if (payload.size() >= kWriteNowBytes && out_.empty() && sealed_.empty() && !writing_active_) {
    // Nothing is queued before it: the socket takes what it can now, straight from the caller's
    // buffer (a relayed fetch chunk is then never copied here); only the rest is queued.
    iovec iov[2] = {{const_cast<char*>(header.data()), header.size()},
                    {const_cast<char*>(payload.data()), payload.size()}};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = 2;
    const ssize_t n = ::sendmsg(socket_.native_handle(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {  // errors and EAGAIN: all of it is queued; the write reports a broken socket
      auto done = static_cast<size_t>(n);
      bytes_out_ += done;
      const size_t from_header = std::min(done, header.size());
      header.remove_prefix(from_header);
      payload.remove_prefix(done - from_header);
      if (payload.empty()) return Status::ok();
    }
  }
  if (backlog_) *backlog_ += header.size() + payload.size();
  out_.append(header);
  if (payload.size() >= kSealBytes && fds_out_.empty()) {
    // Its own buffer (chunk-sized: the allocator reuses it), after the frames queued before it.
    sealed_bytes_ += out_.size() + payload.size();
    sealed_.push_back(Sealed{std::move(out_), {}, nullptr});
    sealed_.push_back(Sealed{std::string(payload), {}, nullptr});
    out_ = std::string();
  } else {
    out_.append(payload);
  }
  schedule_write();
  return Status::ok();
}

Status FramedConnection::send_owned(std::shared_ptr<const google::protobuf::MessageLite> msg) {
  if (closed_ || abort_pending_) return unavailable("connection closed");
  if (!msg) return invalid_argument("send_owned: no message");
  // Descriptors index frames in out_: sealing would move them (send() copies instead).
  if (!fds_out_.empty() || msg->ByteSizeLong() < kSealBytes) return send(*msg);
  GT_RETURN_IF_ERROR(out_parts_.build(*msg, 0xffffffffull));
  const std::vector<std::string_view>& parts = out_parts_.parts();
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string_view part = parts[i];
    if (!out_parts_.aliased(i)) {
      out_.append(part);
      continue;
    }
    // A payload in the message: the frames before it are sealed, then it, kept with its message.
    sealed_bytes_ += out_.size() + part.size();
    if (!out_.empty()) sealed_.push_back(Sealed{std::move(out_), {}, nullptr});
    out_ = std::string();
    sealed_.push_back(Sealed{{}, part, msg});
  }
  if (backlog_) *backlog_ += out_parts_.bytes();
  schedule_write();
  return Status::ok();
}

Status FramedConnection::send_kept_parts(std::string_view header, std::string_view payload,
                                         std::shared_ptr<const void> keep) {
  if (closed_ || abort_pending_) return unavailable("connection closed");
  if (header.size() < kFrameHeaderBytes) return invalid_argument("send_kept_parts: no frame header");
  // Descriptors index frames in out_: sealing would move them (send_parts copies instead).
  if (!fds_out_.empty() || payload.size() < kSealBytes) return send_parts(header, payload);
  out_.append(header);
  sealed_bytes_ += out_.size() + payload.size();
  sealed_.push_back(Sealed{std::move(out_), {}, nullptr});
  out_ = std::string();
  sealed_.push_back(Sealed{{}, payload, std::move(keep)});
  if (backlog_) *backlog_ += header.size() + payload.size();
  schedule_write();
  return Status::ok();
}

void FramedConnection::schedule_write() {
  // Posted, not started here: a handler that sends several frames (replies to one client, a
  // batch per worker) gives each connection one write syscall and one wake-up of its peer.
  if (writing_active_ || write_posted_) return;
  write_posted_ = true;
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->write_posted_ = false;
    if (!self->writing_active_) self->do_write();
  });
}

void FramedConnection::do_write() {
  if (closed_ || (out_.empty() && sealed_.empty())) {
    writing_active_ = false;
    if (close_after_flush_ && !closed_) close(Status::ok());
    return;
  }
  writing_active_ = true;
  writing_.clear();
  writing_.swap(out_);
  writing_sealed_.swap(sealed_);
  writing_sealed_bytes_ = std::exchange(sealed_bytes_, 0);
  // Descriptors queued so far belong to frames now in writing_, at the same offsets.
  fds_writing_.swap(fds_out_);
  write_from(0);
}

void FramedConnection::write_from(size_t sent) {
  if (!writing_sealed_.empty()) {
    // The sealed buffers come first, gathered into one write with writing_ after them (unless
    // descriptors ride on writing_: those go by write_from once the sealed part is out).
    const bool with_tail = fds_writing_.empty();
    std::vector<asio::const_buffer> parts;
    parts.reserve(writing_sealed_.size() + 1);
    for (const Sealed& s : writing_sealed_) parts.emplace_back(asio::buffer(s.data()));
    if (with_tail) parts.emplace_back(asio::buffer(writing_));
    asio::async_write(socket_, parts, [self = shared_from_this(), with_tail](
                                          boost::system::error_code ec, size_t n) {
      if (self->closed_) {  // no longer referenced
        std::string().swap(self->writing_);
        self->writing_sealed_.clear();
        return;
      }
      if (ec) {
        self->close(unavailable("write failed: {}", ec.message()));
        return;
      }
      self->bytes_out_ += n;
      if (self->backlog_)
        *self->backlog_ -= std::min<uint64_t>(*self->backlog_, self->writing_sealed_bytes_);
      self->writing_sealed_.clear();
      self->writing_sealed_bytes_ = 0;
      if (with_tail) self->write_done();
      else self->write_from(0);
    });
    return;
  }
  while (!fds_writing_.empty()) {
    // One descriptor per write, which runs from where we are (at or before its frame's first
    // byte: the previous write ended at most at the previous frame's end) to its frame's end.
    FdOut& next = fds_writing_.front();
    const std::string_view part(writing_.data() + sent, next.frame_end - sent);
    const ssize_t n = send_with_fds(socket_.native_handle(), part, {next.fd.get()});
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      socket_.async_wait(StreamSocket::wait_write,
                         [self = shared_from_this(), sent](boost::system::error_code ec) {
                           if (self->closed_) return;
                           if (ec) return self->close(unavailable("write failed: {}", ec.message()));
                           self->write_from(sent);
                         });
      return;
    }
    if (n < 0) {
      close(unavailable("write failed: {}", std::strerror(errno)));
      return;
    }
    fds_writing_.pop_front();  // it went with the first byte written
    sent += static_cast<size_t>(n);
    bytes_out_ += static_cast<size_t>(n);
  }
  asio::async_write(socket_, asio::buffer(writing_.data() + sent, writing_.size() - sent),
                    [self = shared_from_this()](boost::system::error_code ec, size_t n) {
                      if (self->closed_) {
                        std::string().swap(self->writing_);  // no longer referenced
                        return;
                      }
                      if (ec) {
                        self->close(unavailable("write failed: {}", ec.message()));
                        return;
                      }
                      self->bytes_out_ += n;
                      self->write_done();
                    });
}

void FramedConnection::write_done() {
  if (backlog_) *backlog_ -= std::min<uint64_t>(*backlog_, writing_.size());
  writing_.clear();
  if (writing_.capacity() > (64u << 20)) writing_.shrink_to_fit();
  do_write();
  if (on_written_ && !closed_) on_written_();
}

void FramedConnection::close_after_flush() {
  if (closed_ || close_after_flush_) return;
  close_after_flush_ = true;
  paused_ = true;
  linger_timer_ = std::make_unique<asio::steady_timer>(socket_.get_executor());
  linger_timer_->expires_after(std::chrono::seconds(5));
  linger_timer_->async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->close(deadline_exceeded("peer did not read its last frames"));
  });
  if (!writing_active_) do_write();
}

void FramedConnection::abort(const Status& why) {
  if (closed_ || abort_pending_) return;
  abort_pending_ = true;
  paused_ = true;
  if (backlog_) *backlog_ -= std::min<uint64_t>(*backlog_, out_.size() + sealed_bytes_);
  std::string().swap(out_);  // never sent: freed now (a write in flight keeps its own buffer)
  sealed_.clear();
  sealed_bytes_ = 0;
  asio::post(socket_.get_executor(), [self = shared_from_this(), why] { self->close(why); });
}

void FramedConnection::close(const Status& why) {
  if (closed_) return;
  closed_ = true;
  if (linger_timer_) linger_timer_->cancel();
  if (hangup_timer_) hangup_timer_->cancel();
  if (backlog_) {
    *backlog_ -= std::min(*backlog_, static_cast<uint64_t>(pending_bytes()));
    backlog_.reset();
  }
  std::string().swap(out_);  // what was queued will never be written
  sealed_.clear();  // (writing_sealed_ stays until the write in flight completes)
  sealed_bytes_ = 0;
  fds_out_.clear();
  fds_writing_.clear();
  fds_in_.clear();
  boost::system::error_code ec;
  socket_.shutdown(StreamSocket::shutdown_both, ec);
  socket_.close(ec);
  if (on_close_) {
    auto fn = std::move(on_close_);
    on_close_ = nullptr;
    fn(why);
  }
  // The frame handler may be the caller (close from inside on_frame): release the handlers
  // (and whatever they capture) only after the current handler has returned.
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->on_frame_ = nullptr;
    self->on_bad_frame_ = nullptr;
    self->on_written_ = nullptr;
  });
}

Result<StreamSocket> connect_stream(asio::io_context& io, const std::string& address,
                                    int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string path;
  if (address.rfind("unix:", 0) == 0) path = address.substr(5);
  else if (!address.empty() && address[0] == '/') path = address;
  boost::system::error_code ec;
  if (!path.empty()) {
    asio::local::stream_protocol::socket s(io);
    while (true) {
      s.connect(asio::local::stream_protocol::endpoint(path), ec);
      if (!ec) break;
      s.close();
      if (std::chrono::steady_clock::now() >= deadline)
        return unavailable("cannot connect to unix:{}: {}", path, ec.message());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    int fd = s.release(ec);
    return StreamSocket(io, asio::generic::stream_protocol(AF_UNIX, 0), fd);
  }
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return invalid_argument("bad address '{}': expected host:port or unix:/path", address);
  std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  asio::ip::tcp::resolver resolver(io);
  auto results = resolver.resolve(host, port, ec);
  if (ec) return unavailable("cannot resolve {}: {}", address, ec.message());
  asio::ip::tcp::socket s(io);
  while (true) {
    asio::connect(s, results, ec);
    if (!ec) break;
    s.close();
    if (std::chrono::steady_clock::now() >= deadline)
      return unavailable("cannot connect to {}: {}", address, ec.message());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  s.set_option(asio::ip::tcp::no_delay(true), ec);
  int family = s.local_endpoint().protocol().family();
  int fd = s.release(ec);
  return StreamSocket(io, asio::generic::stream_protocol(family, IPPROTO_TCP), fd);
}

}  // namespace gt
