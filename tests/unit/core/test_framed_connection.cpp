// FramedConnection's write queue: frames and large payloads (send_parts) queued in one turn leave
// in order and intact, whether a payload goes to the socket at once, is sealed into a buffer of
// its own (>= kSealBytes) or appended; messages sent with send_owned leave their payloads in
// the message, kept alive until written; pending_bytes() counts all of it until it is written.
// Its read side's payload split (set_payload_split): a large upload's payload arrives in a string
// of its own, every other frame whole, in order, through pauses; a peer gone mid-payload and a
// header that cannot be a message are errors.
#include <catch2/catch.hpp>

#include <sys/socket.h>

#include <chrono>
#include <string>
#include <vector>

#include "libgtcore/frame_codec.h"
#include "framed_pair.h"
#include "libgtcore/framed_connection.h"
#include "libgtcore/payload_frame.h"
#include "libgtcore/upload_frame.h"
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

namespace {

std::string filled(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 2654435761u + seed) >> 13);
  return s;
}

// A client's upload frame (libgtcore/upload_frame.h): a queued batch, then one instruction whose
// data is the payload, last. `header` gets the frame's bytes before the payload.
std::string upload_header(size_t payload_bytes, uint64_t out, size_t queued_payload = 0) {
  v1::ClientBatch queued;
  queued.add_instrs()->set_out(out * 100);
  if (queued_payload > 0) queued.mutable_instrs(0)->set_data(filled(queued_payload, 3));
  queued.add_frees(out);
  queued.add_free_at(1);
  v1::Instr upload;
  upload.set_op(4);
  upload.set_out(out);
  const PayloadLevel levels[] = {{kClientBatchField, &queued}, {kBatchInstrsField, &upload}};
  std::string header;
  REQUIRE(append_payload_frame_header(&header, levels, kInstrDataField, payload_bytes).is_ok());
  return header;
}

// Receives on `b` with the dispatcher's split: each frame's body (a split one put together
// again) and whether it came split.
struct SplitReceiver {
  std::vector<std::string> bodies;
  std::vector<bool> split;
  std::vector<const char*> payload_buffers;
  Status closed_with = Status::ok();
  bool closed = false;
  void start(FramedConnection& b) {
    b.set_payload_split(
        size_t{1} << 20, scan_upload_frame, [this](std::string_view head, std::string&& payload) {
          payload_buffers.push_back(payload.data());
          bodies.push_back(std::string(head) + payload);
          split.push_back(true);
        });
    b.set_bad_frame_handler([this](const Status& why) {
      closed = true;
      closed_with = why;
    });
    b.start(
        [this](std::string_view body) {
          bodies.emplace_back(body);
          split.push_back(false);
        },
        [this](const Status& why) {
          closed = true;
          closed_with = why;
        });
  }
};

}  // namespace

TEST_CASE("a large upload's payload is read into a string of its own, other frames whole",
          "[framing][upload]") {
  for (const bool with_fds : {false, true}) {  // the recvmsg read of a Unix socket client
    INFO((with_fds ? "accepting descriptors" : "plain reads"));
    Pair p;
    SplitReceiver r;
    if (with_fds) p.b->accept_fds(4);
    r.start(*p.b);
    p.a->start([](std::string_view) {}, [](const Status&) {});
    std::vector<std::string> sent;
    std::vector<bool> want_split;
    auto upload = [&](size_t n, uint64_t out, size_t queued_payload = 0) {
      const std::string header = upload_header(n, out, queued_payload);
      const std::string payload = filled(n, static_cast<uint32_t>(out));
      REQUIRE(p.a->send_parts(header, payload).is_ok());
      sent.push_back(header.substr(kFrameHeaderBytes) + payload);
      want_split.push_back(header.size() - kFrameHeaderBytes + n >= (size_t{1} << 20) &&
                           header.size() - kFrameHeaderBytes <= FramedConnection::kMaxSplitHeaderBytes);
    };
    auto plain = [&](const v1::ClientMessage& m) {
      REQUIRE(p.a->send(m).is_ok());
      sent.push_back(m.SerializeAsString());
      want_split.push_back(false);
    };
    v1::ClientMessage hello;
    hello.mutable_hello()->set_client_name("split");
    // A batch over the threshold in another layout (frees after its instructions): read whole.
    v1::ClientMessage other;
    other.mutable_batch()->add_instrs()->set_data(filled(3 << 20, 9));
    other.mutable_batch()->add_frees(5);
    upload(4 << 20, 1);
    plain(hello);
    upload(1 << 20, 2);        // (the body is the threshold and a little more: split)
    upload((1 << 20) - 64, 3);  // under it: whole
    plain(other);
    upload((9 << 20) + 5, 4);
    upload(300 << 10, 5);
    upload(2 << 20, 6);
    upload(2 << 20, 7, 100 << 10);  // 100 KiB queued before it: a long header, read whole
    upload(2 << 20, 8, 60 << 10);   // 60 KiB: split
    p.expect_received(r.bodies, sent);
    CHECK(r.split == want_split);
    CHECK(r.payload_buffers.size() == 5);
    CHECK_FALSE(r.closed);
  }
}

