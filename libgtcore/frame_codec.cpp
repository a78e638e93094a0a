#include "libgtcore/frame_codec.h"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <cstring>
#include <new>

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

Status merge_frame(std::string_view body, google::protobuf::MessageLite* msg) {
  if (body.size() > static_cast<size_t>(INT32_MAX))
    return invalid_argument("frame too large to parse");
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(body.data()),
                                            static_cast<int>(body.size()));
  if (!msg->MergeFromCodedStream(&in) || !in.ConsumedEntireMessage())
    return data_loss("malformed {} frame ({} bytes)", msg->GetTypeName(), body.size());
  return Status::ok();
}

namespace {
// A buffer over this size that is more than four times what is needed (a large frame has been
// taken out) is shrunk, unless the frame now arriving is itself that large.
constexpr size_t kShrinkAbove = size_t{1} << 20;
}  // namespace

void FrameDecoder::compact() {
  if (begin_ == 0) return;
  if (begin_ == end_) {
    begin_ = end_ = 0;
    return;
  }
  std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
}

void FrameDecoder::reallocate(size_t cap) {
  compact();
  if (cap < end_) cap = end_;
  // realloc, not new + copy: large blocks are moved by remapping pages, and the new room is
  // left uninitialized (not touched, so not resident until bytes arrive).
  char* p = static_cast<char*>(std::realloc(buf_.get(), cap > 0 ? cap : 1));
  if (!p) throw std::bad_alloc();
  (void)buf_.release();  // realloc took the old block
  buf_.reset(p);
  cap_ = cap;
}

char* FrameDecoder::prepare(size_t min_bytes) {
  const size_t have = buffered();
  size_t want = min_bytes;
  // The rest of a frame whose (allowed) length is known: offer room for up to all of it in one
  // read, but grow by at most what has arrived so far, never by the declared length alone.
  if (frame_total_ > have) want = std::max(min_bytes, std::min(frame_total_ - have, have));
  if (cap_ > std::max(kShrinkAbove, retain_bytes_) && cap_ / 4 > have + want &&
      frame_total_ <= cap_ / 4) {
    reallocate(std::max(have + want, retain_bytes_));  // give back what a large frame needed
  } else if (cap_ - end_ < want) {
    if (cap_ - have >= want) compact();
    else reallocate(std::max(have + want, cap_ + cap_ / 2));
  }
  return buf_.get() + end_;
}

void FrameDecoder::release_unused(size_t keep_room) {
  const size_t have = buffered();
  size_t want = keep_room;
  if (frame_total_ > have) want = std::max(keep_room, std::min(frame_total_ - have, have));
  if (cap_ <= retain_bytes_) return;
  if (cap_ / 2 > have + want) reallocate(std::max(have + want, retain_bytes_));
}

void FrameDecoder::append(std::string_view bytes) {
  if (bytes.empty()) return;
  char* p = prepare(bytes.size());
  std::memcpy(p, bytes.data(), bytes.size());
  commit(bytes.size());
}

Result<std::optional<std::string_view>> FrameDecoder::next() {
  size_t avail = end_ - begin_;
  if (avail < kFrameHeaderBytes) {
    frame_total_ = 0;
    if (avail == 0) begin_ = end_ = 0;
    return std::optional<std::string_view>{};
  }
  const auto* p = reinterpret_cast<const uint8_t*>(buf_.get() + begin_);
  uint64_t len = static_cast<uint64_t>(p[0]) | (static_cast<uint64_t>(p[1]) << 8) |
                 (static_cast<uint64_t>(p[2]) << 16) | (static_cast<uint64_t>(p[3]) << 24);
  if (len > max_frame_bytes_) {
    frame_total_ = 0;
    return resource_exhausted("frame of {} bytes exceeds the maximum of {}", len,
                              max_frame_bytes_);
  }
  if (avail < kFrameHeaderBytes + len) {
    // Allowed and incomplete: prepare() makes room as its bytes arrive.
    frame_total_ = static_cast<size_t>(kFrameHeaderBytes + len);
    return std::optional<std::string_view>{};
  }
  frame_total_ = 0;
  std::string_view body(buf_.get() + begin_ + kFrameHeaderBytes, len);
  begin_ += kFrameHeaderBytes + len;
  return std::optional<std::string_view>{body};
}

}  // namespace gt
