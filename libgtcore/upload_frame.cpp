#include "libgtcore/upload_frame.h"

#include <memory>
#include <span>

#include "libgtcore/frame_codec.h"

namespace gt {
namespace {

// The layout's parts of a frame whose header is `head` (DataLoss unless it is exactly that).
Result<PayloadFrameLayout> layout_of(std::string_view head, size_t body_size, size_t payload_bytes,
                                     std::span<const PayloadChainLevel> chain,
                                     PayloadChainLevel payload) {
  if (head.size() > body_size || body_size - head.size() != payload_bytes)
    return data_loss("upload frame: {} + {} bytes for a body of {}", head.size(), payload_bytes,
                     body_size);
  auto scan = scan_payload_frame(head, body_size, chain, payload);
  if (!scan.is_ok()) return scan.status();
  if (scan->state != PayloadScan::kFound || scan->layout.payload_begin != head.size())
    return data_loss("upload frame: the header does not end where its payload begins");
  return scan->layout;
}

std::string_view fields_of(std::string_view head, const PayloadFrameLayout& l, size_t level) {
  return head.substr(l.fields_begin[level], l.fields_end[level] - l.fields_begin[level]);
}

// Protobuf merges fields in order, so each level's own fields and then the next level (the
// batch's last instruction, its hot run, the payload) read exactly as the whole body would.
// Two levels: the payload is the instruction's data; three: its hot run's last data entry.
template <class Batch>
Status merge_layout(std::string_view head, const PayloadFrameLayout& l, std::string&& payload,
                    Batch* batch) {
  GT_RETURN_IF_ERROR(merge_frame(fields_of(head, l, 0), batch));
  v1::Instr* in = batch->add_instrs();
  GT_RETURN_IF_ERROR(merge_frame(fields_of(head, l, 1), in));
  if (l.levels == 2) {
    in->mutable_data()->swap(payload);
    return Status::ok();
  }
  v1::HotRun* hot = in->mutable_hot();
  GT_RETURN_IF_ERROR(merge_frame(fields_of(head, l, 2), hot));
  hot->add_data()->swap(payload);
  return Status::ok();
}

}  // namespace

Result<PayloadScanResult> scan_upload_frame(std::string_view prefix, size_t body_size) {
  return scan_payload_frame(prefix, body_size, kUploadChain, {kInstrDataField});
}

Result<PayloadScanResult> scan_worker_upload_frame(std::string_view prefix, size_t body_size) {
  auto scan = scan_payload_frame(prefix, body_size, kWorkerUploadChain, {kInstrDataField});
  if (!scan.is_ok() || scan->state != PayloadScan::kNoPayload) return scan;
  return scan_payload_frame(prefix, body_size, kWorkerHotChain, {kHotDataField, true});
}

Status merge_upload_frame(std::string_view head, size_t body_size, std::string&& payload,
                          v1::ClientMessage* msg) {
  GT_ASSIGN_OR_RETURN(PayloadFrameLayout l, layout_of(head, body_size, payload.size(), kUploadChain,
                                                      {kInstrDataField}));
  return merge_layout(head, l, std::move(payload), msg->mutable_batch());
}

Status merge_upload_frame(std::string_view head, size_t body_size, std::string&& payload,
                          v1::DispatchMessage* msg) {
  // The last instruction's last field is its data or its hot run: the header says which.
  auto data = layout_of(head, body_size, payload.size(), kWorkerUploadChain, {kInstrDataField});
  if (data.is_ok()) return merge_layout(head, *data, std::move(payload), msg->mutable_batch());
  GT_ASSIGN_OR_RETURN(PayloadFrameLayout l, layout_of(head, body_size, payload.size(),
                                                      kWorkerHotChain, {kHotDataField, true}));
  return merge_layout(head, l, std::move(payload), msg->mutable_batch());
}

Status send_worker_batch(FramedConnection& io, v1::DispatchMessage&& msg, std::string* header) {
  v1::WorkerBatch* b = msg.mutable_batch();
  const int n = b->instrs_size();
  // The last payload of the last instruction, if it is large: its data, or its hot run's last
  // data entry (a repetition of a hot path that uploads).
  std::string* payload = nullptr;
  if (n > 0) {
    v1::Instr* last = b->mutable_instrs(n - 1);
    if (last->data().size() >= kPayloadLastBytes) {
      payload = last->mutable_data();
    } else if (last->has_hot() && last->hot().data_size() > 0) {
      v1::HotRun* hot = last->mutable_hot();
      std::string* d = hot->mutable_data(hot->data_size() - 1);
      if (d->size() >= kPayloadLastBytes) payload = d;
    }
  }
  if (payload && b->ByteSizeLong() - payload->size() <= kPayloadLastRestBytes) {
    auto kept = std::make_shared<std::string>(std::move(*payload));
    std::unique_ptr<v1::Instr> last(b->mutable_instrs()->ReleaseLast());
    header->clear();
    if (last->has_hot()) {
      // The instruction's own fields go without its hot run, which is the next level, and
      // the hot run's without its last data entry, which is the payload.
      v1::HotRun hot;
      hot.Swap(last->mutable_hot());
      last->clear_hot();
      hot.mutable_data()->RemoveLast();
      const PayloadLevel levels[] = {{kWorkerBatchField, b}, {kWorkerInstrsField, last.get()},
                                     {kInstrHotField, &hot}};
      GT_RETURN_IF_ERROR(append_payload_frame_header(header, levels, kHotDataField, kept->size()));
    } else {
      last->clear_data();
      const PayloadLevel levels[] = {{kWorkerBatchField, b}, {kWorkerInstrsField, last.get()}};
      GT_RETURN_IF_ERROR(append_payload_frame_header(header, levels, kInstrDataField, kept->size()));
    }
    const std::string_view bytes = *kept;
    return io.send_kept_parts(*header, bytes, std::move(kept));
  }
  // Uploads' payloads go to the socket from the batch itself, which the connection keeps until
  // they are written (no serialized copy of them).
  return io.send_owned(std::make_shared<v1::DispatchMessage>(std::move(msg)));
}

}  // namespace gt
