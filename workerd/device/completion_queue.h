// CompletionQueue: the thread on which an asynchronous device's completions run (ARCHITECTURE §6:
// issue is not completion). A device's host callbacks (cudaLaunchHostFunc, the sim device's
// host functions) may not call the device API and must return quickly, since the stream waits
// for them; they only push a task here. Tasks -- sending a sync's reply or a fetch's bytes,
// destroying a finished session's stream -- run in push order on this one thread, which may
// call the device API and may block on a socket without stalling any stream.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace gt::worker::device {

class CompletionQueue {
 public:
  CompletionQueue();
  ~CompletionQueue();  // runs what is queued, then joins
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  void push(std::function<void()> task);
  // Runs `fn` on this thread every `period` while no task is queued (a health poll). Set once,
  // before tasks are pushed.
  void set_idle(std::function<void()> fn, std::chrono::milliseconds period);
  // Returns once every task pushed before the call has run (not from a task).
  void drain();

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  uint64_t pushed_ = 0, done_ = 0;
  bool stop_ = false;
  std::function<void()> idle_;
  std::chrono::milliseconds idle_period_{100};
  std::thread thread_;
};

}  // namespace gt::worker::device
