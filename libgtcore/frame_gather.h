// A frame of a protobuf message as parts for scatter-gather I/O (issue 15): the frame header and
// the message's bytes, where each bytes / string field of at least kAliasBytes is not copied
// but referenced where it lives in the message. An upload's payload then goes from the message
// that carries it (the client's queued batch, the dispatcher's worker batch) to the socket
// without first being copied into a serialized frame. The parts are valid while the message
// lives and is not modified; concatenated, they are exactly append_frame()'s frame.
//
// It relies on protobuf's aliasing serialization: generated code writes bytes fields through
// WriteStringMaybeAliased, which with aliasing enabled hands a large field to the output
// stream's WriteAliasedRaw instead of copying it.
#pragma once

#include <google/protobuf/message_lite.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "libgtcore/status.h"

namespace gt {

class FrameParts {
 public:
  // Fields at least this large are referenced; smaller ones are copied with the rest.
  static constexpr size_t kAliasBytes = 64 * 1024;

  // The frame of `msg` (ByteSizeLong() is computed here), refused like append_frame() when it
  // is over max_frame_bytes.
  Status build(const google::protobuf::MessageLite& msg, uint64_t max_frame_bytes);

  // In order: runs of copied bytes (the header first) and referenced fields.
  const std::vector<std::string_view>& parts() const { return parts_; }
  // Whether parts()[i] is a field referenced in the message (else bytes held here).
  bool aliased(size_t i) const { return runs_[i].aliased; }
  size_t bytes() const { return bytes_; }
  // Bytes referenced, not copied (0: the frame is one copied run).
  size_t aliased_bytes() const { return aliased_; }

 private:
  class Stream;
  std::string copied_;  // the copied runs, back to back
  struct Run {
    bool aliased;
    size_t begin, size;       // in copied_ (not aliased)
    std::string_view field;   // aliased
  };
  std::vector<Run> runs_;
  std::vector<std::string_view> parts_;
  size_t bytes_ = 0, aliased_ = 0;
};

}  // namespace gt
