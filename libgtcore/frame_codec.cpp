#include "libgtcore/frame_codec.h"

#include <cstring>

namespace gt {

Status append_frame(std::string* out, const google::protobuf::MessageLite& msg,
                    uint64_t max_frame_bytes) {
  size_t n = msg.ByteSizeLong();
  if (n > max_frame_bytes || n > 0xffffffffull)
    return resource_exhausted("frame of {} bytes exceeds the maximum of {}", n, max_frame_bytes);
  size_t at = out->size();
  out->resize(at + kFrameHeaderBytes + n);
  auto* p = reinterpret_cast<uint8_t*>(out->data() + at);
  uint32_t len = static_cast<uint32_t>(n);
  p[0] = len & 0xff;
  p[1] = (len >> 8) & 0xff;
  p[2] = (len >> 16) & 0xff;
  p[3] = (len >> 24) & 0xff;
  if (!msg.SerializeWithCachedSizesToArray(p + kFrameHeaderBytes) && n > 0)
    return internal_error("protobuf serialization failed");
  return Status::ok();
}

Status parse_frame(std::string_view body, google::protobuf::MessageLite* msg) {
  if (body.size() > static_cast<size_t>(INT32_MAX))
    return invalid_argument("frame too large to parse");
  if (!msg->ParseFromArray(body.data(), static_cast<int>(body.size())))
    return data_loss("malformed {} frame ({} bytes)", msg->GetTypeName(), body.size());
  return Status::ok();
}

void FrameDecoder::compact() {
  if (begin_ == 0) return;
  if (begin_ == end_) {
    begin_ = end_ = 0;
    return;
  }
  std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
}

char* FrameDecoder::prepare(size_t min_bytes) {
  if (buf_.size() - end_ < min_bytes) {
    compact();
    if (buf_.size() - end_ < min_bytes) buf_.resize(end_ + min_bytes);
  }
  return buf_.data() + end_;
}

void FrameDecoder::append(std::string_view bytes) {
  char* p = prepare(bytes.size());
  std::memcpy(p, bytes.data(), bytes.size());
  commit(bytes.size());
}

Result<std::optional<std::string_view>> FrameDecoder::next() {
  size_t avail = end_ - begin_;
  if (avail < kFrameHeaderBytes) {
    compact();
    return std::optional<std::string_view>{};
  }
  const auto* p = reinterpret_cast<const uint8_t*>(buf_.data() + begin_);
  uint64_t len = static_cast<uint64_t>(p[0]) | (static_cast<uint64_t>(p[1]) << 8) |
                 (static_cast<uint64_t>(p[2]) << 16) | (static_cast<uint64_t>(p[3]) << 24);
  if (len > max_frame_bytes_)
    return resource_exhausted("frame of {} bytes exceeds the maximum of {}", len,
                              max_frame_bytes_);
  if (avail < kFrameHeaderBytes + len) {
    // Make room for the rest of this frame now that its size is known and allowed.
    compact();
    if (buf_.size() < kFrameHeaderBytes + len) buf_.resize(kFrameHeaderBytes + len);
    return std::optional<std::string_view>{};
  }
  std::string_view body(buf_.data() + begin_ + kFrameHeaderBytes, len);
  begin_ += kFrameHeaderBytes + len;
  return std::optional<std::string_view>{body};
}

}  // namespace gt
