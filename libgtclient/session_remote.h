// RemoteSession: the Session implementation over one connection to a dispatcher. User threads
// append instructions to a queue under a mutex; the I/O thread swaps the queue out and writes
// it as one frame whenever the socket can take more (coalescing under load, no added latency
// when idle). Sync points register a pending request and wait for its reply.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "libgtclient/session.h"
#include "libgtclient/session_embedded.h"
#include "libgtcore/asio.h"
#include "libgtcore/framed_connection.h"
#include "proto/gt.pb.h"

namespace gt::detail {

class RemoteSession : public Session {
 public:
  // Connects and completes the handshake (throws gt::Error on failure). `daemons`, when set,
  // are the embedded dispatcher/worker this session owns and tears down.
  RemoteSession(const std::string& address, std::unique_ptr<EmbeddedDaemons> daemons);
  ~RemoteSession() override;

  uint64_t emit(OpId op, const OpAttrs& attrs, std::span<const uint64_t> inputs) override;
  void free(uint64_t id) override;
  HostTensor fetch(uint64_t id) override;
  void synchronize() override;
  std::vector<WorkerStatsInfo> worker_stats() override;
  uint64_t seed() const override;
  uint64_t next_rng_counter() override;
  void manual_seed(uint64_t seed) override;
  uint64_t session_id() const override { return session_id_; }

 private:
  struct Pending {
    bool done = false;
    std::vector<v1::ErrorInfo> errors;
    HostTensor tensor;
    bool have_meta = false;
    std::vector<WorkerStatsInfo> stats;
  };

  void post_flush_locked();
  void flush();  // I/O thread
  void on_frame(std::string_view body);
  void on_close(const Status& why);
  // Queues a request and waits for its reply; throws on a lost session.
  Pending request(v1::Request::Kind kind, uint64_t id);
  [[noreturn]] void throw_lost_locked();

  asio::io_context io_;
  std::thread io_thread_;
  std::shared_ptr<FramedConnection> conn_;
  std::unique_ptr<EmbeddedDaemons> daemons_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // replies, handshake, queue drained
  v1::ClientMessage queue_;     // batch being filled by user threads
  v1::ClientMessage sending_;   // batch being serialized by the I/O thread
  size_t queued_ = 0;
  bool flush_posted_ = false;
  bool awaiting_drain_ = false;
  bool welcomed_ = false;
  std::string lost_;            // non-empty once the session is gone
  uint64_t next_id_ = 1;
  uint64_t next_request_id_ = 1;
  uint64_t session_id_ = 0;
  uint64_t seed_ = 67280421310721ull;  // PyTorch's default CPU seed
  uint64_t rng_counter_ = 0;
  std::unordered_map<uint64_t, Pending> pending_;
};

// "op: message (worker 0)" for one error; with several, says how many.
std::string format_errors(const std::vector<v1::ErrorInfo>& errors);

}  // namespace gt::detail
