// Executor: communication instructions (libgtcore/comm.def), run through the PeerLink.
//
// Like ops, every field is re-checked and failures poison the result and are reported. Unlike
// ops, a member that cannot take part (a poisoned or unknown input, a bad shape, no memory)
// still runs the instruction's message pattern once the group is known: the link then sends
// poison markers in place of data, so no peer waits for a message that will not come, and the
// peers' results carry this worker's error (ARCHITECTURE §2).
#include <spdlog/spdlog.h>

#include "libgtcore/comm.h"
#include "libgtcore/instr_codec.h"
#include "workerd/executor.h"
#include "workerd/peer/peer_link.h"

namespace gt::worker {

void Executor::run_comm(uint64_t session, const v1::Instr& in) {
  auto dec = decode_comm_instr(in);
  if (!dec.is_ok()) {
    fail(session, in.out(), "instruction", dec.status());
    return;
  }
  const CommId c = dec->comm;
  const char* name = comm_name(c);
  const bool has_result = c != CommId::k_send;
  const uint64_t out_handle = in.out();
  if (has_result && out_handle == 0) {
    fail(session, 0, name, invalid_argument("missing result handle"));
    return;
  }
  if (!has_result && out_handle != 0) {
    fail(session, 0, name, invalid_argument("send has no result, got handle {}", out_handle));
    return;
  }
  if (has_result && tensors_.count(out_handle)) {
    fail(session, 0, name, invalid_argument("result handle {} is already in use", out_handle));
    return;
  }
  if (!peer_) {
    fail(session, out_handle, name, unimplemented("this worker has no peer link"));
    return;
  }
  auto group = decode_comm(c, dec->attrs, worker_id_);
  if (!group.is_ok()) {  // the message pattern is unknown: nothing can be sent
    fail(session, out_handle, name, group.status());
    return;
  }

  const Tensor* input = nullptr;
  std::shared_ptr<const ErrorRecord> poison;
  Status local;
  metas_.clear();
  for (uint64_t h : in.inputs()) {
    auto it = tensors_.find(h);
    if (it == tensors_.end() || it->second.session != session) {
      if (local.is_ok()) local = not_found("unknown tensor handle {}", h);
      continue;
    }
    if (it->second.poison && !poison) poison = it->second.poison;
    input = &it->second;
    metas_.push_back(it->second.meta);
  }
  Tensor out;
  if (local.is_ok() && !poison) {
    auto meta = infer_comm_meta(c, metas_, dec->attrs, *group);
    if (!meta.is_ok()) {
      local = meta.status();
    } else if (has_result) {
      out.meta = *meta;
      auto storage = backend_.alloc(static_cast<size_t>(out.meta.nbytes()));
      if (storage.is_ok())
        out.storage = std::move(*storage);
      else
        local = storage.status();
    }
  }
  const bool reported = !local.is_ok();
  if (reported) {
    fail(session, out_handle, name, local);  // poisons the result and reports, like an op
    poison = std::make_shared<const ErrorRecord>(record(name, local));
  }
  if (poison) {  // the link sends markers carrying it instead of data
    out.poison = poison;
    out.storage.reset();
  }

  const auto started = tracing_ ? ExecTimings::Clock::now() : ExecTimings::Clock::time_point{};
  Status st = peer_->run(c, *group, input, &out, session);
  if (tracing_) {
    // Peer exchange, timed on its own (gt-trace draws it as a flow between the members).
    std::vector<uint32_t> peers;
    if (c == CommId::k_send || c == CommId::k_recv) peers.push_back(group->peer);
    else peers = group->workers;
    const Tensor* moved = c == CommId::k_send ? input : &out;
    const uint64_t bytes = moved && !moved->poison ? static_cast<uint64_t>(moved->meta.nbytes()) : 0;
    timings_.add_comm(session, comm_wire_id(c), group->tag, peers, bytes, started,
                      ExecTimings::Clock::now());
  }
  if (reported) return;
  if (!st.is_ok()) {
    fail(session, out_handle, name, st);
    return;
  }
  // A poison that came from an input or from a peer's marker is inherited without a new report.
  if (!out.poison) count_op();
  if (has_result) put(session, out_handle, std::move(out));
}

}  // namespace gt::worker