TEST_CASE("a split upload survives a pause, and a peer gone mid-payload or a bad header is an "
          "error", "[framing][upload]") {
  SECTION("paused while the payload arrives") {
    Pair p;
    SplitReceiver r;
    r.start(*p.b);
    p.a->start([](std::string_view) {}, [](const Status&) {});
    const std::string header = upload_header(6 << 20, 7);
    const std::string payload = filled(6 << 20, 7);
    REQUIRE(p.a->send_parts(header, payload).is_ok());
    // Let the split begin, pause, and check nothing is handed out while paused.
    while (!p.b->mid_frame()) p.io.run_one_for(std::chrono::milliseconds(100));
    p.b->pause_reading();
    p.io.run_for(std::chrono::milliseconds(100));
    CHECK(r.bodies.empty());
    CHECK(p.b->mid_frame());
    p.b->resume_reading();
    p.expect_received(r.bodies, {header.substr(kFrameHeaderBytes) + payload});
    CHECK(r.split == std::vector<bool>{true});
  }
  SECTION("the peer closes in the middle of the payload") {
    Pair p;
    SplitReceiver r;
    r.start(*p.b);
    p.a->start([](std::string_view) {}, [](const Status&) {});
    const std::string header = upload_header(4 << 20, 8);
    REQUIRE(p.a->send_parts(header, filled(3 << 20, 8)).is_ok());  // a MiB short
    p.a->close_after_flush();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!r.closed && std::chrono::steady_clock::now() < deadline)
      p.io.run_for(std::chrono::milliseconds(20));
    REQUIRE(r.closed);
    CHECK(r.closed_with.code() == Code::kDataLoss);
    CHECK_THAT(r.closed_with.message(), Catch::Contains("middle of a frame"));
    CHECK(r.bodies.empty());
  }
  SECTION("a header whose instruction runs past the frame") {
    Pair p;
    SplitReceiver r;
    r.start(*p.b);
    p.a->start([](std::string_view) {}, [](const Status&) {});
    // The batch (field 2) spans the 2 MiB body; its instruction (field 1) claims 3 MiB.
    const size_t body = 2 << 20;
    std::string frame;
    for (int i = 0; i < 4; ++i) frame.push_back(static_cast<char>((body >> (8 * i)) & 0xff));
    std::string inner = "\x0a";
    for (uint64_t v = 3 << 20; ; v >>= 7) {
      if (v < 0x80) { inner.push_back(static_cast<char>(v)); break; }
      inner.push_back(static_cast<char>((v & 0x7f) | 0x80));
    }
    frame += "\x12";
    for (uint64_t v = body - 1 - 3; ; v >>= 7) {  // the batch's length (3 bytes): the rest
      if (v < 0x80) { frame.push_back(static_cast<char>(v)); break; }
      frame.push_back(static_cast<char>((v & 0x7f) | 0x80));
    }
    frame += inner;
    REQUIRE(p.a->send_parts(frame, filled(64 << 10, 1)).is_ok());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!r.closed && std::chrono::steady_clock::now() < deadline)
      p.io.run_for(std::chrono::milliseconds(20));
    REQUIRE(r.closed);
    CHECK(r.closed_with.code() == Code::kDataLoss);
    CHECK(r.bodies.empty());
  }
}

