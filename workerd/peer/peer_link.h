// PeerLink: moves tensor bytes directly between workers (ARCHITECTURE §5: never through the
// dispatcher). One implementation per transport: TCP between CPU workers (tcp_peer_link),
// NCCL between CUDA workers. The executor runs communication instructions (libgtcore/comm.def)
// through it, in the one global order the dispatcher emitted, so collectives cannot deadlock.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "libgtcore/comm.h"
#include "libgtcore/status.h"
#include "workerd/backend.h"

namespace gt::worker {

struct PeerStats {
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
};

class PeerLink {
 public:
  virtual ~PeerLink() = default;

  // Where peers reach this worker (sent to the dispatcher in Hello.worker.peer_address).
  virtual std::string address() const = 0;
  // This worker's id and its peers' addresses (from the dispatcher's PeerTable).
  virtual void set_self(uint32_t worker_id) = 0;
  virtual void set_peers(const std::map<uint32_t, std::string>& addresses) = 0;
  // Runs one communication instruction on the executor thread. `out` is allocated by the
  // executor from infer_comm_meta (unused for send). Errors (a peer gone, a timeout) are
  // Statuses that poison the result, never crashes or unbounded waits.
  virtual Status run(CommId comm, const CommGroup& group, const Tensor* input, Tensor* out,
                     uint64_t session) = 0;
  // Drops every buffered message and connection (the dispatcher went away).
  virtual void reset() = 0;
  // A session ended: drop what is buffered for it (unmatched sends of a session that left).
  virtual void end_session(uint64_t session) {}
  virtual PeerStats stats() const = 0;
};

}  // namespace gt::worker
