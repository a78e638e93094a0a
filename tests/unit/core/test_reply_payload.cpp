// Fetch replies as header + trailing payload (libgtcore/reply_payload.h): the frame a header and
// a payload make is the message protobuf reads; the scanner finds the payload from any prefix
// that holds the header, says when it needs more, leaves every other message to a whole parse,
// and turns truncated or garbage bytes into an error, never a crash or an out-of-range offset.
// The same layout for a client's large uploads (libgtcore/payload_frame.h) parses as the batch.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>

#include "libgtcore/frame_codec.h"
#include "libgtcore/payload_frame.h"
#include "libgtcore/reply_payload.h"
#include "libgtcore/upload_frame.h"
#include "proto/gt.pb.h"
#include "require_ok.h"

using namespace gt;

namespace {

v1::Reply head_of(uint64_t request_id, bool last) {
  v1::Reply r;
  r.set_request_id(request_id);
  r.set_last(last);
  return r;
}

v1::TensorData meta_of(std::initializer_list<int64_t> shape, v1::DType dtype, uint64_t total,
                       uint64_t offset) {
  v1::TensorData t;
  for (int64_t d : shape) t.add_shape(d);
  t.set_dtype(dtype);
  t.set_total_bytes(total);
  t.set_offset(offset);
  return t;
}

std::string payload_of(size_t n) {
  std::string p(n, '\0');
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<char>(i * 131 + 7);
  return p;
}

// header + payload as one frame; returns the body (without the 4-byte length).
std::string frame_body(uint32_t field, const v1::Reply& head, const v1::TensorData& meta,
                       const std::string& payload) {
  std::string frame;
  REQUIRE(append_reply_header(&frame, field, head, meta, payload.size()).is_ok());
  frame += payload;
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i) len |= static_cast<uint32_t>(static_cast<uint8_t>(frame[i])) << (8 * i);
  REQUIRE(len == frame.size() - kFrameHeaderBytes);
  return frame.substr(kFrameHeaderBytes);
}

}  // namespace

TEST_CASE("a header + payload frame parses as the ordinary message", "[core][reply_payload]") {
  for (size_t n : {size_t{0}, size_t{1}, size_t{64}, size_t{127}, size_t{128}, size_t{70000}}) {
    const std::string payload = payload_of(n);
    auto meta = meta_of({static_cast<int64_t>(n)}, v1::UINT8, n, 0);
    const std::string body = frame_body(kWorkerReplyField, head_of(42, true), meta, payload);
    v1::WorkerMessage m;
    GT_REQUIRE_OK(parse_frame(body, &m));
    REQUIRE(m.has_reply());
    CHECK(m.reply().request_id() == 42);
    CHECK(m.reply().last());
    CHECK(m.reply().tensor().total_bytes() == n);
    CHECK(m.reply().tensor().data() == payload);

    v1::ServerMessage s;  // the same for the client's envelope
    GT_REQUIRE_OK(parse_frame(frame_body(kServerReplyField, head_of(7, false), meta, payload), &s));
    CHECK(s.reply().request_id() == 7);
    CHECK(s.reply().tensor().data() == payload);
  }
}

TEST_CASE("a client's payload-last upload frame parses as the batch with the upload last",
          "[core][reply_payload][upload]") {
  // libgtcore/payload_frame.h as the client writes a large upload: the queue's batch (with its
  // frees and requests), then the upload instruction, its data last.
  v1::ClientBatch queued;
  v1::Instr* first = queued.add_instrs();
  first->set_op(3);
  first->set_out(1);
  first->set_data(std::string(300, 'q'));  // a small upload still in the queue
  queued.add_frees(9);
  queued.add_free_at(1);
  queued.add_requests()->set_request_id(5);
  v1::Instr upload;
  upload.set_op(4);
  upload.set_out(2);
  upload.add_shape(3);
  for (size_t n : {size_t{0}, size_t{127}, size_t{128}, size_t{1} << 20, (size_t{1} << 20) + 3}) {
    const std::string payload = payload_of(n);
    const PayloadLevel levels[] = {{2, &queued}, {1, &upload}};
    std::string frame;
    GT_REQUIRE_OK(append_payload_frame_header(&frame, levels, 8, n));
    frame += payload;
    v1::ClientMessage m;
    GT_REQUIRE_OK(parse_frame(std::string_view(frame).substr(kFrameHeaderBytes), &m));
    // The same as the ordinary message with the upload appended.
    v1::ClientMessage want;
    *want.mutable_batch() = queued;
    v1::Instr* last = want.mutable_batch()->add_instrs();
    *last = upload;
    last->set_data(payload);
    CHECK(m.SerializeAsString() == want.SerializeAsString());
    CHECK(m.batch().instrs(1).data() == payload);
    CHECK(m.batch().free_at(0) == 1);  // the queued free stays before the upload
  }
  std::string big;
  const PayloadLevel levels[] = {{2, &queued}, {1, &upload}};
  CHECK(append_payload_frame_header(&big, levels, 8, 1000, 999).code() == Code::kResourceExhausted);
  CHECK(big.empty());
}

