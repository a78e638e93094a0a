// FrameParts (libgtcore/frame_gather.h): a message's frame as parts for scatter-gather I/O. The
// parts, concatenated, are append_frame()'s frame byte for byte; bytes fields of at least
// kAliasBytes are referenced in the message (the same addresses), smaller ones copied; a frame
// over the limit is refused.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "libgtcore/frame_codec.h"
#include "libgtcore/frame_gather.h"
#include "proto/gt.pb.h"

using namespace gt;

namespace {

// A client batch with uploads of these payload sizes (each filled with its own byte pattern)
// between ordinary fields.
v1::ClientMessage batch_with(const std::vector<size_t>& payloads) {
  v1::ClientMessage m;
  v1::ClientBatch* b = m.mutable_batch();
  for (size_t i = 0; i < payloads.size(); ++i) {
    v1::Instr* in = b->add_instrs();
    in->set_op(7);
    in->set_out(100 + i);
    in->add_inputs(i);
    std::string data(payloads[i], '\0');
    for (size_t k = 0; k < data.size(); ++k) data[k] = static_cast<char>((k * 131 + i) & 0xff);
    in->set_data(std::move(data));
    b->add_frees(i);
  }
  auto* r = b->add_requests();
  r->set_request_id(9);
  r->set_kind(v1::Request::SYNC);
  return m;
}

std::string joined(const FrameParts& f) {
  std::string s;
  for (std::string_view p : f.parts()) s.append(p);
  return s;
}

}  // namespace

TEST_CASE("a frame's parts are append_frame's frame, large payloads are referenced in place",
          "[frame][gather]") {
  const std::vector<size_t> sizes = {10, FrameParts::kAliasBytes - 1, FrameParts::kAliasBytes,
                                     5 << 20, 0, 100, 300 << 10};
  const v1::ClientMessage m = batch_with(sizes);
  std::string want;
  REQUIRE(append_frame(&want, m, 1ull << 30).is_ok());
  FrameParts f;
  REQUIRE(f.build(m, 1ull << 30).is_ok());
  CHECK(f.bytes() == want.size());
  CHECK(joined(f) == want);
  // The three payloads of at least kAliasBytes are parts of their own, at the message's own
  // addresses; everything else was copied.
  std::vector<const char*> aliased;
  for (size_t i = 0; i < f.parts().size(); ++i)
    if (f.aliased(i)) aliased.push_back(f.parts()[i].data());
  REQUIRE(aliased.size() == 3);
  CHECK(aliased[0] == m.batch().instrs(2).data().data());
  CHECK(aliased[1] == m.batch().instrs(3).data().data());
  CHECK(aliased[2] == m.batch().instrs(6).data().data());
  CHECK(f.aliased_bytes() == FrameParts::kAliasBytes + (5u << 20) + (300u << 10));
  // Built again (buffers reused) from a message without payloads: one copied run.
  const v1::ClientMessage small = batch_with({1, 2, 3});
  want.clear();
  REQUIRE(append_frame(&want, small).is_ok());
  REQUIRE(f.build(small, kDefaultMaxFrameBytes).is_ok());
  CHECK(f.parts().size() == 1);
  CHECK(f.aliased_bytes() == 0);
  CHECK(joined(f) == want);
}

TEST_CASE("a frame over the limit is refused", "[frame][gather]") {
  const v1::ClientMessage m = batch_with({2 << 20});
  FrameParts f;
  const Status st = f.build(m, 1 << 20);
  CHECK(st.code() == Code::kResourceExhausted);
  CHECK(st.message().find("exceeds the maximum") != std::string::npos);
}
