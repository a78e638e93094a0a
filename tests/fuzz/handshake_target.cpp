// The dispatcher's handling of a connection's first frames: Hello parsing, version and op-table
// checks, worker secrets, tokens and quotas, and whatever follows on that connection.
#include <unistd.h>

#include <fstream>

#include "dispatcherd/users.h"
#include "tests/fuzz/dispatcher_rig.h"
#include "tests/fuzz/harness.h"

namespace gt::fuzz {

namespace {

// alice: a token, a session quota and a byte quota; root: an admin. Loaded once.
const dispatcher::UserTable& fuzz_users() {
  static const dispatcher::UserTable table = [] {
    char path[] = "/tmp/gt-fuzz-users-XXXXXX";
    int fd = ::mkstemp(path);
    GT_FUZZ_CHECK(fd >= 0, "mkstemp");
    ::close(fd);
    {
      std::ofstream f(path);
      f << "defaults:\n  max_sessions: 4\n  max_bytes: 1048576\n  window: 1024\n"
        << "users:\n"
        << "  alice:\n    token_sha256: " << dispatcher::sha256_hex(kTokenAlice) << "\n"
        << "    max_sessions: 1\n    max_bytes: 65536\n    weight: 2\n"
        << "  root:\n    token_sha256: " << dispatcher::sha256_hex(kTokenRoot) << "\n"
        << "    admin: true\n";
    }
    auto t = dispatcher::UserTable::load(path);
    ::unlink(path);
    GT_FUZZ_CHECK(t.is_ok(), "users file: %s", t.status().message().c_str());
    return *t;
  }();
  return table;
}

}  // namespace

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
