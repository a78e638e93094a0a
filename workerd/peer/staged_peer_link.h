// StagedPeerLink: a host-memory PeerLink (TCP) for a backend whose tensors are not host memory
// (CUDA). Each communication instruction copies its input to a host buffer, runs the inner link
// on host tensors, and uploads the result. It is how CUDA workers exchange shards where NCCL is
// not available (e.g. two workers on one GPU); it costs two PCIe copies per message. CPU workers
// can be forced through it (worker option peer_staging) so the path is tested without a GPU.
#pragma once

#include "workerd/peer/peer_link.h"

namespace gt::worker {

class StagedPeerLink final : public PeerLink {
 public:
  // Both must outlive this link.
  StagedPeerLink(PeerLink& inner, Backend& device) : inner_(inner), device_(device) {}

  std::string address() const override { return inner_.address(); }
  void set_self(uint32_t worker_id) override { inner_.set_self(worker_id); }
  void set_peers(const std::map<uint32_t, std::string>& addresses) override {
    inner_.set_peers(addresses);
  }
  Status run(CommId comm, const CommGroup& group, const Tensor* input, Tensor* out,
             uint64_t session) override;
  void reset() override { inner_.reset(); }
  void end_session(uint64_t session) override { inner_.end_session(session); }
  PeerStats stats() const override { return inner_.stats(); }

 private:
  PeerLink& inner_;
  Backend& device_;
};

}  // namespace gt::worker
