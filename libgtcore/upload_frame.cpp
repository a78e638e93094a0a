#include "libgtcore/upload_frame.h"

#include <memory>
#include <span>

#include "libgtcore/frame_codec.h"

namespace gt {
namespace {

template <class Batch>
Status merge_into(std::string_view head, size_t body_size, std::string&& payload,
                  std::span<const PayloadChainLevel> chain, Batch* batch) {
  if (head.size() > body_size || body_size - head.size() != payload.size())
    return data_loss("upload frame: {} + {} bytes for a body of {}", head.size(), payload.size(),
                     body_size);
  auto scan = scan_payload_frame(head, body_size, chain, kInstrDataField);
  if (!scan.is_ok()) return scan.status();
  const PayloadFrameLayout& l = scan->layout;
  if (scan->state != PayloadScan::kFound || l.payload_begin != head.size())
    return data_loss("upload frame: the header does not end where its payload begins");
  auto fields = [&](size_t level) {
    return head.substr(l.fields_begin[level], l.fields_end[level] - l.fields_begin[level]);
  };
  // Protobuf merges fields in order, so the batch's own fields and then one more instruction
  // read exactly as the whole body would.
  GT_RETURN_IF_ERROR(merge_frame(fields(0), batch));
  v1::Instr* in = batch->add_instrs();
  GT_RETURN_IF_ERROR(merge_frame(fields(1), in));
  in->mutable_data()->swap(payload);
  return Status::ok();
}

}  // namespace

Result<PayloadScanResult> scan_upload_frame(std::string_view prefix, size_t body_size) {
  return scan_payload_frame(prefix, body_size, kUploadChain, kInstrDataField);
}

Result<PayloadScanResult> scan_worker_upload_frame(std::string_view prefix, size_t body_size) {
  return scan_payload_frame(prefix, body_size, kWorkerUploadChain, kInstrDataField);
}

Status merge_upload_frame(std::string_view head, size_t body_size, std::string&& payload,
                          v1::ClientMessage* msg) {
  return merge_into(head, body_size, std::move(payload), kUploadChain, msg->mutable_batch());
}

Status merge_upload_frame(std::string_view head, size_t body_size, std::string&& payload,
                          v1::DispatchMessage* msg) {
  return merge_into(head, body_size, std::move(payload), kWorkerUploadChain, msg->mutable_batch());
}

Status send_worker_batch(FramedConnection& io, v1::DispatchMessage&& msg, std::string* header) {
  v1::WorkerBatch* b = msg.mutable_batch();
  const int n = b->instrs_size();
  if (n > 0 && b->instrs(n - 1).data().size() >= kPayloadLastBytes &&
      b->ByteSizeLong() - b->instrs(n - 1).data().size() <= kPayloadLastRestBytes) {
    std::unique_ptr<v1::Instr> last(b->mutable_instrs()->ReleaseLast());
    auto payload = std::make_shared<std::string>(std::move(*last->mutable_data()));
    last->clear_data();
    const PayloadLevel levels[] = {{kWorkerBatchField, b}, {kWorkerInstrsField, last.get()}};
    header->clear();
    GT_RETURN_IF_ERROR(append_payload_frame_header(header, levels, kInstrDataField, payload->size()));
    const std::string_view bytes = *payload;
    return io.send_kept_parts(*header, bytes, std::move(payload));
  }
  // Uploads' payloads go to the socket from the batch itself, which the connection keeps until
  // they are written (no serialized copy of them).
  return io.send_owned(std::make_shared<v1::DispatchMessage>(std::move(msg)));
}

}  // namespace gt