TEST_CASE("an upload frame's payload is found from its first bytes and merged without a copy",
          "[core][reply_payload][upload]") {
  // What the dispatcher does with a client's large upload (libgtcore/upload_frame.h): scan the
  // bytes as they arrive until the header is whole, then take the payload as a string of its
  // own; the merged message equals protobuf's whole parse, instructions before it included.
  for (int queued_instrs : {0, 1, 5}) {
    v1::ClientBatch queued;
    for (int i = 0; i < queued_instrs; ++i) {
      v1::Instr* in = queued.add_instrs();
      in->set_op(3);
      in->set_out(static_cast<uint64_t>(10 + i));
      in->set_data(std::string(static_cast<size_t>(40 * i), 'q'));  // small payloads: earlier
    }
    if (queued_instrs > 0) {
      queued.add_frees(9);
      queued.add_free_at(static_cast<uint32_t>(queued_instrs));
    }
    v1::Instr upload;
    upload.set_op(4);
    upload.set_out(2);
    upload.add_shape(70001);
    const std::string payload = payload_of(70001);
    const PayloadLevel levels[] = {{kClientBatchField, &queued}, {kBatchInstrsField, &upload}};
    std::string frame;
    GT_REQUIRE_OK(append_payload_frame_header(&frame, levels, kInstrDataField, payload.size()));
    const size_t header = frame.size() - kFrameHeaderBytes;
    frame += payload;
    const std::string_view body = std::string_view(frame).substr(kFrameHeaderBytes);
    INFO(queued_instrs << " instructions queued before the upload");
    // Every cut before the header's end needs more; every cut from there finds the same layout.
    for (size_t cut = 0; cut <= body.size(); cut += cut < header + 2 ? 1 : 4099) {
      INFO("prefix of " << cut << " bytes");
      auto scan = scan_upload_frame(body.substr(0, cut), body.size());
      GT_REQUIRE_OK(scan.status());
      if (cut < header) {
        CHECK(scan->state == PayloadScan::kNeedMore);
        continue;
      }
      REQUIRE(scan->state == PayloadScan::kFound);
      CHECK(scan->layout.payload_begin == header);
      CHECK(scan->layout.payload_bytes == payload.size());
    }
    v1::ClientMessage whole;
    GT_REQUIRE_OK(parse_frame(body, &whole));
    v1::ClientMessage merged;
    std::string moved = payload;
    const char* buffer = moved.data();
    GT_REQUIRE_OK(merge_upload_frame(body.substr(0, header), body.size(), std::move(moved), &merged));
    CHECK(merged.SerializeAsString() == whole.SerializeAsString());
    REQUIRE(merged.batch().instrs_size() == queued_instrs + 1);
    CHECK(merged.batch().instrs(queued_instrs).data().data() == buffer);  // moved, not copied
    // A header that does not fit the body it claims is refused, not trusted.
    v1::ClientMessage bad;
    CHECK(merge_upload_frame(body.substr(0, header), body.size() + 1, std::string(payload), &bad)
              .code() == Code::kDataLoss);
    CHECK(merge_upload_frame(body.substr(0, header - 1), body.size() - 1, std::string(payload), &bad)
              .code() == Code::kDataLoss);
  }
}

TEST_CASE("a worker batch's payload-last upload merges to the batch protobuf parses",
          "[core][reply_payload][upload]") {
  v1::WorkerBatch batch;
  batch.set_session(4);
  batch.add_instrs()->set_out(1);
  batch.add_frees(1);
  batch.add_free_at(1);
  v1::Instr upload;
  upload.set_op(4);
  upload.set_out(2);
  const std::string payload = payload_of(100000);
  const PayloadLevel levels[] = {{kWorkerBatchField, &batch}, {kWorkerInstrsField, &upload}};
  std::string frame;
  GT_REQUIRE_OK(append_payload_frame_header(&frame, levels, kInstrDataField, payload.size()));
  const size_t header = frame.size() - kFrameHeaderBytes;
  frame += payload;
  const std::string_view body = std::string_view(frame).substr(kFrameHeaderBytes);
  auto scan = scan_worker_upload_frame(body.substr(0, header), body.size());
  GT_REQUIRE_OK(scan.status());
  REQUIRE(scan->state == PayloadScan::kFound);
  CHECK(scan->layout.payload_begin == header);
  // The client's layout is another envelope field: not found there.
  auto other = scan_upload_frame(body.substr(0, header), body.size());
  GT_REQUIRE_OK(other.status());
  CHECK(other->state == PayloadScan::kNoPayload);
  v1::DispatchMessage whole, merged;
  GT_REQUIRE_OK(parse_frame(body, &whole));
  GT_REQUIRE_OK(merge_upload_frame(body.substr(0, header), body.size(), std::string(payload), &merged));
  CHECK(merged.SerializeAsString() == whole.SerializeAsString());
  CHECK(merged.batch().instrs(1).data() == payload);
  CHECK(merged.batch().free_at(0) == 1);
}

