// Framing: round trips of real messages, every split of a byte stream, size limits enforced
// before allocation, malformed bodies.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "libgtcore/frame_codec.h"
#include "gt/core/ops.h"
#include "proto/gt.pb.h"
#include "require_ok.h"

using namespace gt;

namespace {

v1::ClientMessage hello_msg() {
  v1::ClientMessage m;
  auto* h = m.mutable_hello();
  h->set_proto_major(1);
  h->set_proto_minor(3);
  h->set_op_table_hash(op_table_hash());
  h->set_role(v1::ROLE_CLIENT);
  h->mutable_credentials()->set_user("alice");
  h->mutable_credentials()->set_token("t0k3n");
  h->set_client_name("train.py");
  return m;
}

v1::ClientMessage batch_msg() {
  v1::ClientMessage m;
  auto* b = m.mutable_batch();
  for (int i = 0; i < 3; ++i) {
    auto* in = b->add_instrs();
    in->set_op(16 + i);
    in->set_out(100 + i);
    in->add_inputs(1);
    in->add_inputs(2);
    in->set_dtype(v1::FLOAT16);
    in->add_ints(-5);
    in->add_reals(0.25 * i);
  }
  b->add_frees(7);
  b->add_frees(8);
  auto* r = b->add_requests();
  r->set_request_id(9);
  r->set_kind(v1::Request::FETCH);
  r->set_id(101);
  return m;
}

v1::ServerMessage reply_msg(size_t nbytes) {
  v1::ServerMessage m;
  auto* r = m.mutable_reply();
  r->set_request_id(9);
  r->set_last(true);
  auto* t = r->mutable_tensor();
  t->add_shape(static_cast<int64_t>(nbytes / 4));
  t->set_dtype(v1::FLOAT32);
  t->set_total_bytes(nbytes);
  std::string data(nbytes, '\0');
  for (size_t i = 0; i < nbytes; ++i) data[i] = static_cast<char>(i * 7 + 3);
  t->set_data(data);
  auto* e = r->add_errors();
  e->set_op("matmul");
  e->set_message("shapes [2, 3] and [4, 5] cannot be multiplied");
  e->set_origin("worker 0");
  return m;
}

v1::WorkerMessage ack_msg() {
  v1::WorkerMessage m;
  m.mutable_ack()->set_executed_seq(0x123456789abcull);
  return m;
}

v1::DispatchMessage dispatch_msg() {
  v1::DispatchMessage m;
  auto* b = m.mutable_batch();
  b->set_session(3);
  b->set_first_seq(1000);
  b->set_end_session(true);
  b->add_instrs()->set_op(64);
  return m;
}

// The stream used by the split tests: its frames' bodies, in order.
struct Stream {
  std::string bytes;
  std::vector<std::string> bodies;
};

Stream make_stream() {
  Stream s;
  std::vector<const google::protobuf::MessageLite*> msgs;
  static const auto m1 = hello_msg();
  static const auto m2 = batch_msg();
  static const v1::ClientMessage empty;
  static const auto m3 = reply_msg(300);
  static const auto m4 = ack_msg();
  static const auto m5 = dispatch_msg();
  for (const google::protobuf::MessageLite* m :
       std::vector<const google::protobuf::MessageLite*>{&m1, &m2, &empty, &m3, &m4, &empty, &m5}) {
    GT_REQUIRE_OK(append_frame(&s.bytes, *m));
    s.bodies.push_back(m->SerializeAsString());
  }
  return s;
}

// Takes every complete frame out of the decoder (copying: views die on the next call).
void drain(FrameDecoder& d, std::vector<std::string>* out) {
  for (;;) {
    auto r = d.next();
    GT_REQUIRE_OK(r);
    if (!r->has_value()) return;
    out->emplace_back(**r);
  }
}

}  // namespace

TEST_CASE("append_frame writes a little-endian length and the serialized message", "[frame]") {
  auto m = reply_msg(1000);
  std::string out = "prefix";
  GT_REQUIRE_OK(append_frame(&out, m));
  REQUIRE(out.size() == 6 + 4 + m.ByteSizeLong());
  const auto* p = reinterpret_cast<const uint8_t*>(out.data() + 6);
  uint32_t len = p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
  CHECK(len == m.ByteSizeLong());
  CHECK(len > 1000);
  CHECK(out.substr(0, 6) == "prefix");
  CHECK(out.substr(10) == m.SerializeAsString());
}

