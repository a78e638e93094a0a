// FramedConnection: one stream socket (TCP or Unix) speaking length-prefixed frames on an Asio
// io_context (DESIGN §4, §11). Reads into a FrameDecoder that enforces the frame limit before
// allocating; writes coalesce everything queued while the previous write was in flight into one
// write, so batching appears under load with no added latency. All methods run on the
// io_context's thread; handlers are called there too.
#pragma once

#include "libgtcore/asio.h"

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "libgtcore/frame_codec.h"
#include "libgtcore/status.h"

namespace gt {

namespace asio = boost::asio;
using StreamSocket = asio::generic::stream_protocol::socket;

class FramedConnection : public std::enable_shared_from_this<FramedConnection> {
 public:
  // on_frame: one complete frame body (valid only during the call).
  // on_close: called once, with the reason (OK for an orderly end of stream).
  using FrameFn = std::function<void(std::string_view)>;
  using CloseFn = std::function<void(const Status&)>;

  FramedConnection(StreamSocket socket, uint64_t max_frame_bytes);
  ~FramedConnection();

  void start(FrameFn on_frame, CloseFn on_close);
  // Called instead of closing when the peer sends an unacceptable frame (oversized): the owner
  // may queue a refusal and close_after_flush(). Reading stops either way.
  void set_bad_frame_handler(CloseFn fn) { on_bad_frame_ = std::move(fn); }
  // Called after each completed write: senders that stopped at a high-water mark resume.
  void set_write_handler(std::function<void()> fn) { on_written_ = std::move(fn); }
  // Stops handing out frames (and reading) until resume_reading(): backpressure.
  void pause_reading();
  void resume_reading();
  bool reading_paused() const { return paused_; }

  // Appends one frame holding `msg` and starts a write if none is in flight.
  Status send(const google::protobuf::MessageLite& msg);
  // Bytes queued but not yet written: callers bound their queues with it.
  size_t pending_bytes() const { return out_.size() + writing_.size(); }
  // Closes after flushing what is queued; a peer that does not read is cut off after 5 s.
  void close_after_flush();
  void close(const Status& why);
  bool closed() const { return closed_; }

  const std::string& peer() const { return peer_; }
  StreamSocket& socket() { return socket_; }
  uint64_t bytes_in() const { return bytes_in_; }
  uint64_t bytes_out() const { return bytes_out_; }
  FrameDecoder& decoder() { return decoder_; }

 private:
  void do_read();
  void drain_frames();
  void do_write();

  StreamSocket socket_;
  FrameDecoder decoder_;
  FrameFn on_frame_;
  CloseFn on_close_;
  CloseFn on_bad_frame_;
  std::function<void()> on_written_;
  std::unique_ptr<asio::steady_timer> linger_timer_;
  std::string out_, writing_;
  bool writing_active_ = false;
  bool reading_active_ = false;
  bool paused_ = false;
  bool closed_ = false;
  bool close_after_flush_ = false;
  bool in_drain_ = false;
  std::string peer_;
  uint64_t bytes_in_ = 0, bytes_out_ = 0;
};

// Parses "host:port", "unix:/path" or "/path" and connects (blocking, with a timeout).
Result<StreamSocket> connect_stream(asio::io_context& io, const std::string& address,
                                    int timeout_ms);

}  // namespace gt
