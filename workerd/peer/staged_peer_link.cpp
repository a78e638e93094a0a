#include "workerd/peer/staged_peer_link.h"

#include <memory>
#include <string>
#include <vector>

namespace gt::worker {
namespace {

// A host copy of a tensor's bytes. The Storage has no owner (nothing to release): the vector
// owns the bytes and outlives every use, which ends when run() returns.
struct HostCopy {
  std::vector<unsigned char> bytes;
  Tensor t;
};

void wrap(HostCopy& h, const TensorMeta& meta) {
  h.bytes.resize(static_cast<size_t>(meta.nbytes()));
  h.t.meta = meta;
  h.t.storage = std::make_shared<Storage>(h.bytes.data(), h.bytes.size(), h.bytes.size(), nullptr);
}

std::shared_ptr<const ErrorRecord> record(const char* op, const Status& st) {
  return std::make_shared<const ErrorRecord>(ErrorRecord{op, st.message(), "peer staging", st.code()});
}

}  // namespace

Status StagedPeerLink::run(CommId comm, const CommGroup& group, const Tensor* input, Tensor* out,
                           uint64_t session) {
  const char* name = comm_name(comm);
  // Whatever goes wrong here, the inner link still runs the message pattern (with a poison
  // marker in place of data), so no peer waits for a message that will not come.
  Status local;
  HostCopy in;
  if (input != nullptr) {
    in.t.meta = input->meta;
    if (input->poison || !input->storage) {
      in.t.poison = input->poison;
    } else {
      wrap(in, input->meta);
      local = device_.copy_to_host(*input, 0, in.bytes.data(), in.bytes.size(), session);
      if (!local.is_ok()) {
        in.t.storage.reset();
        in.t.poison = record(name, local);
      }
    }
  }
  HostCopy res;
  res.t.meta = out->meta;
  if (out->poison || !out->storage) {
    res.t.poison = out->poison;
  } else {
    wrap(res, out->meta);
  }

  Status st = inner_.run(comm, group, input != nullptr ? &in.t : nullptr, &res.t, session);
  if (!local.is_ok()) return local;
  if (!st.is_ok()) return st;
  if (res.t.poison) {  // a peer's marker: inherited, like the inner link does on the host
    out->poison = res.t.poison;
    out->storage.reset();
    return Status::ok();
  }
  if (!out->storage || res.bytes.empty()) return Status::ok();  // send, or an empty tensor
  // Upload (bool bytes from a peer normalized like any host bytes), then wait for it.
  GT_RETURN_IF_ERROR(device_.copy_from_host(*out, 0, res.bytes.data(), res.bytes.size(), session));
  return device_.synchronize(session);
}

}  // namespace gt::worker