TEST_CASE("frames of another layout are left to a whole parse", "[core][reply_payload][upload]") {
  // The ordinary serialization of a batch with frees after its instructions, an upload whose
  // data is not its last field, a Hello: none is split; bytes that cannot be a message are
  // an error.
  v1::ClientMessage with_frees;
  v1::Instr* in = with_frees.mutable_batch()->add_instrs();
  in->set_data(std::string(5000, 'x'));
  with_frees.mutable_batch()->add_frees(3);
  v1::ClientMessage data_not_last;
  v1::Instr* in2 = data_not_last.mutable_batch()->add_instrs();
  in2->set_data(std::string(5000, 'y'));
  in2->mutable_shm()->set_bytes(5000);
  v1::ClientMessage hello;
  hello.mutable_hello()->set_client_name("c");
  for (const v1::ClientMessage* m : {&with_frees, &data_not_last, &hello}) {
    const std::string body = m->SerializeAsString();
    auto scan = scan_upload_frame(body, body.size());
    GT_REQUIRE_OK(scan.status());
    CHECK(scan->state == PayloadScan::kNoPayload);
  }
  // A batch (to the body's end, 18 bytes) whose instruction length runs past it.
  const std::string garbage("\x12\x10\x0a\x7f\x00", 5);
  CHECK(scan_upload_frame(garbage, garbage.size() + 13).status().code() == Code::kDataLoss);
}

TEST_CASE("the scanner finds the payload and the header parts", "[core][reply_payload]") {
  const std::string payload = payload_of(4096);
  v1::Reply head = head_of(9, false);
  auto* e = head.add_errors();  // any Reply field before the tensor is kept
  e->set_op("none");
  const auto meta = meta_of({32, 32}, v1::FLOAT32, 4096, 8192);
  const std::string body = frame_body(kWorkerReplyField, head, meta, payload);
  auto scan = scan_reply_payload(body, body.size(), kWorkerReplyField);
  GT_REQUIRE_OK(scan);
  REQUIRE(scan->state == ReplyScan::kFound);
  const ReplyPayloadLayout& l = scan->layout;
  CHECK(l.payload_bytes == payload.size());
  CHECK(l.payload_begin + l.payload_bytes == body.size());
  CHECK(body.substr(l.payload_begin) == payload);
  CHECK(l.payload_begin < 64);  // the header is small

  v1::Reply got_head;
  v1::TensorData got_meta;
  GT_REQUIRE_OK(parse_reply_header(body, l, &got_head, &got_meta));
  CHECK(got_head.request_id() == 9);
  CHECK_FALSE(got_head.last());
  CHECK(got_head.errors_size() == 1);
  CHECK_FALSE(got_head.has_tensor());
  CHECK(got_meta.shape_size() == 2);
  CHECK(got_meta.offset() == 8192);
  CHECK(got_meta.total_bytes() == 4096);
  CHECK(got_meta.data().empty());

  SECTION("from a prefix: every cut before the payload needs more, any cut after finds it") {
    for (size_t cut = 0; cut <= body.size(); ++cut) {
      auto s = scan_reply_payload(std::string_view(body).substr(0, cut), body.size(),
                                  kWorkerReplyField);
      GT_REQUIRE_OK(s);
      if (cut < l.payload_begin) {
        CHECK(s->state == ReplyScan::kNeedMore);
      } else {
        REQUIRE(s->state == ReplyScan::kFound);
        CHECK(s->layout.payload_begin == l.payload_begin);
      }
    }
  }
  SECTION("the envelope's other reply field is not this layout") {
    auto s = scan_reply_payload(body, body.size(), kServerReplyField);
    GT_REQUIRE_OK(s);
    CHECK(s->state == ReplyScan::kNoPayload);
  }
}