TEST_CASE("a worker batch ending in a large upload (or hot run upload) goes payload-last and "
          "is read split",
          "[framing][upload]") {
  // The dispatcher's side (send_worker_batch) and the worker's (set_payload_split with the
  // worker layout): what arrives parses to exactly the batch sent; only a batch whose last
  // instruction carries >= 1 MiB, with little else, is split.
  Pair p;
  std::vector<std::string> bodies;
  std::vector<bool> split;
  p.b->set_payload_split(size_t{1} << 20, scan_worker_upload_frame,
                         [&](std::string_view head, std::string&& payload) {
                           v1::DispatchMessage m;
                           REQUIRE(merge_upload_frame(head, head.size() + payload.size(),
                                                      std::move(payload), &m)
                                       .is_ok());
                           bodies.push_back(m.SerializeAsString());
                           split.push_back(true);
                         });
  p.b->start(
      [&](std::string_view body) {
        v1::DispatchMessage m;
        REQUIRE(m.ParseFromArray(body.data(), static_cast<int>(body.size())));
        bodies.push_back(m.SerializeAsString());
        split.push_back(false);
      },
      [](const Status&) {});
  p.a->start([](std::string_view) {}, [](const Status&) {});
  auto batch = [](std::initializer_list<size_t> uploads, bool frees) {
    v1::DispatchMessage m;
    v1::WorkerBatch* b = m.mutable_batch();
    b->set_session(7);
    b->set_first_seq(100);
    uint64_t out = 1;
    for (size_t n : uploads) {
      v1::Instr* in = b->add_instrs();
      in->set_op(4);
      in->set_out(out);
      in->set_data(filled(n, static_cast<uint32_t>(out++)));
    }
    if (frees) {
      b->add_frees(3);
      b->add_free_at(static_cast<uint32_t>(b->instrs_size()));
    }
    return m;
  };
  std::vector<std::string> sent;
  std::vector<bool> want_split;
  std::string header;
  auto send = [&](v1::DispatchMessage m, bool splits) {
    sent.push_back(m.SerializeAsString());
    want_split.push_back(splits);
    REQUIRE(send_worker_batch(*p.a, std::move(m), &header).is_ok());
  };
  // (Frees serialize after the instructions: a batch with them is payload-last only when
  // send_worker_batch lays it out so. Without, protobuf's own order may already be that layout,
  // which the receiver splits just the same.)
  send(batch({16, 4 << 20}, true), true);          // a small op, then the upload: split
  send(batch({(1 << 20) - 1}, true), false);       // under 1 MiB: whole
  send(batch({(1 << 20) - 1}, false), true);       // protobuf's order is the layout: split
  send(batch({200 << 10, 2 << 20}, true), false);  // 200 KiB before it would be copied: whole
  send(batch({2 << 20, 16}, true), false);         // the upload is not last: whole
  send(batch({9 << 20}, true), true);
  // A hot path's repetition (HotRun): its last data entry is the payload when it is large.
  auto hot_run = [&](std::initializer_list<size_t> uploads) {
    v1::DispatchMessage m = batch({16}, true);
    v1::HotRun* hot = m.mutable_batch()->add_instrs()->mutable_hot();
    hot->set_path(11);
    hot->add_bindings(5);
    hot->set_tag_base(3);  // (after data in protobuf's order: only the split layout ends in data)
    uint32_t seed = 50;
    for (size_t n : uploads) {
      hot->add_data(filled(n, seed++));
      hot->add_shm();
    }
    return m;
  };
  send(hot_run({100, 3 << 20}), true);
  send(hot_run({3 << 20, 100}), false);  // the large one is not last: whole
  send(hot_run({5 << 20}), true);
  p.expect_received(bodies, sent);
  CHECK(split == want_split);
}
