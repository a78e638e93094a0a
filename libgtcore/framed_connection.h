// FramedConnection: one stream socket (TCP or Unix) speaking length-prefixed frames on an Asio
// io_context (ARCHITECTURE §4, §11). Reads into a FrameDecoder that enforces the frame limit before
// allocating; writes coalesce everything queued while the previous write was in flight into one
// write, so batching appears under load with no added latency. All methods run on the
// io_context's thread; handlers are called there too.
//
// Memory per connection follows its traffic: the read size starts small (an idle connection
// holds a few KiB), doubles while reads fill it and halves again after a run of small reads.
// While reading is paused (backpressure) a timer polls the socket for a hang-up, so a peer that
// dies behind flow control is noticed and closed instead of being kept for work nobody wants.
#pragma once

#include "libgtcore/asio.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "libgtcore/frame_codec.h"
#include "libgtcore/frame_gather.h"
#include "libgtcore/payload_frame.h"
#include "libgtcore/status.h"
#include "libgtcore/unique_fd.h"

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
  // Frames whose payload comes last (payload_frame.h) and that a handler wants with the payload
  // in a string of its own (a client's upload, which the instruction then owns: no parse copy).
  // For a frame of at least `min_body_bytes` still arriving, `split` is shown its first bytes
  // and the body's size, and says where the payload begins (PayloadScan::kFound), that it needs
  // more bytes, or that the frame is read whole; once found, the rest of the payload is read
  // straight into the string, and `on_payload_frame` gets the header (the body before the
  // payload) and the payload instead of on_frame. A frame whose header (the bytes before its
  // payload) passes kMaxSplitHeaderBytes is read whole. A scan error closes like a bad frame.
  using PayloadSplitFn = std::function<Result<PayloadScanResult>(std::string_view, size_t)>;
  using PayloadFrameFn = std::function<void(std::string_view head, std::string&& payload)>;
  void set_payload_split(size_t min_body_bytes, PayloadSplitFn split, PayloadFrameFn on_payload_frame);
  // A frame has begun to arrive and is not complete (draining waits for it).
  bool mid_frame() const { return decoder_.buffered() > 0 || splitting_; }
  // Called after each completed write: senders that stopped at a high-water mark resume.
  void set_write_handler(std::function<void()> fn) { on_written_ = std::move(fn); }
  // Stops handing out frames (and reading) until resume_reading(): backpressure. While paused,
  // a peer hang-up is still detected (polled every kHangupPollMs) and closes the connection.
  void pause_reading();
  void resume_reading();
  bool reading_paused() const { return paused_; }

  // Appends one frame holding `msg`; the write starts at the end of the current event-loop turn
  // (if none is in flight), so every frame queued in one turn leaves in one write.
  Status send(const google::protobuf::MessageLite& msg);
  // Appends one frame given as its parts (a header that starts with the frame length, then the
  // payload: libgtcore/reply_payload.h), never parsed or re-serialized. A large payload with
  // nothing queued before it goes to the socket at once from the caller's memory; what the
  // socket does not take is copied into the queue.
  Status send_parts(std::string_view header, std::string_view payload);
  // Appends one frame holding `msg`, whose large bytes fields (uploads' payloads) are written
  // from the message itself, which the connection keeps until they are out (FrameParts): no
  // serialized copy of them is made. Small messages are simply serialized.
  Status send_owned(std::shared_ptr<const google::protobuf::MessageLite> msg);
  // Appends one frame given as its parts, like send_parts, but a large payload is written from
  // where it lives, which `keep` keeps alive until it is out (a worker batch's upload laid out
  // payload-last: libgtcore/upload_frame.h); no copy of it is made.
  Status send_kept_parts(std::string_view header, std::string_view payload,
                         std::shared_ptr<const void> keep);
  // Appends one frame holding `msg` with `fd` attached to it (SCM_RIGHTS; Unix sockets only):
  // the peer's take_fd() returns it once the frame has arrived (one descriptor per write, in
  // frame order: a peer that claims one per such frame gets each frame's own).
  Status send_with_fd(const google::protobuf::MessageLite& msg, UniqueFd fd);
  // Unix sockets: keep descriptors the peer passes (at most `max_pending` not yet taken; a peer
  // that passes more is cut off). Off by default: passed descriptors are then closed unread.
  void accept_fds(size_t max_pending) { max_fds_in_ = max_pending; }
  // The oldest descriptor passed and not yet taken (invalid when none): a frame that declares
  // one takes it in its handler (it arrived with the frame's bytes or before them).
  UniqueFd take_fd();
  // Bytes queued but not yet written: callers bound their queues with it.
  size_t pending_bytes() const {
    return out_.size() + writing_.size() + sealed_bytes_ + writing_sealed_bytes_;
  }
  // Closes after flushing what is queued; a peer that does not read is cut off after 5 s.
  void close_after_flush();
  void close(const Status& why);
  // Drops what is queued for the peer now (its memory is freed at once) and closes from the
  // io_context shortly after, so the owner's on_close never runs inside the caller.
  void abort(const Status& why);
  bool closed() const { return closed_; }
  // Closed, or on its way there (close_after_flush, abort): nothing more should be sent.
  bool closing() const { return closed_ || close_after_flush_ || abort_pending_; }
  // A counter shared by several connections (the dispatcher's total of unread replies): kept
  // equal to the sum of their pending_bytes(). Null: none.
  void set_backlog_counter(std::shared_ptr<uint64_t> counter);
  // Bytes of read buffer this connection holds, and the size of its next read (tests).
  size_t read_buffer_bytes() const { return decoder_.capacity(); }
  size_t read_size() const { return read_size_; }

  // send_parts writes a payload at least this large at once when nothing is queued before it.
  static constexpr size_t kWriteNowBytes = 64 * 1024;
  // send_parts queues a payload at least this large in a buffer of its own (see sealed_).
  static constexpr size_t kSealBytes = 1 << 20;
  static constexpr size_t kMaxSplitHeaderBytes = 64 * 1024;
  static constexpr size_t kMinReadBytes = 4 * 1024;
  static constexpr size_t kMaxReadBytes = 256 * 1024;
  static constexpr int kHangupPollMs = 200;

  const std::string& peer() const { return peer_; }
  StreamSocket& socket() { return socket_; }
  uint64_t bytes_in() const { return bytes_in_; }
  uint64_t bytes_out() const { return bytes_out_; }
  FrameDecoder& decoder() { return decoder_; }

 private:
  void do_read();
  void drain_frames();
  void bad_frame(const Status& why);  // stops reading; on_bad_frame_ or close
  // Looks at the frame in progress for set_payload_split (splitting_ once its payload goes
  // into a string of its own); an error: the bytes cannot be a message.
  Status split_payload();
  void split_read_done();  // the whole payload is in: on_payload_frame_
  std::pair<char*, size_t> read_target();  // where the next read goes
  void on_read(boost::system::error_code ec, size_t n);
  void read_with_fds();  // do_read's recvmsg form, while accept_fds is on
  void do_write();
  void write_from(size_t sent);  // writing_[sent..]: descriptors first (sendmsg), then the rest
  void write_done();             // writing_ is out: the next write, and on_written_
  void schedule_write();  // do_write at the end of this turn, once however many frames queue
  void watch_hangup();
  void adapt_read_size(size_t n);

  StreamSocket socket_;
  FrameDecoder decoder_;
  FrameFn on_frame_;
  CloseFn on_close_;
  // set_payload_split's; splitting_: the frame in progress is being read into split_payload_.
  PayloadSplitFn split_;
  PayloadFrameFn on_payload_frame_;
  size_t split_min_bytes_ = 0;
  bool splitting_ = false;
  bool split_declined_ = false;  // the frame in progress is read whole (decided once per frame)
  std::string split_head_, split_payload_;
  size_t split_filled_ = 0;
  CloseFn on_bad_frame_;
  std::function<void()> on_written_;
  std::unique_ptr<asio::steady_timer> linger_timer_;
  std::unique_ptr<asio::steady_timer> hangup_timer_;  // made on the first pause
  std::shared_ptr<uint64_t> backlog_;
  std::string out_, writing_;
  // Large payloads queued (a relayed fetch chunk the client has not read yet) each in a buffer
  // of its own, with the frames queued before them sealed ahead: all go before out_, in order.
  // The queue is then never one string that grows by reallocation, which for a client that
  // reads slower than a worker writes faulted in hundreds of MiB of fresh pages per fetch.
  // An entry is a buffer of its own, or bytes of a message it keeps alive (send_owned).
  struct Sealed {
    std::string bytes;
    std::string_view kept;                 // with `keep`: the bytes to write
    std::shared_ptr<const void> keep;
    std::string_view data() const { return keep ? kept : std::string_view(bytes); }
  };
  std::deque<Sealed> sealed_, writing_sealed_;
  FrameParts out_parts_;  // send_owned's, reused
  size_t sealed_bytes_ = 0, writing_sealed_bytes_ = 0;
  // Descriptors to pass, each with the end of its frame in out_ (then writing_): each leaves
  // with a write that ends there, starting at or before its frame, so the peer always has a
  // frame's descriptor when the frame is complete, in frame order (never with a later frame).
  struct FdOut {
    UniqueFd fd;
    size_t frame_end;
  };
  std::deque<FdOut> fds_out_, fds_writing_;
  std::deque<UniqueFd> fds_in_;
  size_t max_fds_in_ = 0;
  bool writing_active_ = false;
  bool write_posted_ = false;
  bool reading_active_ = false;
  bool paused_ = false;
  bool closed_ = false;
  bool close_after_flush_ = false;
  bool in_drain_ = false;
  bool abort_pending_ = false;
  bool watching_hangup_ = false;
  uint8_t small_reads_ = 0;  // reads in a row that used little of read_size_
  size_t read_size_ = kMinReadBytes;
  std::string peer_;
  uint64_t bytes_in_ = 0, bytes_out_ = 0;
};

// Parses "host:port", "unix:/path" or "/path" and connects (blocking, with a timeout).
Result<StreamSocket> connect_stream(asio::io_context& io, const std::string& address,
                                    int timeout_ms);

}  // namespace gt
