// WorkerLink: the worker's I/O side. Connects out to the dispatcher (TCP or Unix socket),
// registers the device, decodes batches on the I/O thread and hands them to the Executor (or
// runs instruction-free batches inline when the executor is idle). Acks, error reports and
// replies are written directly by the thread that produced them, on a dup of the socket under
// a mutex: a round trip costs no hand-off back to the I/O thread. Reconnects with backoff.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "libgtcore/asio.h"
#include "libgtcore/framed_connection.h"
#include "proto/gt.pb.h"
#include "workerd/backend.h"
#include "workerd/executor.h"
#include "workerd/peer/peer_link.h"

namespace gt::worker {

struct WorkerLinkOptions {
  std::string dispatcher;  // "host:port" or "unix:/path"
  uint64_t max_frame_bytes = kDefaultMaxFrameBytes;
  int reconnect_ms = 1000;
  bool exit_on_disconnect = false;
  std::string worker_secret;
  int64_t turn_us = 2000;  // a session's turn on the executor while others wait (FairQueue)
  bool device_graphs = true;  // hot paths as device graphs (Executor::set_device_graphs)
  bool early_fetches = true;  // fetches answered inside hot paths (Executor::set_early_fetches)
  uint64_t device_queue_ops = 512;  // device pacing (Executor::set_device_queue_ops)
};

class WorkerLink {
 public:
  // `peer` (optional, outlives the link) carries shard exchange with other workers: its
  // address goes to the dispatcher in Hello, and the dispatcher's PeerTable comes back to it.
  WorkerLink(asio::io_context& io, Backend& backend, WorkerLinkOptions opts,
             PeerLink* peer = nullptr);
  ~WorkerLink();

  void start();            // connects (retrying) and serves until stop()
  void stop();
  bool registered() const { return registered_; }
  // Called once the dispatcher has welcomed this worker (for systemd READY=1).
  std::function<void(uint32_t worker_id)> on_registered;
  // Called when the link gives up for good (exit_on_disconnect, or the device was lost).
  std::function<void()> on_exit;
  // The device was lost (Backend::device_lost): the worker must exit non-zero.
  bool fatal() const { return fatal_; }

 private:
  void connect();
  void schedule_reconnect();
  void watch_dispatcher();
  void on_frame(std::string_view body);
  // A large upload whose payload was read into a string of its own (libgtcore/upload_frame.h).
  void on_payload_frame(std::string_view head, std::string&& payload);
  void on_message(v1::DispatchMessage& msg);  // a frame, parsed
  // Frames from this size on are looked at for a payload-last upload.
  static constexpr size_t kSplitUploadBytes = size_t{1} << 20;
  void on_close(const Status& why);
  void send_direct(const v1::WorkerMessage& m);
  // A frame in two parts (a fetch reply's header and its payload), one gather write.
  void send_direct_parts(std::string_view header, std::string_view payload);
  void set_out_fd(int fd);  // takes ownership; -1 closes the current one

  asio::io_context& io_;
  Backend& backend_;
  WorkerLinkOptions opts_;
  PeerLink* peer_;
  Executor executor_;
  std::shared_ptr<FramedConnection> conn_;
  asio::steady_timer reconnect_timer_;
  asio::steady_timer watchdog_;
  uint32_t heartbeat_ms_ = 0;
  std::chrono::steady_clock::time_point last_heard_ = std::chrono::steady_clock::now();
  int backoff_ms_;
  bool registered_ = false;
  bool stopping_ = false;
  bool fatal_ = false;
  uint64_t generation_ = 0;  // bumps on every reconnect; stale outbox entries are dropped

  std::mutex out_mu_;  // guards out_fd_ and out_buf_
  int out_fd_ = -1;    // dup of the connection's socket, for writes from any thread
  std::string out_buf_;
};

}  // namespace gt::worker
