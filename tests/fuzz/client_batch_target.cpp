// The dispatcher's handling of a client's instruction batches: a welcomed session (a fake worker
// registered first) sends the input, as ClientBatch protos or as raw frames, then hangs up, and
// the dispatcher drains. With an executing worker the whole round trip runs (rewriting, DRR
// scheduling behind a small worker window, flow control with a small session window, acks,
// replies), drain must complete, and once the client is gone the worker must hold nothing.
#include <string>

#include "tests/fuzz/dispatcher_rig.h"
#include "tests/fuzz/harness.h"

namespace gt::fuzz {

void run_client_batch(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const uint8_t mode = data[0];
  const bool execute = mode & kBatchExecute;
  const bool user = mode & kBatchUser;
  dispatcher::DispatcherOptions o;
  o.max_frame_bytes = kFuzzMaxFrameBytes;
  o.worker_window = 16;   // the DRR scheduler holds batches back often
  o.session_window = 16;  // and flow control pauses / resumes the client
  o.user_window = 32;
  if (mode & kBatchSegments) o.hot_path_segment = 3;
  DispatcherRig rig(o, user ? fuzz_users() : dispatcher::UserTable{}, !(mode & kBatchNoLog));
  FakeWorker& w = rig.add_worker(execute, "", kRigWorkerMemoryBytes);
  rig.settle();
  GT_FUZZ_CHECK(w.welcomed(), "the worker was not welcomed");
  rig.dispatcher().start_heartbeats();  // the first ping goes out at once
  // A non-admin user with quotas over TCP, or the single-user admin over the Unix socket.
  Peer& c = rig.connect(user ? "tcp" : "unix");
  c.queue(client_hello(user ? kTokenAlice : ""));
  rig.settle();
  GT_FUZZ_CHECK(rig.dispatcher().num_sessions() == 1, "the client was not welcomed");

  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if (mode & kBatchRaw) {
    c.queue_raw(rest);
  } else {
    // [u16 little-endian length][ClientBatch] ..., a short tail is one last batch.
    while (!rest.empty()) {
      size_t n = rest.size();
      if (rest.size() >= 2) {
        n = static_cast<uint8_t>(rest[0]) | (static_cast<size_t>(static_cast<uint8_t>(rest[1])) << 8);
        rest.remove_prefix(2);
        n = std::min(n, rest.size());
      }
      v1::ClientMessage m;
      if (m.mutable_batch()->ParseFromArray(rest.data(), static_cast<int>(n))) c.queue(m);
      rest.remove_prefix(n);
    }
  }
  c.shutdown_write();
  rig.settle();
  bool drained = false;
  rig.dispatcher().drain(60000, [&drained] { drained = true; });
  rig.settle();
  if (execute) {
    // Acks flowed, so the client was read to its end and its session is over: everything it
    // made on the worker must have been freed (ARCHITECTURE §8), and nothing may be left in flight.
    GT_FUZZ_CHECK(drained, "drain did not complete although the worker acknowledged everything");
    GT_FUZZ_CHECK(rig.dispatcher().num_sessions() == 0, "the session outlived its connection");
    GT_FUZZ_CHECK(w.tensors() == 0, "%zu tensors left on the worker after the client left",
                  w.tensors());
    GT_FUZZ_CHECK(w.allocated_bytes() == 0, "%llu bytes left on the worker after the client left",
                  static_cast<unsigned long long>(w.allocated_bytes()));
  }
}

}  // namespace gt::fuzz
