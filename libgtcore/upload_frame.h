// Large uploads as payload-last frames (payload_frame.h, issue 15), on both hops:
//   client -> dispatcher: ClientMessage.batch -> the batch's last ClientBatch.instrs -> Instr.data
//   dispatcher -> worker: DispatchMessage.batch -> the batch's last WorkerBatch.instrs -> Instr.data
//     or, for a hot path's repetition, ... -> Instr.hot -> the HotRun's last data entry
// The client writes the first from the caller's memory (libgtclient/session_remote.cpp), the
// dispatcher the second from the instruction's string (WorkerPool::send_now). Each receiver reads
// the payload into a string of its own as it arrives (FramedConnection::set_payload_split) and
// hands that string to the instruction: the payload is never copied by a parse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "libgtcore/framed_connection.h"
#include "libgtcore/payload_frame.h"
#include "libgtcore/status.h"
#include "proto/gt.pb.h"

namespace gt {

inline constexpr uint32_t kClientBatchField = 2;  // ClientMessage.batch
inline constexpr uint32_t kBatchInstrsField = 1;  // ClientBatch.instrs (repeated)
inline constexpr uint32_t kWorkerBatchField = 3;  // DispatchMessage.batch
inline constexpr uint32_t kWorkerInstrsField = 3;  // WorkerBatch.instrs (repeated)
inline constexpr uint32_t kInstrDataField = 8;     // Instr.data
inline constexpr uint32_t kInstrHotField = 12;     // Instr.hot
inline constexpr uint32_t kHotDataField = 4;       // HotRun.data (repeated)
inline constexpr PayloadChainLevel kUploadChain[] = {{kClientBatchField}, {kBatchInstrsField, true}};
inline constexpr PayloadChainLevel kWorkerUploadChain[] = {{kWorkerBatchField},
                                                           {kWorkerInstrsField, true}};
inline constexpr PayloadChainLevel kWorkerHotChain[] = {
    {kWorkerBatchField}, {kWorkerInstrsField, true}, {kInstrHotField}};

// scan_payload_frame for each hop's layout (the worker's: either of its two).
Result<PayloadScanResult> scan_upload_frame(std::string_view prefix, size_t body_size);
Result<PayloadScanResult> scan_worker_upload_frame(std::string_view prefix, size_t body_size);

// Merges the frame whose body is `head` followed by `payload` (body_size bytes in all) into
// `msg` (cleared by the caller, as for merge_frame): the batch's fields, then its last
// instruction, whose data becomes `payload` (moved, not copied). DataLoss when `head` is not
// that layout's header for this body size.
Status merge_upload_frame(std::string_view head, size_t body_size, std::string&& payload,
                          v1::ClientMessage* msg);
Status merge_upload_frame(std::string_view head, size_t body_size, std::string&& payload,
                          v1::DispatchMessage* msg);

// Writes a batch to its worker: payload-last when its last instruction carries an upload of at
// least kPayloadLastBytes as its last payload (its data, or its hot run's last data entry) and
// the rest of the batch is small (it is copied into the header), the payload then written from
// the instruction's string, kept until it is out; else from the message
// (FramedConnection::send_owned). `header` is scratch, reused between calls.
inline constexpr size_t kPayloadLastBytes = size_t{1} << 20;
inline constexpr size_t kPayloadLastRestBytes = size_t{64} << 10;
Status send_worker_batch(FramedConnection& io, v1::DispatchMessage&& msg, std::string* header);

}  // namespace gt
