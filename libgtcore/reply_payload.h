// Fetch replies as a small header + trailing raw payload (issue 15). A fetch chunk travels as an
// ordinary, valid protobuf message (WorkerMessage / ServerMessage holding a Reply), laid out so
// that the tensor bytes come last: `reply` is the envelope's only field, `tensor` the Reply's last
// field and `data` the TensorData's last field. Then everything before the payload is a short
// header, and the payload is the frame's tail:
//
//   [len][reply tag, len][Reply fields...][tensor tag, len][TensorData fields...][data tag, len]<payload>
//
// A sender writes the header and points a gather write at the tensor's own memory; the dispatcher
// finds the payload without parsing it (scan_reply_payload), rewrites the small header and
// forwards the same bytes; a client reads the header first and the payload straight into the
// destination buffer. Any other message (errors, stats) and any reply not in this layout simply
// takes the ordinary path: the scanner says kNoPayload. The scanner never trusts a length: every
// field must lie inside the bytes declared, or the frame is malformed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "libgtcore/payload_frame.h"
#include "libgtcore/status.h"
#include "proto/gt.pb.h"

namespace gt {

// Field numbers of `reply` in the envelopes (proto/gt.proto).
inline constexpr uint32_t kWorkerReplyField = 4;  // WorkerMessage.reply
inline constexpr uint32_t kServerReplyField = 3;  // ServerMessage.reply

// Where the parts of a reply frame body lie (offsets into the body).
struct ReplyPayloadLayout {
  size_t reply_fields_begin = 0, reply_fields_end = 0;    // Reply's fields other than `tensor`
  size_t tensor_fields_begin = 0, tensor_fields_end = 0;  // TensorData's fields other than `data`
  size_t payload_begin = 0;  // the header's size
  size_t payload_bytes = 0;  // payload_begin + payload_bytes == the body's size
};

// kFound: the layout holds (`layout` says where everything is); kNoPayload: a valid start of
// some other message (or another field order): parse it whole; kNeedMore: the header is not
// complete in the bytes given yet (payload_frame.h's scan, which this one is).
using ReplyScan = PayloadScan;

struct ReplyPayloadScanResult {
  ReplyScan state = ReplyScan::kNoPayload;
  ReplyPayloadLayout layout;
};

// Scans `prefix`, the first bytes of a frame body of `body_size` bytes in all (prefix.size() <=
// body_size), for the layout above with `reply_field` as the envelope's reply field. An error
// (DataLoss) when the bytes cannot be a protobuf message of that size: a truncated varint, a field
// running past its container, a bad wire type.
Result<ReplyPayloadScanResult> scan_reply_payload(std::string_view prefix, size_t body_size,
                                                  uint32_t reply_field);

// Parses the header parts the scan found: `head` gets the Reply's fields (tensor cleared),
// `meta` the TensorData's fields (data cleared; the payload is not copied).
Status parse_reply_header(std::string_view body_prefix, const ReplyPayloadLayout& layout,
                          v1::Reply* head, v1::TensorData* meta);

// Appends a whole frame's header (4-byte length included) for `head` (its `tensor` is ignored)
// with tensor metadata `meta` (its `data` is ignored) and `payload_bytes` bytes of payload, which
// the caller sends right after it. The result parses as the envelope with `reply_field`.
Status append_reply_header(std::string* out, uint32_t reply_field, const v1::Reply& head,
                           const v1::TensorData& meta, uint64_t payload_bytes,
                           uint64_t max_frame_bytes = 0xffffffffull);

// Checks a fetch chunk's metadata against its payload: a known dtype, a valid shape whose size
// is total_bytes, and the chunk inside it. `expected_offset` (when >= 0) is where the chunk must
// start (chunks come in order). What a process boundary must not take on trust.
Status check_fetch_chunk(const v1::TensorData& meta, uint64_t payload_bytes,
                         int64_t expected_offset = -1);

}  // namespace gt
