#include "workerd/device/completion_queue.h"

#include <spdlog/spdlog.h>

#include <exception>

namespace gt::worker::device {

CompletionQueue::CompletionQueue() : thread_([this] { loop(); }) {}

CompletionQueue::~CompletionQueue() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CompletionQueue::push(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    tasks_.push_back(std::move(task));
    ++pushed_;
  }
  cv_.notify_all();
}

void CompletionQueue::set_idle(std::function<void()> fn, std::chrono::milliseconds period) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    idle_ = std::move(fn);
    idle_period_ = period;
  }
  cv_.notify_all();
}

void CompletionQueue::drain() {
  std::unique_lock<std::mutex> lk(mu_);
  const uint64_t target = pushed_;
  cv_.wait(lk, [&] { return done_ >= target; });
}

void CompletionQueue::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    if (idle_) {
      if (!cv_.wait_for(lk, idle_period_, [&] { return stop_ || !tasks_.empty(); })) {
        auto idle = idle_;
        lk.unlock();
        idle();
        lk.lock();
        continue;
      }
    } else {
      cv_.wait(lk, [&] { return stop_ || !tasks_.empty(); });
    }
    if (tasks_.empty()) return;  // stopping, and everything ran
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    lk.unlock();
    try {
      task();
    } catch (const std::exception& e) {
      // A completion must not take the worker down; what it failed to deliver is logged.
      spdlog::error("completion task failed: {}", e.what());
    }
    task = nullptr;  // what it captured (tensors, buffers) goes before the count says done
    lk.lock();
    ++done_;
    cv_.notify_all();
  }
}

}  // namespace gt::worker::device
