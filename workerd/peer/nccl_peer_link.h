// NcclPeerLink: the PeerLink between CUDA workers (ARCHITECTURE §5), over NCCL. Built only when CUDA
// and nccl.h are found (GT_HAVE_NCCL); libnccl.so.2 is loaded at run time (dlopen), so a worker
// built with NCCL still starts on a machine without it (available() says whether it loaded).
//
// Every instruction runs in three steps, on the executor thread:
//  1. A header exchange over the TCP link (an all_gather of a few int64s among the group, or
//     between the two ends of a send/recv, on a tag of its own): magic, dtype, element count,
//     the GPU's identity and the communicator each member holds. A poisoned or failed member
//     passes a poisoned header, which the TCP link turns into markers, so every member learns
//     of it and all skip NCCL together (NCCL itself cannot carry a marker). Everything decided
//     from the headers is decided identically by every member, since all see the same headers.
//  2. Communicator: one per distinct member set (keyed by the sorted worker ids; ranks follow
//     that order), created on first use and whenever the members' headers disagree about the
//     one they hold (after a reset or an abort on one side). The set's lowest id calls
//     ncclGetUniqueId and sends the 128-byte id to the others over the TCP link (send/recv on
//     a bootstrap tag); every member then runs a non-blocking ncclCommInitRankConfig polled
//     against the peer timeout, so a missing peer fails the instruction instead of hanging.
//  3. The NCCL call on the session's CUDA stream, then a poll of the stream against the same
//     deadline; a timeout aborts the communicator (ncclCommAbort) and fails the instruction.
//
// Two members on one GPU cannot each hold a rank of one communicator: when the headers show a
// shared GPU the instruction goes through the host-staged TCP path instead (fallback option),
// or fails with a clear error when the fallback is off (peer_transport: nccl).
// Groups must consist of workers that all run this link (no CPU worker among them): a CPU
// worker does not take part in the header exchange.
#pragma once

#include <memory>

#include "workerd/peer/peer_link.h"

namespace gt::worker {

struct NcclPeerLinkOptions {
  int timeout_ms = 60000;       // deadline of one instruction, NCCL set-up included
  bool staged_fallback = true;  // members sharing a GPU exchange through host buffers
};

class NcclPeerLink final : public PeerLink {
 public:
  // Whether libnccl.so.2 could be loaded (the first call tries; later calls are free).
  static bool available();
  // `tcp`: the TCP link (headers, bootstrap, fallback); `device`: a backend with session
  // streams (Backend::session_streams(): the CUDA backend). Both must outlive the link. Fails
  // when NCCL cannot be loaded or the backend has no session streams.
  static Result<std::unique_ptr<NcclPeerLink>> create(PeerLink& tcp, Backend& device,
                                                      NcclPeerLinkOptions opts = {});
  ~NcclPeerLink() override;
  NcclPeerLink(const NcclPeerLink&) = delete;
  NcclPeerLink& operator=(const NcclPeerLink&) = delete;

  std::string address() const override;
  void set_self(uint32_t worker_id) override;
  void set_peers(const std::map<uint32_t, std::string>& addresses) override;
  Status run(CommId comm, const CommGroup& group, const Tensor* input, Tensor* out,
             uint64_t session) override;
  void reset() override;
  void end_session(uint64_t session) override;
  PeerStats stats() const override;

  struct Impl;

 private:
  explicit NcclPeerLink(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gt::worker
