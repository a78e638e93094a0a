// An in-process gt::dispatcher::Dispatcher driven over socketpairs, single-threaded: the fuzz
// harnesses (and their regression tests) write bytes into one end, run the io_context and the
// fake peers until nothing moves any more, then tear everything down.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "dispatcherd/dispatcher.h"
#include "dispatcherd/instruction_log.h"
#include "dispatcherd/users.h"
#include "libgtcore/asio.h"
#include "libgtcore/frame_codec.h"
#include "proto/gt.pb.h"
#include "workerd/cpu/cpu_backend.h"
#include "workerd/executor.h"

namespace gt::fuzz {

// Our end of a socketpair (non-blocking): bytes queued to write, frames read.
class Peer {
 public:
  explicit Peer(int fd);
  ~Peer();
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  void queue_raw(std::string_view bytes) { out_.append(bytes); }
  void queue(const google::protobuf::MessageLite& m);
  // Half-closes (SHUT_WR) once everything queued has been written.
  void shutdown_write() { want_shutdown_ = true; }
  // Writes what the socket takes, reads what is there; true when any byte moved.
  bool pump();
  // The next frame body read, if any.
  std::optional<std::string> next_frame();
  bool eof() const { return eof_; }
  // DispatcherRig::settle() checks and drops what a client peer receives, unless it is kept
  // for next_frame() (tests that look at the replies).
  void keep_frames() { keep_frames_ = true; }
  bool keeps_frames() const { return keep_frames_; }
  bool all_written() const { return out_off_ == out_.size(); }

 private:
  int fd_;
  std::string out_;
  size_t out_off_ = 0;
  bool want_shutdown_ = false, shut_ = false, eof_ = false, bad_stream_ = false;
  bool keep_frames_ = false;
  FrameDecoder dec_{uint64_t{1} << 30};
  std::deque<std::string> inbox_;
};

// A worker on the far end of a socketpair. It registers with a valid Hello; then it either
// discards what the dispatcher sends, or executes batches on its own Executor + CpuBackend and
// answers like gt-workerd (acks, error reports, replies, heartbeats).
class FakeWorker {
 public:
  FakeWorker(int fd, bool execute, uint64_t max_memory_bytes);
  void hello(const std::string& secret);
  bool step();  // pumps the socket and handles what arrived; true when anything happened
  bool welcomed() const { return welcomed_; }
  size_t tensors() const { return executor_.tensor_count(); }
  uint64_t allocated_bytes() const { return backend_.stats().allocated_bytes; }
  uint64_t executed_seq() const { return executed_seq_; }
  Peer& peer() { return peer_; }

 private:
  Peer peer_;
  bool execute_;
  worker::CpuBackend backend_;
  worker::Executor executor_;
  bool welcomed_ = false;
  uint64_t executed_seq_ = 0;
};

class DispatcherRig {
 public:
  // `instruction_log`: on (into /dev/null), its formatting of hostile values runs too; off, the
  // dispatcher replays hot paths by reference (it does not while it logs each instruction).
  explicit DispatcherRig(dispatcher::DispatcherOptions o, dispatcher::UserTable users = {},
                         bool instruction_log = true);
  ~DispatcherRig();
  DispatcherRig(const DispatcherRig&) = delete;
  DispatcherRig& operator=(const DispatcherRig&) = delete;

  // A new connection accepted by the dispatcher with `transport` ("unix" / "tcp").
  Peer& connect(const std::string& transport);
  // A registered worker (call settle() for the Welcome to arrive).
  FakeWorker& add_worker(bool execute, const std::string& secret, uint64_t max_memory_bytes);
  // Runs the io_context and every peer until nothing moves (bounded by max_rounds).
  void settle(int max_rounds = 20000);
  dispatcher::Dispatcher& dispatcher() { return *dispatcher_; }

 private:
  int make_pair(const std::string& transport);
  asio::io_context io_;
  dispatcher::InstructionLog log_;  // into /dev/null: its formatting of hostile values runs
  std::unique_ptr<dispatcher::Dispatcher> dispatcher_;
  std::deque<std::unique_ptr<Peer>> peers_;
  std::deque<std::unique_ptr<FakeWorker>> workers_;
};

// A users file (loaded once): alice has a token, a session quota of 1, a byte quota of 64 KiB
// and weight 2; root has a token and is an admin; everyone else gets the defaults.
const dispatcher::UserTable& fuzz_users();

// A client Hello that the dispatcher welcomes (with `token` when tokens are configured).
v1::ClientMessage client_hello(const std::string& token = "");
v1::WorkerMessage worker_hello(const std::string& secret);

}  // namespace gt::fuzz
