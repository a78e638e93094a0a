#include "dispatcherd/trace_recorder.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace gt::dispatcher {

struct TraceRecorder::Recording {
  explicit Recording(asio::io_context& io) : timer(io) {}
  std::shared_ptr<InstructionLog::Tap> tap = std::make_shared<InstructionLog::Tap>(kMaxBytes);
  asio::steady_timer timer;
  std::function<void(std::string)> done;
};

TraceRecorder::TraceRecorder(asio::io_context& io, InstructionLog& log,
                             std::function<void(InstructionLog::Tap&)> describe)
    : io_(io), log_(log), describe_(std::move(describe)) {}

TraceRecorder::~TraceRecorder() {
  for (auto& r : running_) {
    r->timer.cancel();
    log_.detach(r->tap);
  }
}

bool TraceRecorder::record(double seconds, std::function<void(std::string)> done) {
  if (static_cast<int>(running_.size()) >= kMaxConcurrent) return false;
  if (!(seconds > 0)) seconds = 0.001;
  seconds = std::min(seconds, kMaxSeconds);
  auto r = std::make_shared<Recording>(io_);
  r->done = std::move(done);
  if (describe_) describe_(*r->tap);
  log_.attach(r->tap);
  running_.push_back(r);
  spdlog::debug("trace: recording {} s ({} running)", seconds, running_.size());
  r->timer.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds)));
  r->timer.async_wait([this, r](boost::system::error_code ec) {
    if (!ec) finish(r);
  });
  return true;
}

void TraceRecorder::finish(const std::shared_ptr<Recording>& r) {
  auto it = std::find(running_.begin(), running_.end(), r);
  if (it == running_.end()) return;  // finished already
  running_.erase(it);
  log_.detach(r->tap);
  std::string text = std::move(r->tap->text);
  if (r->tap->dropped > 0)
    text += fmt::format("# {} lines dropped: over the recording's {} MiB\n", r->tap->dropped,
                        kMaxBytes >> 20);
  spdlog::debug("trace: recording done, {} bytes", text.size());
  auto done = std::move(r->done);
  if (done) done(std::move(text));
}

void TraceRecorder::finish_all() {
  for (auto running = running_; auto& r : running) {
    r->timer.cancel();
    finish(r);
  }
}

}  // namespace gt::dispatcher
