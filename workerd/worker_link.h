// WorkerLink: the worker's I/O side. Connects out to the dispatcher (TCP or Unix socket),
// registers the device, decodes batches on the I/O thread and hands them to the Executor; the
// executor's acks, error reports and replies come back through a mutex-guarded outbox that the
// I/O thread drains into one coalesced write. Reconnects with backoff when the dispatcher goes.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "libgtcore/asio.h"
#include "libgtcore/framed_connection.h"
#include "proto/gt.pb.h"
#include "workerd/backend.h"
#include "workerd/executor.h"

namespace gt::worker {

struct WorkerLinkOptions {
  std::string dispatcher;  // "host:port" or "unix:/path"
  uint64_t max_frame_bytes = kDefaultMaxFrameBytes;
  int reconnect_ms = 1000;
  bool exit_on_disconnect = false;
  std::string worker_secret;
};

class WorkerLink {
 public:
  WorkerLink(asio::io_context& io, Backend& backend, WorkerLinkOptions opts);
  ~WorkerLink();

  void start();            // connects (retrying) and serves until stop()
  void stop();
  bool registered() const { return registered_; }
  // Called once the dispatcher has welcomed this worker (for systemd READY=1).
  std::function<void(uint32_t worker_id)> on_registered;
  // Called when the link gives up for good (exit_on_disconnect).
  std::function<void()> on_exit;

 private:
  void connect();
  void schedule_reconnect();
  void on_frame(std::string_view body);
  void on_close(const Status& why);
  void send_from_executor(v1::WorkerMessage&& m);
  void flush_outbox();

  asio::io_context& io_;
  Backend& backend_;
  WorkerLinkOptions opts_;
  Executor executor_;
  std::shared_ptr<FramedConnection> conn_;
  asio::steady_timer reconnect_timer_;
  int backoff_ms_;
  bool registered_ = false;
  bool stopping_ = false;
  uint64_t generation_ = 0;  // bumps on every reconnect; stale outbox entries are dropped

  std::mutex out_mu_;
  std::vector<v1::WorkerMessage> outbox_;
  uint64_t outbox_generation_ = 0;
  bool flush_posted_ = false;
  std::vector<v1::WorkerMessage> sending_;
};

}  // namespace gt::worker