TEST_CASE("frames round-trip through the decoder", "[frame]") {
  Stream s = make_stream();
  FrameDecoder d;
  d.append(s.bytes);
  std::vector<std::string> got;
  drain(d, &got);
  REQUIRE(got == s.bodies);
  CHECK(d.buffered() == 0);

  v1::ClientMessage hello, batch, empty;
  v1::ServerMessage reply;
  v1::WorkerMessage ack;
  v1::DispatchMessage disp;
  GT_REQUIRE_OK(parse_frame(got[0], &hello));
  GT_REQUIRE_OK(parse_frame(got[1], &batch));
  GT_REQUIRE_OK(parse_frame(got[2], &empty));
  GT_REQUIRE_OK(parse_frame(got[3], &reply));
  GT_REQUIRE_OK(parse_frame(got[4], &ack));
  GT_REQUIRE_OK(parse_frame(got[6], &disp));
  CHECK(hello.hello().credentials().user() == "alice");
  CHECK(hello.hello().op_table_hash() == op_table_hash());
  CHECK(hello.hello().role() == v1::ROLE_CLIENT);
  CHECK(batch.batch().instrs_size() == 3);
  CHECK(batch.batch().instrs(2).op() == 18);
  CHECK(batch.batch().instrs(2).reals(0) == 0.5);
  CHECK(batch.batch().requests(0).kind() == v1::Request::FETCH);
  CHECK(empty.kind_case() == v1::ClientMessage::KIND_NOT_SET);
  CHECK(reply.reply().tensor().data() == reply_msg(300).reply().tensor().data());
  CHECK(reply.reply().errors(0).op() == "matmul");
  CHECK(ack.ack().executed_seq() == 0x123456789abcull);
  CHECK(disp.batch().end_session());
  CHECK(disp.batch().instrs(0).op() == 64);
}

TEST_CASE("a stream fed one byte at a time gives the same frames", "[frame]") {
  Stream s = make_stream();
  SECTION("append") {
    FrameDecoder d;
    std::vector<std::string> got;
    for (char c : s.bytes) {
      d.append(std::string_view(&c, 1));
      drain(d, &got);
    }
    CHECK(got == s.bodies);
    CHECK(d.buffered() == 0);
  }
  SECTION("prepare/commit") {
    FrameDecoder d;
    std::vector<std::string> got;
    for (char c : s.bytes) {
      char* p = d.prepare(1);
      REQUIRE(d.prepared_size() >= 1);
      *p = c;
      d.commit(1);
      drain(d, &got);
    }
    CHECK(got == s.bodies);
  }
}

TEST_CASE("a stream split at every byte boundary gives the same frames", "[frame]") {
  Stream s = make_stream();
  for (size_t k = 0; k <= s.bytes.size(); ++k) {
    FrameDecoder d;
    std::vector<std::string> got;
    d.append(std::string_view(s.bytes).substr(0, k));
    drain(d, &got);
    d.append(std::string_view(s.bytes).substr(k));
    drain(d, &got);
    if (got != s.bodies) FAIL("split at byte " << k << " of " << s.bytes.size());
  }
  SUCCEED();
}

TEST_CASE("large frames in random-sized reads", "[frame]") {
  std::string bytes;
  std::vector<std::string> bodies;
  for (size_t n : {300000u, 10u, 70000u}) {
    auto m = reply_msg(n);
    GT_REQUIRE_OK(append_frame(&bytes, m));
    bodies.push_back(m.SerializeAsString());
  }
  std::mt19937 rng(7);
  std::uniform_int_distribution<size_t> chunk(1, 20000);
  FrameDecoder d;
  std::vector<std::string> got;
  for (size_t at = 0; at < bytes.size();) {
    size_t n = std::min(chunk(rng), bytes.size() - at);
    char* p = d.prepare(n);
    std::memcpy(p, bytes.data() + at, n);
    d.commit(n);
    at += n;
    drain(d, &got);
  }
  CHECK(got == bodies);
}

