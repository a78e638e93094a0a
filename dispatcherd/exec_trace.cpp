// Worker-side timing in the instruction log (ARCHITECTURE §9). While the log (or a live trace)
// records, batches go out with WorkerBatch.trace set and the worker's acks bring back when each
// executor turn and each peer exchange ran (ExecTiming, on the worker's steady clock). Each
// becomes one line:
//
//   EXEC | WORKER:<id> | <first op> | 0B    | session= batch= instrs=B-E start= end= queued_us=
//                                              [requests=R,...] wstart= wend= ack_offset=
//   PEER | WORKER:<id> | <send/recv/...> | <bytes> | session= tag= peers=P,... start= end=
//                                              wstart= wend= ack_offset=
//
// Clocks: an ack's arrival here minus its sending on the worker (Ack.sent_ns) is the offset
// between the two clocks plus the ack's transit time. Its least value over the worker's acks
// is the best estimate (the ack that waited least); start= / end= use the least seen so far,
// in the log's time base (seconds). wstart= / wend= (worker clock, ns) and this ack's
// ack_offset= (ns) are there so that gt-trace can use the least over the whole log: one offset
// per worker, so the worker's own order of events is kept exactly.
#include <fmt/format.h>

#include <algorithm>

#include "dispatcherd/worker_pool.h"
#include "gt/core/ops.h"
#include "libgtcore/comm.h"

namespace gt::dispatcher {
namespace {

const char* first_op_name(const v1::ExecTiming& t) {
  if (t.op() != 0)
    if (auto op = op_from_wire(t.op())) return op_name(*op);
  if (t.begin() < t.end()) return "comm";  // the turn starts with a communication instruction
  return t.requests_size() > 0 ? "requests" : "frees";  // or the end of a session
}

}  // namespace

void WorkerPool::log_timings(WorkerState& w, const v1::Ack& ack) {
  if (!log_->enabled()) return;  // asked for while recording; the recording has ended
  const int64_t arrived = log_->ns_at(InstructionLog::Clock::now());
  const int64_t sample = arrived - static_cast<int64_t>(ack.sent_ns());
  w.clock_offset_ns = std::min(w.clock_offset_ns, sample);
  const int64_t offset = w.clock_offset_ns;
  const std::string source = fmt::format("WORKER:{}", w.id);
  auto seconds = [&](uint64_t worker_ns) {
    return static_cast<double>(static_cast<int64_t>(worker_ns) + offset) * 1e-9;
  };
  fmt::memory_buffer d;
  for (const v1::ExecTiming& t : ack.timings()) {
    d.clear();
    auto out = fmt::appender(d);
    if (t.comm() != 0) {
      auto c = comm_from_wire(t.comm());
      fmt::format_to(out, "session={} tag={} peers=", t.session(), t.tag());
      for (int i = 0; i < t.peers_size(); ++i)
        fmt::format_to(out, "{}{}", i ? "," : "", t.peers(i));
      fmt::format_to(out, " start={:.6f} end={:.6f} wstart={} wend={} ack_offset={}",
                     seconds(t.start_ns()), seconds(t.end_ns()), t.start_ns(), t.end_ns(), sample);
      log_->write("PEER", source, c ? comm_name(*c) : "comm", t.bytes(),
                  std::string_view(d.data(), d.size()));
      continue;
    }
    fmt::format_to(out, "session={} batch={} instrs={}-{} start={:.6f} end={:.6f} queued_us={:.1f}",
                   t.session(), t.first_seq(), t.begin(), t.end(), seconds(t.start_ns()),
                   seconds(t.end_ns()),
                   t.start_ns() > t.received_ns() ? (t.start_ns() - t.received_ns()) * 1e-3 : 0.0);
    if (t.requests_size() > 0) {
      fmt::format_to(out, " requests=");
      for (int i = 0; i < t.requests_size(); ++i)
        fmt::format_to(out, "{}{}", i ? "," : "", t.requests(i));
    }
    fmt::format_to(out, " wstart={} wend={} ack_offset={}", t.start_ns(), t.end_ns(), sample);
    log_->write("EXEC", source, first_op_name(t), 0, std::string_view(d.data(), d.size()));
  }
}

}  // namespace gt::dispatcher
