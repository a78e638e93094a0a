// The dispatcher's handling of a connection's first frames: Hello parsing, version and op-table
// checks, worker secrets, tokens and quotas, and whatever follows on that connection.
#include "tests/fuzz/dispatcher_rig.h"
#include "tests/fuzz/harness.h"

namespace gt::fuzz {

void run_handshake(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const uint8_t mode = data[0];
  dispatcher::DispatcherOptions o;
  o.max_frame_bytes = kFuzzMaxFrameBytes;
  o.worker_window = 16;
  dispatcher::UserTable users;
  if (mode & kHandshakeUsers) {
    users = fuzz_users();
    o.worker_secret = kWorkerSecret;
  }
  DispatcherRig rig(o, std::move(users));
  if (mode & kHandshakeWorkerFirst) {
    // It executes (and acks), so flow control cannot hold the connection open at the end.
    FakeWorker& w = rig.add_worker(true, kWorkerSecret, kRigWorkerMemoryBytes);
    rig.settle();
    GT_FUZZ_CHECK(w.welcomed(), "a worker with the right secret was not welcomed");
  }
  Peer& p = rig.connect(mode & kHandshakeTcp ? "tcp" : "unix");
  p.queue_raw(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  p.shutdown_write();
  rig.settle();
  // The connection hung up: nothing of it may remain.
  GT_FUZZ_CHECK(rig.dispatcher().num_sessions() == 0, "a session outlived its connection");
}

}  // namespace gt::fuzz