TEST_CASE("zero-length frames", "[frame]") {
  std::string bytes;
  GT_REQUIRE_OK(append_frame(&bytes, v1::ClientMessage{}));
  CHECK(bytes == std::string(4, '\0'));
  bytes += std::string(4, '\0');  // a second empty frame written by hand
  auto m = ack_msg();
  GT_REQUIRE_OK(append_frame(&bytes, m));
  FrameDecoder d;
  d.append(bytes);
  std::vector<std::string> got;
  drain(d, &got);
  REQUIRE(got.size() == 3);
  CHECK(got[0].empty());
  CHECK(got[1].empty());
  v1::WorkerMessage w;
  GT_REQUIRE_OK(parse_frame(got[0], &w));
  CHECK(w.kind_case() == v1::WorkerMessage::KIND_NOT_SET);
  GT_REQUIRE_OK(parse_frame(got[2], &w));
  CHECK(w.ack().executed_seq() == m.ack().executed_seq());
}

TEST_CASE("an oversized length is refused before anything is allocated", "[frame]") {
  const uint64_t max = 1 << 20;
  SECTION("a header claiming 4 GiB") {
    FrameDecoder d(max);
    d.append("\xff\xff\xff\xff");
    size_t room = d.prepared_size();
    auto r = d.next();
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == Code::kResourceExhausted);
    CHECK_THAT(r.status().message(), Catch::Contains("4294967295"));
    CHECK(d.prepared_size() == room);  // the buffer did not grow
    CHECK(d.prepared_size() < 1024);
    CHECK(d.buffered() == 4);
  }
  SECTION("one byte over the maximum") {
    FrameDecoder d(max);
    uint32_t len = max + 1;
    char h[4] = {static_cast<char>(len), static_cast<char>(len >> 8), static_cast<char>(len >> 16),
                 static_cast<char>(len >> 24)};
    d.append(std::string_view(h, 4));
    size_t room = d.prepared_size();
    auto r = d.next();
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == Code::kResourceExhausted);
    CHECK(d.prepared_size() == room);
  }
  SECTION("exactly the maximum is accepted, and room grows only as its bytes arrive") {
    FrameDecoder d(max);
    uint32_t len = max;
    char h[4] = {static_cast<char>(len), static_cast<char>(len >> 8), static_cast<char>(len >> 16),
                 static_cast<char>(len >> 24)};
    d.append(std::string_view(h, 4));
    auto r = d.next();
    GT_REQUIRE_OK(r);
    CHECK_FALSE(r->has_value());
    d.prepare(1024);
    CHECK(d.capacity() < 8 * 1024);  // the declared length alone reserves nothing
    d.append(std::string(max, 'x'));
    r = d.next();
    GT_REQUIRE_OK(r);
    REQUIRE(r->has_value());
    CHECK((*r)->size() == max);
  }
  SECTION("append_frame refuses a message over the maximum and leaves the output alone") {
    std::string out = "abc";
    auto m = reply_msg(2000);
    Status st = append_frame(&out, m, 1024);
    CHECK(st.code() == Code::kResourceExhausted);
    CHECK(out == "abc");
    GT_CHECK_OK(append_frame(&out, m, m.ByteSizeLong()));
  }
  SECTION("the maximum can be lowered on a live decoder") {
    FrameDecoder d;
    CHECK(d.max_frame_bytes() == kDefaultMaxFrameBytes);
    d.set_max_frame_bytes(16);
    std::string bytes;
    GT_REQUIRE_OK(append_frame(&bytes, hello_msg()));  // > 16 bytes
    d.append(bytes);
    CHECK_FALSE(d.next().is_ok());
  }
}

TEST_CASE("garbage bodies are a parse_frame error, not a crash", "[frame]") {
  const std::vector<std::string> garbage = {
      std::string("\x0a\x05" "ab", 4),                       // hello: length 5, 2 bytes follow
      std::string("\x00", 1),                                // field number 0
      std::string(11, '\xff'),                               // varint longer than 10 bytes
      std::string("\x12\x80\x80\x80\x80\x10", 6),            // batch: 4 GiB length
      std::string("\x0b", 1),                                // unterminated group
      std::string("\x0a\x03\x08\x80", 4),                    // hello: truncated varint inside
  };
  for (const auto& g : garbage) {
    v1::ClientMessage m;
    Status st = parse_frame(g, &m);
    INFO("body of " << g.size() << " bytes");
    CHECK_FALSE(st.is_ok());
    CHECK(st.code() == Code::kDataLoss);
  }
  // A garbage frame in the middle of a stream does not disturb the frames around it.
  std::string bytes;
  GT_REQUIRE_OK(append_frame(&bytes, ack_msg()));
  bytes += std::string("\x02\x00\x00\x00\x0a\x05", 6);
  GT_REQUIRE_OK(append_frame(&bytes, ack_msg()));
  FrameDecoder d;
  d.append(bytes);
  std::vector<std::string> got;
  drain(d, &got);
  REQUIRE(got.size() == 3);
  v1::WorkerMessage w;
  GT_CHECK_OK(parse_frame(got[0], &w));
  CHECK_FALSE(parse_frame(got[1], &w).is_ok());
  GT_CHECK_OK(parse_frame(got[2], &w));
  CHECK(w.ack().executed_seq() == 0x123456789abcull);
}

