// The frame codec: a FrameDecoder fed in random-sized pieces must produce exactly the frames
// (and the error) of the same bytes fed at once; every frame is parsed as each envelope, and a
// parsed message must survive a re-frame / re-decode / re-parse round trip unchanged.
#include <string>
#include <vector>

#include "libgtcore/frame_codec.h"
#include "libgtcore/instr_codec.h"
#include "proto/gt.pb.h"
#include "tests/fuzz/harness.h"

namespace gt::fuzz {

namespace {

// Takes every complete frame out; true when the decoder reported an error.
bool drain(FrameDecoder& d, std::vector<std::string>& frames) {
  while (true) {
    auto f = d.next();
    if (!f.is_ok()) return true;
    if (!f->has_value()) return false;
    frames.emplace_back(**f);
  }
}

void check_instrs(const google::protobuf::RepeatedPtrField<v1::Instr>& instrs) {
  for (const auto& in : instrs) (void)decode_instr(in);
}

template <class M>
void round_trip(std::string_view body) {
  M m;
  if (!parse_frame(body, &m).is_ok()) return;
  std::string framed;
  Status st = append_frame(&framed, m, 0xffffffffull);
  GT_FUZZ_CHECK(st.is_ok(), "re-framing a parsed %s failed: %s", m.GetTypeName().c_str(),
                st.message().c_str());
  FrameDecoder d(0xffffffffull);
  d.append(framed);
  auto f = d.next();
  GT_FUZZ_CHECK(f.is_ok() && f->has_value(), "a re-framed %s did not decode",
                m.GetTypeName().c_str());
  GT_FUZZ_CHECK(d.buffered() == 0, "bytes left after one frame");
  std::string body2(**f);
  M m2;
  GT_FUZZ_CHECK(parse_frame(body2, &m2).is_ok(), "a re-framed %s did not parse",
                m.GetTypeName().c_str());
  GT_FUZZ_CHECK(m2.SerializeAsString() == body2, "%s changed in a round trip",
                m.GetTypeName().c_str());
  if constexpr (std::is_same_v<M, v1::ClientMessage>) {
    if (m.has_batch()) check_instrs(m.batch().instrs());
  } else if constexpr (std::is_same_v<M, v1::DispatchMessage>) {
    if (m.has_batch()) check_instrs(m.batch().instrs());
  }
}

}  // namespace

void run_frame_codec(const uint8_t* data, size_t size) {
  if (size == 0) return;
  static constexpr uint64_t kLimits[4] = {16, 300, 4096, kFuzzMaxFrameBytes};
  const uint64_t limit = kLimits[data[0] & 3];
  uint32_t rng = static_cast<uint32_t>(data[0] >> 2) * 2654435761u + 1;
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);

  FrameDecoder whole(limit);
  whole.append(stream);
  std::vector<std::string> want;
  const bool want_error = drain(whole, want);

  FrameDecoder pieces(limit);
  std::vector<std::string> got;
  bool error = false;
  size_t off = 0;
  while (off < stream.size() && !error) {
    rng = rng * 1103515245u + 12345u;
    const uint32_t r = rng >> 8;
    size_t n = (r & 0x100) ? 1 + (r & 7) : 1 + (r % 1024);
    n = std::min(n, stream.size() - off);
    if (r & 0x200) {
      pieces.append(stream.substr(off, n));
    } else {  // the socket path: prepare room, write into it, commit
      char* p = pieces.prepare(n);
      GT_FUZZ_CHECK(pieces.prepared_size() >= n, "prepare gave less room than asked");
      std::memcpy(p, stream.data() + off, n);
      pieces.commit(n);
    }
    off += n;
    error = drain(pieces, got);
  }
  GT_FUZZ_CHECK(error == want_error, "piecewise decoding %s where whole decoding %s",
                error ? "failed" : "succeeded", want_error ? "failed" : "succeeded");
  GT_FUZZ_CHECK(got == want, "piecewise decoding gave %zu frames, whole decoding %zu",
                got.size(), want.size());
  size_t consumed = 0;
  for (const auto& f : got) {
    GT_FUZZ_CHECK(f.size() <= limit, "a frame of %zu bytes passed a limit of %llu", f.size(),
                  static_cast<unsigned long long>(limit));
    consumed += kFrameHeaderBytes + f.size();
  }
  GT_FUZZ_CHECK(consumed <= stream.size(), "decoded more bytes than were fed");
  if (!error)
    GT_FUZZ_CHECK(pieces.buffered() == stream.size() - consumed,
                  "buffered %zu bytes, expected %zu", pieces.buffered(), stream.size() - consumed);

  for (const auto& body : got) {
    round_trip<v1::ClientMessage>(body);
    round_trip<v1::ServerMessage>(body);
    round_trip<v1::WorkerMessage>(body);
    round_trip<v1::DispatchMessage>(body);
  }
}

}  // namespace gt::fuzz
