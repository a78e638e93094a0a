// Framing (DESIGN §4): 4-byte little-endian length + one serialized protobuf message.
// The decoder checks the length against a configured maximum before allocating anything, and
// turns every malformed input into a Status instead of a crash.
#pragma once

#include <google/protobuf/message_lite.h>

#include <cstdint>
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

// Incremental decoder over a byte stream: feed it what the socket read, take whole frames out.
class FrameDecoder {
 public:
  explicit FrameDecoder(uint64_t max_frame_bytes = kDefaultMaxFrameBytes)
      : max_frame_bytes_(max_frame_bytes) {}

  // Space to read into (at least `min_bytes`); call commit(n) after n bytes were written there.
  char* prepare(size_t min_bytes);
  size_t prepared_size() const { return buf_.size() - end_; }
  void commit(size_t n) { end_ += n; }
  void append(std::string_view bytes);

  // The next complete frame body, nullopt if more bytes are needed, or an error (oversized
  // frame). The view stays valid until the next call to prepare/append/next.
  Result<std::optional<std::string_view>> next();
  size_t buffered() const { return end_ - begin_; }
  uint64_t max_frame_bytes() const { return max_frame_bytes_; }
  void set_max_frame_bytes(uint64_t v) { max_frame_bytes_ = v; }

 private:
  void compact();
  uint64_t max_frame_bytes_;
  std::string buf_;
  size_t begin_ = 0, end_ = 0;
};

}  // namespace gt
