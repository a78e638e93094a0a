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

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

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

// Protobuf's base-128 varints (the wire's lengths and tags).
size_t varint_size(uint64_t v);
uint8_t* write_varint(uint8_t* p, uint64_t v);

}  // namespace gt
