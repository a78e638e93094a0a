// Framing (ARCHITECTURE §4): 4-byte little-endian length + one serialized protobuf message.
// The decoder checks the length against a configured maximum before allocating anything, and
// turns every malformed input into a Status instead of a crash. Its buffer grows with the bytes
// actually received (at most doubling what is buffered), never by a declared length alone, and
// is given back once a large frame has been taken out.
#pragma once

#include <google/protobuf/message_lite.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "libgtcore/status.h"

namespace gt {

inline constexpr size_t kFrameHeaderBytes = 4;
inline constexpr uint64_t kDefaultMaxFrameBytes = 64ull << 20;

// Appends one frame holding `msg` to `out` (serialized in place, no intermediate copy).
Status append_frame(std::string* out, const google::protobuf::MessageLite& msg,
                    uint64_t max_frame_bytes = kDefaultMaxFrameBytes);

// Parses one frame body into `msg`.
Status parse_frame(std::string_view body, google::protobuf::MessageLite* msg);
// The same, merged into `msg` as it is: the caller clears it, keeping what the parser may reuse
// (a oneof's submessage and its repeated messages, which Parse* would delete first).
Status merge_frame(std::string_view body, google::protobuf::MessageLite* msg);

// Incremental decoder over a byte stream: feed it what the socket read, take whole frames out.
class FrameDecoder {
 public:
  explicit FrameDecoder(uint64_t max_frame_bytes = kDefaultMaxFrameBytes)
      : max_frame_bytes_(max_frame_bytes) {}

  // Space to read into (at least `min_bytes`); call commit(n) after n bytes were written there.
  // While the rest of a frame of known length is missing, the room offered may exceed
  // `min_bytes`, up to that rest but never more than what is already buffered, so memory follows
  // the bytes received. A buffer much larger than needed (after a large frame) is shrunk here.
  // Prepared memory is not initialized: untouched pages cost no RSS.
  char* prepare(size_t min_bytes);
  size_t prepared_size() const { return cap_ - end_; }
  void commit(size_t n) { end_ += n; }
  void append(std::string_view bytes);

  // The next complete frame body, nullopt if more bytes are needed, or an error (oversized
  // frame). The view stays valid until the next call to prepare/append/next.
  Result<std::optional<std::string_view>> next();
  size_t buffered() const { return end_ - begin_; }
  // The bytes buffered and not yet taken (a frame in progress, from its length on): a reader may
  // look at a large frame's header before the rest arrives, and take the rest itself.
  std::string_view peek() const { return {buf_.get() + begin_, end_ - begin_}; }
  // Drops everything buffered (the caller took over the frame in progress: peek()).
  void discard_buffered() {
    begin_ = end_ = 0;
    frame_total_ = 0;
  }
  // Gives back room beyond `keep_room` (plus what a frame in progress may use next) when the
  // buffer is more than twice that: a connection whose traffic became small shrinks. Never
  // below retain_bytes().
  void release_unused(size_t keep_room);
  // A buffer up to this size is kept after a large frame, so a stream of large frames (fetch
  // replies) does not reallocate and fault in fresh pages for every one; beyond it (and beyond
  // 1 MiB) the buffer is shrunk once the frame has been taken. 0: always follow the traffic.
  void set_retain_bytes(size_t v) { retain_bytes_ = v; }
  size_t retain_bytes() const { return retain_bytes_; }
  static constexpr size_t kDefaultRetainBytes = size_t{8} << 20;
  // Bytes allocated for the buffer (memory accounting, tests).
  size_t capacity() const { return cap_; }
  uint64_t max_frame_bytes() const { return max_frame_bytes_; }
  void set_max_frame_bytes(uint64_t v) { max_frame_bytes_ = v; }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  void compact();
  void reallocate(size_t cap);  // keeps the buffered bytes, moved to the front
  uint64_t max_frame_bytes_;
  std::unique_ptr<char, Free> buf_;
  size_t cap_ = 0, begin_ = 0, end_ = 0;
  size_t frame_total_ = 0;  // header + body of the frame being received; 0: not known yet
  size_t retain_bytes_ = kDefaultRetainBytes;
};

}  // namespace gt
