#include "libgtcore/frame_gather.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream.h>

#include "libgtcore/frame_codec.h"

namespace gt {

// The output stream protobuf serializes into: buffers carved from copied_, and aliased fields
// recorded as runs of their own (a small one is copied after all).
class FrameParts::Stream final : public google::protobuf::io::ZeroCopyOutputStream {
 public:
  explicit Stream(FrameParts& f) : f_(f) {}

  bool Next(void** data, int* size) override {
    constexpr size_t kChunk = 4096;
    const size_t at = f_.copied_.size();
    f_.copied_.resize(at + kChunk);  // (protobuf keeps no pointer into an earlier buffer)
    *data = f_.copied_.data() + at;
    *size = static_cast<int>(kChunk);
    count_ += kChunk;
    return true;
  }
  void BackUp(int count) override {
    f_.copied_.resize(f_.copied_.size() - static_cast<size_t>(count));
    count_ -= static_cast<size_t>(count);
  }
  int64_t ByteCount() const override { return static_cast<int64_t>(count_); }
  bool AllowsAliasing() const override { return true; }
  bool WriteAliasedRaw(const void* data, int size) override {
    const auto n = static_cast<size_t>(size);
    if (n < kAliasBytes) {
      f_.copied_.append(static_cast<const char*>(data), n);
    } else {
      close_copied_run();
      f_.runs_.push_back(Run{true, 0, 0, std::string_view(static_cast<const char*>(data), n)});
      f_.aliased_ += n;
    }
    count_ += n;
    return true;
  }
  // The copied bytes since the last run become a run.
  void close_copied_run() {
    if (f_.copied_.size() > copied_mark_)
      f_.runs_.push_back(Run{false, copied_mark_, f_.copied_.size() - copied_mark_, {}});
    copied_mark_ = f_.copied_.size();
  }

 private:
  FrameParts& f_;
  size_t count_ = 0;
  size_t copied_mark_ = 0;
};

Status FrameParts::build(const google::protobuf::MessageLite& msg, uint64_t max_frame_bytes) {
  if (copied_.capacity() > (64u << 20)) std::string().swap(copied_);  // after a huge frame
  copied_.clear();
  runs_.clear();
  parts_.clear();
  aliased_ = 0;
  const size_t n = msg.ByteSizeLong();
  if (n > max_frame_bytes || n > 0xffffffffull)
    return resource_exhausted("frame of {} bytes exceeds the maximum of {}", n, max_frame_bytes);
  const auto len = static_cast<uint32_t>(n);
  const char header[kFrameHeaderBytes] = {
      static_cast<char>(len & 0xff), static_cast<char>((len >> 8) & 0xff),
      static_cast<char>((len >> 16) & 0xff), static_cast<char>((len >> 24) & 0xff)};
  copied_.assign(header, kFrameHeaderBytes);
  Stream stream(*this);  // (the header starts the first copied run)
  bool failed = false;
  {
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.EnableAliasing(true);
    msg.SerializeWithCachedSizes(&coded);
    failed = coded.HadError();
  }  // (destroyed: what it buffered is in the stream, its unused room backed up)
  if (failed) return internal_error("protobuf serialization failed");
  stream.close_copied_run();
  bytes_ = 0;
  for (const Run& r : runs_) {
    parts_.push_back(r.aliased ? r.field : std::string_view(copied_.data() + r.begin, r.size));
    bytes_ += parts_.back().size();
  }
  if (bytes_ != kFrameHeaderBytes + n)
    return internal_error("frame of {} bytes serialized as {}", kFrameHeaderBytes + n, bytes_);
  return Status::ok();
}

}  // namespace gt
