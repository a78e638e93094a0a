#include "libgtcore/reply_payload.h"

#include <span>

#include "gt/core/dtype.h"
#include "gt/core/shape.h"
#include "libgtcore/payload_frame.h"

namespace gt {
namespace {

constexpr uint32_t kTensorField = 3;  // Reply.tensor
constexpr uint32_t kDataField = 5;    // TensorData.data

}  // namespace

Result<ReplyPayloadScanResult> scan_reply_payload(std::string_view prefix, size_t body_size,
                                                  uint32_t reply_field) {
  const PayloadChainLevel chain[] = {{reply_field}, {kTensorField}};
  auto scan = scan_payload_frame(prefix, body_size, chain, {kDataField});
  if (!scan.is_ok()) return scan.status();
  ReplyPayloadScanResult r;
  r.state = scan->state;
  const PayloadFrameLayout& l = scan->layout;
  r.layout.reply_fields_begin = l.fields_begin[0];
  r.layout.reply_fields_end = l.fields_end[0];
  r.layout.tensor_fields_begin = l.fields_begin[1];
  r.layout.tensor_fields_end = l.fields_end[1];
  r.layout.payload_begin = l.payload_begin;
  r.layout.payload_bytes = l.payload_bytes;
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