TEST_CASE("other messages are left to a whole parse", "[core][reply_payload]") {
  std::vector<std::string> bodies;
  v1::WorkerMessage hb;
  hb.mutable_heartbeat()->set_nonce(5);
  bodies.push_back(hb.SerializeAsString());
  v1::WorkerMessage errors_only;  // a poisoned fetch's answer
  errors_only.mutable_reply()->set_request_id(3);
  errors_only.mutable_reply()->set_last(true);
  errors_only.mutable_reply()->add_errors()->set_message("bad");
  bodies.push_back(errors_only.SerializeAsString());
  v1::WorkerMessage whole;  // an ordinarily serialized last chunk: `last` follows the tensor
  whole.mutable_reply()->set_request_id(4);
  whole.mutable_reply()->mutable_tensor()->set_data("abcd");
  whole.mutable_reply()->set_last(true);
  bodies.push_back(whole.SerializeAsString());
  v1::WorkerMessage ack;
  ack.mutable_ack()->set_executed_seq(10);
  bodies.push_back(ack.SerializeAsString());
  bodies.push_back("");
  for (const std::string& b : bodies) {
    auto s = scan_reply_payload(b, b.size(), kWorkerReplyField);
    GT_REQUIRE_OK(s);
    CHECK(s->state == ReplyScan::kNoPayload);
  }
}

TEST_CASE("truncated and garbage input is an error or no payload, never out of range",
          "[core][reply_payload]") {
  const std::string payload = payload_of(300);
  const std::string body =
      frame_body(kWorkerReplyField, head_of(1, true), meta_of({75}, v1::FLOAT32, 300, 0), payload);
  SECTION("a body shorter than its lengths say") {
    for (size_t cut = 1; cut < body.size(); ++cut) {
      const std::string shorter = body.substr(0, cut);
      auto s = scan_reply_payload(shorter, shorter.size(), kWorkerReplyField);
      if (s.is_ok()) CHECK(s->state != ReplyScan::kFound);
      else CHECK(s.status().code() == Code::kDataLoss);
    }
  }
  SECTION("a varint that never ends") {
    std::string bad(16, '\xff');
    auto s = scan_reply_payload(bad, bad.size(), kWorkerReplyField);
    CHECK_FALSE(s.is_ok());
  }
  SECTION("a length past the end") {
    std::string bad = "\x22\x7f\x1a\x05";  // reply field 4, 127 bytes; only 2 follow
    auto s = scan_reply_payload(bad, bad.size(), kWorkerReplyField);
    CHECK_FALSE(s.is_ok());
  }
  SECTION("random bytes and random corruptions") {
    std::mt19937 rng(1234);
    for (int i = 0; i < 20000; ++i) {
      std::string b = body;
      if (i % 2) {
        b.resize(rng() % 64);
        for (char& c : b) c = static_cast<char>(rng());
      } else {
        for (int k = 0; k < 3; ++k) b[rng() % b.size()] = static_cast<char>(rng());
      }
      auto s = scan_reply_payload(b, b.size(), kWorkerReplyField);
      if (!s.is_ok() || s->state != ReplyScan::kFound) continue;
      const ReplyPayloadLayout& l = s->layout;
      REQUIRE(l.payload_begin + l.payload_bytes == b.size());
      REQUIRE(l.reply_fields_begin <= l.reply_fields_end);
      REQUIRE(l.reply_fields_end <= l.tensor_fields_begin);
      REQUIRE(l.tensor_fields_begin <= l.tensor_fields_end);
      REQUIRE(l.tensor_fields_end <= l.payload_begin);
      v1::Reply h;
      v1::TensorData m;
      (void)parse_reply_header(b, l, &h, &m);  // may fail; must not crash
    }
  }
}

TEST_CASE("fetch chunk metadata is checked against its payload", "[core][reply_payload]") {
  GT_CHECK_OK(check_fetch_chunk(meta_of({4, 4}, v1::FLOAT32, 64, 0), 64, 0));
  GT_CHECK_OK(check_fetch_chunk(meta_of({4, 4}, v1::FLOAT32, 64, 32), 32, 32));
  GT_CHECK_OK(check_fetch_chunk(meta_of({0}, v1::INT64, 0, 0), 0, 0));
  // The size a shape and dtype give, not what the sender says.
  CHECK(check_fetch_chunk(meta_of({4, 4}, v1::FLOAT32, 60, 0), 60).code() == Code::kDataLoss);
  // A chunk past the end, or overflowing offset + size.
  CHECK_FALSE(check_fetch_chunk(meta_of({4, 4}, v1::FLOAT32, 64, 48), 32).is_ok());
  CHECK_FALSE(check_fetch_chunk(meta_of({4, 4}, v1::FLOAT32, 64, ~uint64_t{0}), 2).is_ok());
  // Out of order.
  CHECK_FALSE(check_fetch_chunk(meta_of({4, 4}, v1::FLOAT32, 64, 32), 32, 0).is_ok());
  // Unknown dtype, negative dims.
  CHECK_FALSE(check_fetch_chunk(meta_of({4}, static_cast<v1::DType>(99), 16, 0), 16).is_ok());
  CHECK_FALSE(check_fetch_chunk(meta_of({-4}, v1::FLOAT32, 16, 0), 16).is_ok());
}
