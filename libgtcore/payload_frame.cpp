#include "libgtcore/payload_frame.h"

#include <algorithm>
#include <vector>

namespace gt {

namespace {
constexpr uint32_t kWireLen = 2;
uint64_t len_tag(uint32_t field) { return (static_cast<uint64_t>(field) << 3) | kWireLen; }

constexpr uint32_t kWireVarint = 0, kWireI64 = 1, kWireI32 = 5;

enum class Step { kOk, kNeedMore, kBad };

// Reads a varint at `at` of a container ending at `end` (body offsets); `p` holds the bytes
// received so far. Past the container: the message is malformed; past what was received: wait.
Step read_varint(std::string_view p, size_t& at, size_t end, uint64_t& v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= end) return Step::kBad;
    if (at >= p.size()) return Step::kNeedMore;
    const auto b = static_cast<uint8_t>(p[at++]);
    r |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      v = r;
      return Step::kOk;
    }
  }
  return Step::kBad;  // longer than 10 bytes
}

// Skips the value of a field of wire type `wt` at `at` (the tag already read). Only lengths are
// read: the bytes skipped need not have arrived yet.
Step skip_value(std::string_view p, size_t& at, size_t end, uint32_t wt) {
  uint64_t n = 0;
  switch (wt) {
    case kWireVarint: return read_varint(p, at, end, n);
    case kWireI64: n = 8; break;
    case kWireI32: n = 4; break;
    case kWireLen: {
      Step s = read_varint(p, at, end, n);
      if (s != Step::kOk) return s;
      break;
    }
    default: return Step::kBad;  // groups (retired) and the undefined wire types 6, 7
  }
  if (n > end - at) return Step::kBad;
  at += static_cast<size_t>(n);
  return Step::kOk;
}

// One field of a container: its tag at `at`; on return `at` is past the tag (and, for a
// length-delimited field, past its length, with `len` set).
struct Field {
  uint32_t number = 0, wire = 0;
  uint64_t len = 0;
};

Step read_tag(std::string_view p, size_t& at, size_t end, Field& f) {
  uint64_t tag = 0;
  Step s = read_varint(p, at, end, tag);
  if (s != Step::kOk) return s;
  f.number = static_cast<uint32_t>(tag >> 3);
  f.wire = static_cast<uint32_t>(tag & 7);
  if (f.number == 0 || (tag >> 3) > 0x1fffffff) return Step::kBad;
  return Step::kOk;
}

// Scans a container [at, end) for a length-delimited field `wanted` that ends exactly at `end`
// (the last field). On kOk, `field_start` is where its tag begins and `at` where its value does.
// `found` is false when the container holds no such last field, or when a singular `wanted`
// appears earlier too (protobuf would merge the occurrences, so only a whole parse gets that
// right); earlier occurrences of a `repeated` one are other elements and are skipped.
Step find_last_field(std::string_view p, size_t& at, size_t end, uint32_t wanted, bool repeated,
                     size_t& field_start, bool& found) {
  found = false;
  while (at < end) {
    field_start = at;
    Field f;
    Step s = read_tag(p, at, end, f);
    if (s != Step::kOk) return s;
    if (f.number == wanted && f.wire == kWireLen) {
      s = read_varint(p, at, end, f.len);
      if (s != Step::kOk) return s;
      if (f.len > end - at) return Step::kBad;
      if (at + f.len == end) {
        found = true;
        return Step::kOk;
      }
      if (!repeated) return Step::kOk;  // not last: found stays false
      at += static_cast<size_t>(f.len);
      continue;
    }
    s = skip_value(p, at, end, f.wire);
    if (s != Step::kOk) return s;
  }
  return Step::kOk;
}

Result<PayloadScanResult> result_of(Step s) {
  if (s == Step::kBad) return data_loss("malformed frame: a field runs past its message");
  PayloadScanResult r;
  r.state = s == Step::kNeedMore ? PayloadScan::kNeedMore : PayloadScan::kNoPayload;
  return r;
}

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

Result<PayloadScanResult> scan_payload_frame(std::string_view prefix, size_t body_size,
                                             std::span<const PayloadChainLevel> chain,
                                             PayloadChainLevel payload) {
  if (prefix.size() > body_size) return invalid_argument("scan_payload_frame: prefix past the body");
  if (chain.empty() || chain.size() > kMaxPayloadLevels)
    return invalid_argument("scan_payload_frame: {} levels (1 to {})", chain.size(), kMaxPayloadLevels);
  if (body_size == 0) return result_of(Step::kOk);  // an empty message: valid, no payload
  // The envelope: its first field must be the chain's first level, running to the body's end.
  size_t at = 0;
  Field f;
  Step s = read_tag(prefix, at, body_size, f);
  if (s != Step::kOk) return result_of(s);
  if (f.number != chain[0].field || f.wire != kWireLen) return result_of(Step::kOk);
  s = read_varint(prefix, at, body_size, f.len);
  if (s != Step::kOk) return result_of(s);
  if (f.len > body_size - at) return result_of(Step::kBad);
  if (at + f.len != body_size) return result_of(Step::kOk);  // more envelope fields: not ours

  PayloadFrameLayout l;
  l.levels = chain.size();
  size_t field_start = 0;
  bool found = false;
  for (size_t i = 0; i < chain.size(); ++i) {
    const bool last = i + 1 == chain.size();
    const PayloadChainLevel& next_level = last ? payload : chain[i + 1];
    const uint32_t next = next_level.field;
    const bool repeated = next_level.repeated;
    l.fields_begin[i] = at;
    s = find_last_field(prefix, at, body_size, next, repeated, field_start, found);
    if (s != Step::kOk || !found) return result_of(s);
    l.fields_end[i] = field_start;
  }
  l.payload_begin = at;
  l.payload_bytes = body_size - at;
  PayloadScanResult r;
  r.state = PayloadScan::kFound;
  r.layout = l;
  return r;
}

}  // namespace gt
