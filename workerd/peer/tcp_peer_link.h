// TcpPeerLink: the PeerLink between CPU workers (ARCHITECTURE §5), over plain TCP.
//
// - A listener thread accepts connections from peers; each accepted connection gets a receiver
//   thread that validates everything (hello, secret, every frame header; a peer is untrusted
//   input too) and drains whole messages into the Mailbox. A connection that sends anything
//   malformed is dropped on its own; the link keeps serving the others.
// - run() executes one communication instruction on the executor thread: it sends on a
//   per-peer outgoing connection (connected on first use, retried until the instruction's
//   deadline while the peer starts) and waits in the mailbox for what it needs, all within one
//   deadline (timeout_ms, default 60 s). Because receiving never waits on the executor, two
//   workers sending large tensors to each other at once cannot deadlock.
// - A poisoned input (or a local failure) turns every message this worker owes into a small
//   poison marker carrying the error, so peers finish at once with the same error on their
//   results (ARCHITECTURE §2) instead of waiting for data that will not come.
// - A peer whose connection drops mid-instruction fails that instruction at once (unavailable);
//   a peer that never answers fails it at the deadline (deadline_exceeded naming peer and tag).
//
// Tensors are host memory (the CPU backend); a device backend needs staging before using this.
// Wire format: peer_wire.h. Collectives: collectives_cpu.h.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "workerd/peer/mailbox.h"
#include "workerd/peer/peer_link.h"

namespace gt::worker {

struct TcpPeerLinkOptions {
  std::string listen_address = "127.0.0.1";  // also what peers are told to connect to
  uint16_t port = 0;                         // 0: an ephemeral port
  int timeout_ms = 60000;                    // deadline of one communication instruction
  std::string secret;                        // peers must present the same (empty: none)
  uint64_t max_buffered_bytes = uint64_t{1} << 30;  // unclaimed messages held at most
  int max_connections = 64;                  // accepted connections alive at once
  int hello_timeout_ms = 5000;               // a new connection must identify itself by then
};

class TcpPeerLink final : public PeerLink {
 public:
  // Binds and starts listening (the port is known when this returns).
  static Result<std::unique_ptr<TcpPeerLink>> create(TcpPeerLinkOptions opts);
  ~TcpPeerLink() override;
  TcpPeerLink(const TcpPeerLink&) = delete;
  TcpPeerLink& operator=(const TcpPeerLink&) = delete;

  std::string address() const override;
  void set_self(uint32_t worker_id) override;
  void set_peers(const std::map<uint32_t, std::string>& addresses) override;
  Status run(CommId comm, const CommGroup& group, const Tensor* input, Tensor* out,
             uint64_t session) override;
  void reset() override;
  void end_session(uint64_t session) override;
  PeerStats stats() const override;

  uint16_t port() const { return port_; }
  uint64_t buffered_bytes() const { return mailbox_.buffered_bytes(); }

 private:
  class Exchange;
  struct Conn;
  struct Thread;
  using Clock = std::chrono::steady_clock;

  explicit TcpPeerLink(TcpPeerLinkOptions opts);
  Status listen();
  void accept_loop();
  void serve_incoming(std::shared_ptr<Conn> c, uint64_t gen);
  void watch_outgoing(std::shared_ptr<Conn> c, uint64_t gen);
  bool spawn(std::shared_ptr<Conn> c, bool incoming, uint64_t gen);
  void stop_threads();

  // The connection to `peer`, connecting if needed. after_loss: a connection to it just broke,
  // so a refused connect means it is gone (no retrying until the deadline).
  Result<std::shared_ptr<Conn>> outgoing(uint32_t peer, Clock::time_point deadline,
                                         bool after_loss);
  Result<std::shared_ptr<Conn>> connect_peer(uint32_t peer, const std::string& addr,
                                             Clock::time_point deadline, bool after_loss);
  void drop_outgoing(uint32_t peer, const std::shared_ptr<Conn>& c);
  Status send_message(uint32_t peer, peer::MsgKind kind, uint64_t session, uint64_t tag,
                      uint32_t step, const void* data, uint64_t bytes, Clock::time_point deadline);

  TcpPeerLinkOptions opts_;
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};  // wakes the accept loop on shutdown
  uint16_t port_ = 0;
  std::thread accept_thread_;
  peer::Mailbox mailbox_;

  mutable std::mutex mu_;  // self_, peers_, out_, incoming_latest_
  bool has_self_ = false;
  uint32_t self_ = 0;
  std::map<uint32_t, std::string> peers_;
  std::map<uint32_t, std::shared_ptr<Conn>> out_;
  std::map<uint32_t, uint64_t> incoming_latest_;  // peer -> id of its newest connection
  uint64_t next_conn_id_ = 1;

  std::mutex threads_mu_;
  std::vector<std::unique_ptr<Thread>> threads_;
  std::atomic<bool> stopping_{false};

  std::atomic<uint64_t> bytes_sent_{0}, bytes_received_{0};
};

}  // namespace gt::worker
