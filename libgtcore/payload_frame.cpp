#include "libgtcore/payload_frame.h"

#include <algorithm>
#include <vector>

namespace gt {

namespace {
constexpr uint32_t kWireLen = 2;
uint64_t len_tag(uint32_t field) { return (static_cast<uint64_t>(field) << 3) | kWireLen; }
}  // namespace

size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

uint8_t* write_varint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

Status append_payload_frame_header(std::string* out, std::span<const PayloadLevel> levels,
                                   uint32_t payload_field, uint64_t payload_bytes,
                                   uint64_t max_frame_bytes) {
  if (levels.empty() || payload_field == 0)
    return internal_error("append_payload_frame_header: no levels or no payload field");
  // Inside out: each level's length is its fields, then the next level's tag, length and value.
  std::vector<uint64_t> own(levels.size()), len(levels.size());
  uint64_t inner = varint_size(len_tag(payload_field)) + varint_size(payload_bytes) + payload_bytes;
  for (size_t i = levels.size(); i-- > 0;) {
    if (levels[i].field == 0 || !levels[i].fields)
      return internal_error("append_payload_frame_header: a level without a field or message");
    own[i] = levels[i].fields->ByteSizeLong();
    len[i] = own[i] + inner;
    inner = varint_size(len_tag(levels[i].field)) + varint_size(len[i]) + len[i];
  }
  const uint64_t body = inner;
  if (body > max_frame_bytes || body > 0xffffffffull)
    return resource_exhausted("frame of {} bytes exceeds the maximum of {}", body,
                              std::min<uint64_t>(max_frame_bytes, 0xffffffffull));
  const size_t header = 4 + static_cast<size_t>(body - payload_bytes);
  const size_t at = out->size();
  out->resize(at + header);
  auto* p = reinterpret_cast<uint8_t*>(out->data() + at);
  const auto frame_len = static_cast<uint32_t>(body);
  for (int i = 0; i < 4; ++i) *p++ = static_cast<uint8_t>(frame_len >> (8 * i));
  for (size_t i = 0; i < levels.size(); ++i) {
    p = write_varint(p, len_tag(levels[i].field));
    p = write_varint(p, len[i]);
    p = levels[i].fields->SerializeWithCachedSizesToArray(p);
  }
  p = write_varint(p, len_tag(payload_field));
  p = write_varint(p, payload_bytes);
  if (p != reinterpret_cast<uint8_t*>(out->data() + at + header))
    return internal_error("append_payload_frame_header: size mismatch");
  return Status::ok();
}

}  // namespace gt
