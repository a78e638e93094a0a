// Frames whose payload comes last (issue 15), written as a short header plus the payload from
// wherever it lives (scatter-gather I/O): the body is a chain of nested messages, each level's
// last field the next level, the innermost level's last field a bytes field holding the
// payload. Still an ordinary, valid protobuf message: a receiver that does not look for the
// layout simply parses it (protobuf accepts fields in any order, and a level's other fields
// come first).
//
//   [len][field_0 tag, len][level 0's fields][field_1 tag, len][level 1's fields] ...
//        [payload_field tag, len]<payload>
//
// Fetch replies use it (libgtcore/reply_payload.h: ServerMessage.reply -> Reply.tensor ->
// TensorData.data), and so do a client's large uploads (ClientMessage.batch -> the batch's last
// ClientBatch.instrs -> Instr.data): the client writes the payload from the caller's memory.
#pragma once

#include <google/protobuf/message_lite.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "libgtcore/status.h"

namespace gt {

struct PayloadLevel {
  uint32_t field;                              // this level's field number in its container
  const google::protobuf::MessageLite* fields;  // its fields before the next level (ByteSizeLong
                                                // is called here: its cached sizes are used)
};

// Appends the header of a frame (4-byte length included) holding `levels` with a payload of
// `payload_bytes` bytes in field `payload_field` of the innermost level; the caller sends the
// payload right after it. Refused (RESOURCE_EXHAUSTED) over max_frame_bytes.
Status append_payload_frame_header(std::string* out, std::span<const PayloadLevel> levels,
                                   uint32_t payload_field, uint64_t payload_bytes,
                                   uint64_t max_frame_bytes = 0xffffffffull);

// Finding the payload of such a frame from its first bytes, without parsing anything (a receiver
// that relays the payload, or reads it into a buffer of its own). `chain` names the levels'
// fields: the body's first and only field is chain[0]; the message of level i holds chain[i + 1]
// (or, for the innermost, `payload`) as its last field. A `repeated` level's earlier
// occurrences are other elements (a batch's instructions before the last, a hot run's uploads
// before the last); a singular one appearing earlier too is left to a whole parse (protobuf
// would merge them). Lengths are never trusted: every field must lie inside its container and
// the body.
struct PayloadChainLevel {
  uint32_t field;
  bool repeated = false;
};
inline constexpr size_t kMaxPayloadLevels = 4;

struct PayloadFrameLayout {
  size_t levels = 0;
  // Level i's own fields (all but the next level's field), as body offsets [begin, end).
  std::array<size_t, kMaxPayloadLevels> fields_begin{}, fields_end{};
  size_t payload_begin = 0;  // the header's size (without the 4-byte frame length)
  size_t payload_bytes = 0;  // payload_begin + payload_bytes == the body's size
};

enum class PayloadScan {
  kFound,      // the layout holds: `layout` says where everything is
  kNoPayload,  // a valid start of some other message (or another field order): parse it whole
  kNeedMore,   // the header is not complete in the bytes given yet
};

struct PayloadScanResult {
  PayloadScan state = PayloadScan::kNoPayload;
  PayloadFrameLayout layout;
};

// Scans `prefix`, the first bytes of a frame body of `body_size` bytes (prefix.size() <=
// body_size). An error (DataLoss) when the bytes cannot be a protobuf message of that size: a
// truncated varint, a field running past its container, a bad wire type.
Result<PayloadScanResult> scan_payload_frame(std::string_view prefix, size_t body_size,
                                             std::span<const PayloadChainLevel> chain,
                                             PayloadChainLevel payload);

// Protobuf's base-128 varints (the wire's lengths and tags).
size_t varint_size(uint64_t v);
uint8_t* write_varint(uint8_t* p, uint64_t v);

}  // namespace gt