namespace {
std::string header_for(uint32_t len) {
  char h[4] = {static_cast<char>(len), static_cast<char>(len >> 8), static_cast<char>(len >> 16),
               static_cast<char>(len >> 24)};
  return std::string(h, 4);
}
}  // namespace

TEST_CASE("the decoder's buffer follows the bytes received, not the declared length",
          "[frame][memory]") {
  const uint32_t len = 64u << 20;  // a frame of the default maximum
  FrameDecoder d(len);
  d.set_retain_bytes(0);  // as a dispatcher's client connection
  d.append(header_for(len));
  GT_REQUIRE_OK(d.next());
  SECTION("a header alone costs a few KiB however often room is asked for") {
    for (int i = 0; i < 100; ++i) d.prepare(4096);
    CHECK(d.capacity() < 16 * 1024);
    CHECK(d.buffered() == 4);
  }
  SECTION("as the body arrives, room at most doubles what is buffered") {
    size_t sent = 0, reads = 0;
    std::optional<size_t> body;
    while (!body) {
      const size_t have = d.buffered();
      char* p = d.prepare(4096);
      INFO("buffered " << have << ", capacity " << d.capacity());
      REQUIRE(d.prepared_size() >= 4096);
      REQUIRE(d.capacity() <= 2 * have + 3 * 4096);
      const size_t n = std::min<size_t>(d.prepared_size(), len - sent);  // a read that fills it
      std::memset(p, 'y', n);
      d.commit(n);
      sent += n;
      ++reads;
      auto r = d.next();
      GT_REQUIRE_OK(r);
      if (r->has_value()) body = (*r)->size();
    }
    CHECK(*body == len);
    CHECK(reads < 40);  // geometric growth: few reads, not len / 4096
    // Taken out: the next prepare gives the large buffer back.
    d.prepare(4096);
    CHECK(d.capacity() < 64 * 1024);
  }
  SECTION("a second large frame already announced keeps the buffer") {
    d.append(std::string(len, 'z'));
    d.append(header_for(len));
    auto r = d.next();
    GT_REQUIRE_OK(r);
    REQUIRE(r->has_value());
    GT_REQUIRE_OK(d.next());  // sees the second header
    const size_t cap = d.capacity();
    d.prepare(4096);
    CHECK(d.capacity() == cap);
  }
}

TEST_CASE("a decoder retains up to retain_bytes between large frames", "[frame][memory]") {
  FrameDecoder d;  // the default: 8 MiB retained
  auto one_frame = [&](uint32_t len) {
    d.append(header_for(len) + std::string(len, 'r'));
    auto r = d.next();
    GT_REQUIRE_OK(r);
    REQUIRE(r->has_value());
    CHECK((*r)->size() == len);
    d.prepare(64 * 1024);
  };
  one_frame(4u << 20);
  const size_t cap = d.capacity();
  CHECK(cap >= (4u << 20));
  one_frame(4u << 20);
  CHECK(d.capacity() == cap);  // kept: no reallocation for the next large frame
  one_frame(32u << 20);
  CHECK(d.capacity() <= FrameDecoder::kDefaultRetainBytes);  // beyond it: shrunk back
  d.release_unused(4096);  // never below what is retained
  CHECK(d.capacity() >= (4u << 20));
}

TEST_CASE("release_unused shrinks a buffer left large by earlier traffic", "[frame][memory]") {
  FrameDecoder d;
  d.set_retain_bytes(0);
  char* p = d.prepare(256 * 1024);
  std::memset(p, 0, 100);
  d.commit(100);  // a partial frame: 100 bytes of a small one
  const size_t before = d.capacity();
  REQUIRE(before >= 256 * 1024);
  d.release_unused(4096);
  CHECK(d.capacity() < 8 * 1024);
  CHECK(d.buffered() == 100);
  d.release_unused(4096);  // already small: unchanged
  CHECK(d.capacity() < 8 * 1024);
}
