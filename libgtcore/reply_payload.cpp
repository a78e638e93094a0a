#include "libgtcore/reply_payload.h"

#include <span>

#include "gt/core/dtype.h"
#include "gt/core/shape.h"
#include "libgtcore/payload_frame.h"

namespace gt {
namespace {

constexpr uint32_t kWireVarint = 0, kWireI64 = 1, kWireLen = 2, kWireI32 = 5;
constexpr uint32_t kTensorField = 3;  // Reply.tensor
constexpr uint32_t kDataField = 5;    // TensorData.data

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
// `found` is false when the container holds no such last field (or `wanted` appears earlier too:
// protobuf would merge the occurrences, so only a whole parse gets that right).
Step find_last_field(std::string_view p, size_t& at, size_t end, uint32_t wanted,
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
      return Step::kOk;  // not last: found stays false
    }
    s = skip_value(p, at, end, f.wire);
    if (s != Step::kOk) return s;
  }
  return Step::kOk;
}

Result<ReplyPayloadScanResult> result_of(Step s) {
  if (s == Step::kBad) return data_loss("malformed reply frame");
  ReplyPayloadScanResult r;
  r.state = s == Step::kNeedMore ? ReplyScan::kNeedMore : ReplyScan::kNoPayload;
  return r;
}

}  // namespace

Result<ReplyPayloadScanResult> scan_reply_payload(std::string_view prefix, size_t body_size,
                                                  uint32_t reply_field) {
  if (prefix.size() > body_size) return invalid_argument("scan_reply_payload: prefix past the body");
  if (body_size == 0) return result_of(Step::kOk);  // an empty message: valid, no payload
  size_t at = 0;
  Field f;
  Step s = read_tag(prefix, at, body_size, f);
  if (s != Step::kOk) return result_of(s);
  if (f.number != reply_field || f.wire != kWireLen) return result_of(Step::kOk);
  s = read_varint(prefix, at, body_size, f.len);
  if (s != Step::kOk) return result_of(s);
  if (f.len > body_size - at) return result_of(Step::kBad);
  if (at + f.len != body_size) return result_of(Step::kOk);  // more envelope fields: not ours

  ReplyPayloadLayout l;
  l.reply_fields_begin = at;
  size_t field_start = 0;
  bool found = false;
  s = find_last_field(prefix, at, body_size, kTensorField, field_start, found);
  if (s != Step::kOk || !found) return result_of(s);
  l.reply_fields_end = field_start;
  l.tensor_fields_begin = at;
  s = find_last_field(prefix, at, body_size, kDataField, field_start, found);
  if (s != Step::kOk || !found) return result_of(s);
  l.tensor_fields_end = field_start;
  l.payload_begin = at;
  l.payload_bytes = body_size - at;
  ReplyPayloadScanResult r;
  r.state = ReplyScan::kFound;
  r.layout = l;
  return r;
}

Status parse_reply_header(std::string_view body_prefix, const ReplyPayloadLayout& l,
                          v1::Reply* head, v1::TensorData* meta) {
  if (l.payload_begin > body_prefix.size() || l.reply_fields_end > l.tensor_fields_begin ||
      l.tensor_fields_end > l.payload_begin || l.reply_fields_begin > l.reply_fields_end ||
      l.tensor_fields_begin > l.tensor_fields_end)
    return invalid_argument("parse_reply_header: layout does not fit the bytes given");
  const char* p = body_prefix.data();
  if (!head->ParseFromArray(p + l.reply_fields_begin,
                            static_cast<int>(l.reply_fields_end - l.reply_fields_begin)) ||
      !meta->ParseFromArray(p + l.tensor_fields_begin,
                            static_cast<int>(l.tensor_fields_end - l.tensor_fields_begin)))
    return data_loss("malformed reply header");
  head->clear_tensor();
  meta->clear_data();
  return Status::ok();
}

Status append_reply_header(std::string* out, uint32_t reply_field, const v1::Reply& head,
                           const v1::TensorData& meta, uint64_t payload_bytes,
                           uint64_t max_frame_bytes) {
  if (head.has_tensor() || !meta.data().empty() || reply_field == 0 || reply_field > 15)
    return internal_error("append_reply_header: the head and meta must not hold the payload");
  const PayloadLevel levels[] = {{reply_field, &head}, {kTensorField, &meta}};
  return append_payload_frame_header(out, levels, kDataField, payload_bytes, max_frame_bytes);
}

Status check_fetch_chunk(const v1::TensorData& meta, uint64_t payload_bytes,
                         int64_t expected_offset) {
  if (!is_valid_dtype(meta.dtype()))
    return data_loss("fetch reply: unknown dtype {}", static_cast<int>(meta.dtype()));
  auto shape = Shape::from(std::span<const int64_t>(meta.shape().data(),
                                                    static_cast<size_t>(meta.shape_size())));
  if (!shape.is_ok()) return data_loss("fetch reply: bad shape: {}", shape.status().message());
  const TensorMeta m{*shape, static_cast<DType>(meta.dtype())};
  if (static_cast<int64_t>(meta.total_bytes()) != m.nbytes() || m.nbytes() < 0)
    return data_loss("fetch reply: {} bytes declared for a {} {} tensor of {} bytes",
                     meta.total_bytes(), dtype_name(m.dtype), m.shape.str(), m.nbytes());
  if (meta.offset() > meta.total_bytes() || payload_bytes > meta.total_bytes() - meta.offset())
    return data_loss("fetch reply: chunk of {} bytes at offset {} overruns a tensor of {} bytes",
                     payload_bytes, meta.offset(), meta.total_bytes());
  if (expected_offset >= 0 && meta.offset() != static_cast<uint64_t>(expected_offset))
    return data_loss("fetch reply: chunk at offset {} where offset {} was expected",
                     meta.offset(), expected_offset);
  return Status::ok();
}

}  // namespace gt
