// The fetch-reply header scanner (libgtcore/reply_payload.h, issue 15): what the dispatcher runs
// on every frame a worker sends, before parsing anything. For any bytes:
//   - the scan never reads past the body and never claims a layout outside it;
//   - kFound agrees with protobuf: a body protobuf parses as the envelope has that payload as
//     its reply's tensor data, and the header the scan found parses to the same other fields;
//   - a prefix's decision holds for the whole body (the dispatcher scans as bytes arrive);
//   - check_fetch_chunk on what was found either accepts it or says why, never crashes;
//   - the same for a client's upload layout (libgtcore/upload_frame.h) on the same bytes: a found
//     upload merges (merge_upload_frame, the payload moved in) to exactly protobuf's parse.
// Byte 0 picks the envelope (WorkerMessage or ServerMessage) and the prefix cut; the rest is the
// frame body.
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "libgtcore/reply_payload.h"
#include "libgtcore/upload_frame.h"
#include "proto/gt.pb.h"
#include "tests/fuzz/harness.h"

namespace gt::fuzz {

namespace {

bool same_layout(const ReplyPayloadLayout& a, const ReplyPayloadLayout& b) {
  return a.reply_fields_begin == b.reply_fields_begin && a.reply_fields_end == b.reply_fields_end &&
         a.tensor_fields_begin == b.tensor_fields_begin &&
         a.tensor_fields_end == b.tensor_fields_end && a.payload_begin == b.payload_begin &&
         a.payload_bytes == b.payload_bytes;
}

template <class Envelope>
void check_found(std::string_view body, const ReplyPayloadLayout& l) {
  Envelope m;
  if (!m.ParseFromArray(body.data(), static_cast<int>(body.size()))) return;  // e.g. bad UTF-8
  GT_FUZZ_CHECK(m.has_reply() && m.reply().has_tensor(), "kFound, but protobuf sees no tensor");
  GT_FUZZ_CHECK(m.reply().tensor().data() == body.substr(l.payload_begin),
                "kFound's payload is not the tensor's data");
  v1::Reply head;
  v1::TensorData meta;
  if (parse_reply_header(body, l, &head, &meta).is_ok()) {
    // (Tensor fields are not compared: protobuf merges a `tensor` repeated earlier in the
    // Reply into the last one, the header keeps the last alone; the dispatcher re-encodes the
    // header from what it parsed, so the client sees one consistent reading either way.)
    GT_FUZZ_CHECK(head.request_id() == m.reply().request_id(),
                  "the scanned header's request id differs from protobuf's");
    (void)check_fetch_chunk(meta, l.payload_bytes, -1);
  }
}

// The upload layout's scan of `body` and of its first `cut` bytes.
void check_upload_scan(const std::string& body, size_t cut) {
  auto whole = scan_upload_frame(body, body.size());
  if (whole.is_ok() && whole->state == PayloadScan::kFound) {
    const PayloadFrameLayout& l = whole->layout;
    GT_FUZZ_CHECK(l.payload_begin + l.payload_bytes == body.size() &&
                      l.fields_begin[0] <= l.fields_end[0] && l.fields_end[0] <= l.fields_begin[1] &&
                      l.fields_begin[1] <= l.fields_end[1] && l.fields_end[1] <= l.payload_begin,
                  "an upload layout outside the body");
    v1::ClientMessage want;
    const bool parses = want.ParseFromArray(body.data(), static_cast<int>(body.size()));
    v1::ClientMessage got;
    Status st = merge_upload_frame(std::string_view(body).substr(0, l.payload_begin), body.size(),
                                   body.substr(l.payload_begin), &got);
    if (parses) {
      GT_FUZZ_CHECK(want.has_batch() && want.batch().instrs_size() > 0 &&
                        want.batch().instrs(want.batch().instrs_size() - 1).data() ==
                            std::string_view(body).substr(l.payload_begin),
                    "kFound, but protobuf's last instruction holds another payload");
      GT_FUZZ_CHECK(st.is_ok() && got.SerializeAsString() == want.SerializeAsString(),
                    "the merged upload differs from protobuf's parse");
    }
  }
  auto part = scan_upload_frame(std::string_view(body).substr(0, cut), body.size());
  if (!part.is_ok() || part->state == PayloadScan::kNeedMore) return;
  if (part->state == PayloadScan::kFound)
    GT_FUZZ_CHECK(whole.is_ok() && whole->state == PayloadScan::kFound &&
                      part->layout.payload_begin == whole->layout.payload_begin,
                  "a prefix found an upload layout the whole body does not have");
  else
    GT_FUZZ_CHECK(!whole.is_ok() || whole->state != PayloadScan::kFound,
                  "a prefix said no upload payload, the whole body found one");
}

}  // namespace

std::vector<std::pair<std::string, std::string>> reply_payload_seeds() {
  std::vector<std::pair<std::string, std::string>> seeds;
  v1::Reply head;
  head.set_request_id(42);
  head.set_last(true);
  v1::TensorData meta;
  meta.set_dtype(v1::FLOAT32);
  meta.add_shape(4);
  meta.set_total_bytes(16);
  const std::string payload(16, '\x3f');
  for (const auto& [field, byte0, name] : {std::tuple{kWorkerReplyField, '\x01', "worker"},
                                           std::tuple{kServerReplyField, '\x00', "server"}}) {
    std::string frame;
    if (append_reply_header(&frame, field, head, meta, payload.size()).is_ok())
      seeds.emplace_back(std::string("fetch_") + name,
                         std::string(1, byte0) + frame.substr(4) + payload);  // body: no length
  }
  v1::WorkerMessage ack;
  ack.mutable_ack()->set_executed_seq(7);
  seeds.emplace_back("ack", std::string(1, '\x01') + ack.SerializeAsString());
  {
    v1::ClientBatch queued;
    queued.add_instrs()->set_out(3);
    queued.add_frees(3);
    queued.add_free_at(1);
    v1::Instr upload;
    upload.set_op(4);
    upload.set_out(5);
    const PayloadLevel levels[] = {{kClientBatchField, &queued}, {kBatchInstrsField, &upload}};
    std::string frame;
    if (append_payload_frame_header(&frame, levels, kInstrDataField, payload.size()).is_ok())
      seeds.emplace_back("upload", std::string(1, '\x02') + frame.substr(4) + payload);
  }
  seeds.emplace_back("garbage", std::string("\x01\x22\x05\x0a\x7f", 5));
  return seeds;
}

void run_reply_payload(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const bool worker = (data[0] & 1) != 0;
  const uint32_t field = worker ? kWorkerReplyField : kServerReplyField;
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  auto whole = scan_reply_payload(body, body.size(), field);
  if (whole.is_ok()) {
    GT_FUZZ_CHECK(whole->state != ReplyScan::kNeedMore, "the whole body cannot need more");
    if (whole->state == ReplyScan::kFound) {
      const ReplyPayloadLayout& l = whole->layout;
      GT_FUZZ_CHECK(l.payload_begin <= body.size() &&
                        l.payload_begin + l.payload_bytes == body.size() &&
                        l.reply_fields_begin <= l.reply_fields_end &&
                        l.tensor_fields_begin <= l.tensor_fields_end &&
                        l.reply_fields_end <= l.payload_begin &&
                        l.tensor_fields_end <= l.payload_begin,
                    "a layout outside the body");
      if (worker) check_found<v1::WorkerMessage>(body, l);
      else check_found<v1::ServerMessage>(body, l);
    }
  }
  // A prefix (the bytes arrived so far): needs more, or the same answer.
  const size_t cut = body.empty() ? 0 : (static_cast<size_t>(data[0] >> 1) * 7919) % (body.size() + 1);
  check_upload_scan(body, cut);
  auto part = scan_reply_payload(std::string_view(body).substr(0, cut), body.size(), field);
  if (!part.is_ok() || part->state == ReplyScan::kNeedMore) return;
  // A decided prefix stays decided: a found header is complete (what follows is payload), and
  // a prefix that is not a payload reply cannot become one.
  if (part->state == ReplyScan::kFound)
    GT_FUZZ_CHECK(whole.is_ok() && whole->state == ReplyScan::kFound &&
                      same_layout(part->layout, whole->layout),
                  "a prefix found a layout the whole body does not have");
  else
    GT_FUZZ_CHECK(!whole.is_ok() || whole->state != ReplyScan::kFound,
                  "a prefix said no payload, the whole body found one");
}

}  // namespace gt::fuzz
