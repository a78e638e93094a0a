// A blocking, raw-protocol client for tests: speaks frames directly so tests can send anything
// (wrong versions, forged ids, malformed or oversized frames) and read exactly what comes back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proto/gt.pb.h"

namespace gt::testing {

class RawClient {
 public:
  explicit RawClient(const std::string& address);  // "127.0.0.1:port" or "unix:/path"
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  // Sends Hello (with the given version / hash overrides) and returns the answer.
  v1::ServerMessage hello(uint32_t major = 0, uint64_t op_hash = 0, const std::string& token = "");
  // Registers as a worker (hostile-worker tests); the answer uses the same envelope fields.
  v1::ServerMessage hello_as_worker(const std::string& secret);
  void send(const v1::ClientMessage& m);
  // Any message in a frame (a fake worker sends WorkerMessages).
  void send_message(const google::protobuf::MessageLite& m);
  void send_raw(const std::string& bytes);
  // `m` in one frame with `fds` attached (SCM_RIGHTS: Unix sockets only).
  void send_with_fds(const google::protobuf::MessageLite& m, const std::vector<int>& fds);
  // Next message, or nullopt on timeout / closed connection.
  std::optional<v1::ServerMessage> read(int timeout_ms = 5000);
  // Next frame's body, unparsed (a fake worker reads DispatchMessages).
  std::optional<std::string> read_frame(int timeout_ms = 5000);
  // True once the peer has closed the connection (reads EOF within the timeout).
  bool closed_by_peer(int timeout_ms = 5000);

  // Conveniences built on batches.
  std::vector<v1::WorkerStats> worker_stats();
  v1::Reply request(v1::Request::Kind kind, uint64_t id = 0);
  // The same request at the end of `m`, so that m's instructions travel in its frame.
  v1::Reply request_with(v1::ClientMessage m, v1::Request::Kind kind, uint64_t id = 0);

 private:
  bool read_exact(char* p, size_t n, int timeout_ms);
  int fd_ = -1;
  uint64_t next_request_ = 1000;
};

// A connected Unix-socket fd to `path`, or -1 (tests that speak frames on a bare fd).
int connect_unix(const std::string& path);

// Every worker's statistics, by worker id, asked by a fresh client of `address` (throws when the
// dispatcher does not welcome it).
std::vector<v1::WorkerStats> sorted_worker_stats(const std::string& address);

}  // namespace gt::testing
