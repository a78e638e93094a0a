// FramedConnection's write queue: frames and large payloads (send_parts) queued in one turn leave
// in order and intact, whether a payload goes to the socket at once, is sealed into a buffer of
// its own (>= kSealBytes) or appended; messages sent with send_owned leave their payloads in
// the message, kept alive until written; pending_bytes() counts all of it until it is written.
#include <catch2/catch.hpp>

#include <sys/socket.h>

#include <chrono>
#include <string>
#include <vector>

#include "libgtcore/frame_codec.h"
#include "framed_pair.h"
#include "libgtcore/framed_connection.h"
#include "proto/gt.pb.h"

using namespace gt;
using Pair = gt::test::FramedPair;

namespace {

// A frame holding a Refusal whose reason is `text` (any message would do).
v1::DispatchMessage frame_of(const std::string& text) {
  v1::DispatchMessage m;
  m.mutable_refusal()->set_reason(text);
  return m;
}

// send_parts' header for a frame whose body is `body` minus its last `payload` bytes.
std::string header_for(const std::string& body, size_t payload) {
  std::string h;
  const auto len = static_cast<uint32_t>(body.size());
  h.push_back(static_cast<char>(len & 0xff));
  h.push_back(static_cast<char>((len >> 8) & 0xff));
  h.push_back(static_cast<char>((len >> 16) & 0xff));
  h.push_back(static_cast<char>((len >> 24) & 0xff));
  h.append(body, 0, body.size() - payload);
  return h;
}

}  // namespace

TEST_CASE("frames and large payloads queued together arrive in order, intact", "[framing]") {
  Pair p;
  auto& a = p.a;
  auto& b = p.b;
  std::vector<std::string> got;
  b->start(
      [&](std::string_view body) {
        v1::DispatchMessage m;
        REQUIRE(m.ParseFromArray(body.data(), static_cast<int>(body.size())));
        got.push_back(m.refusal().reason());
      },
      [](const Status&) {});
  a->start([](std::string_view) {}, [](const Status&) {});
  std::vector<std::string> sent;
  size_t queued = 0;
  auto small = [&](const std::string& text) {
    REQUIRE(a->send(frame_of(text)).is_ok());
    sent.push_back(text);
  };
  auto large = [&](size_t n, char fill) {
    std::string text(n, fill);
    text[n / 2] = 'M';
    const std::string body = frame_of(text).SerializeAsString();
    // The payload: the reason's bytes, the frame's tail (the reason is its only field).
    REQUIRE(a->send_parts(header_for(body, n), std::string_view(body).substr(body.size() - n)).is_ok());
    sent.push_back(text);
    queued += n;
  };
  // The first payload goes to the socket at once (nothing before it); the rest are queued behind
  // frames, sealed (>= 1 MiB) or appended (< 1 MiB), all in this one turn.
  large(3 << 20, 'a');
  small("one");
  large(5 << 20, 'b');
  small("two");
  large(200 << 10, 'c');
  large(2 << 20, 'd');
  large(1 << 20, 'e');  // right after a sealed one: queued behind it, not sent ahead
  small("three");
  CHECK(a->pending_bytes() >= 7u << 20);  // the socket has not taken that much yet
  p.expect_received(got, sent);
}

TEST_CASE("send_owned writes payloads from the message it keeps, in order with other frames",
          "[framing]") {
  Pair p;
  auto& a = p.a;
  auto& b = p.b;
  std::vector<std::string> got;  // each frame's serialized body
  b->start([&](std::string_view body) { got.emplace_back(body); }, [](const Status&) {});
  a->start([](std::string_view) {}, [](const Status&) {});
  // A worker batch with two uploads (4 MiB and 300 KiB) and a small one, between plain frames.
  auto batch = [](char fill) {
    auto m = std::make_shared<v1::DispatchMessage>();
    v1::WorkerBatch* b = m->mutable_batch();
    b->set_session(3);
    for (size_t n : {size_t{4} << 20, size_t{16}, size_t{300} << 10}) {
      v1::Instr* in = b->add_instrs();
      in->set_op(7);
      in->set_out(n);
      std::string data(n, fill);
      data[n / 2] = 'M';
      in->set_data(std::move(data));
    }
    return m;
  };
  std::vector<std::string> sent;
  auto plain = [&](const std::string& text) {
    REQUIRE(a->send(frame_of(text)).is_ok());
    sent.push_back(frame_of(text).SerializeAsString());
  };
  auto owned = [&](char fill) {
    std::shared_ptr<v1::DispatchMessage> m = batch(fill);
    sent.push_back(m->SerializeAsString());
    REQUIRE(a->send_owned(std::move(m)).is_ok());  // the connection holds the only reference
  };
  plain("one");
  owned('a');
  plain("two");
  owned('b');
  owned('c');
  plain("three");
  CHECK(a->pending_bytes() >= 12u << 20);
  p.expect_received(got, sent);
}
