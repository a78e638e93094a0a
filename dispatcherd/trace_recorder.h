// Live recording for gt-trace --live (ARCHITECTURE §9): GET /api/trace?seconds=N taps the
// instruction log's lines for N seconds and answers them as text, whether or not a log file is
// configured. While a recording runs the log is enabled, so workers are asked for timings
// (WorkerBatch.trace); when the last one ends, the default path pays nothing again.
//
// Bounded: at most kMaxSeconds, kMaxBytes of lines each (the rest counted and said in a comment
// line), kMaxConcurrent at a time. Runs on the dispatcher's io_context: the answer goes out from
// a timer, never blocking it.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dispatcherd/instruction_log.h"
#include "libgtcore/asio.h"

namespace gt::dispatcher {

namespace asio = boost::asio;

class TraceRecorder {
 public:
  static constexpr double kMaxSeconds = 60;
  static constexpr size_t kMaxBytes = 64u << 20;
  static constexpr int kMaxConcurrent = 4;

  // `describe` writes the state a recording starts from into its tap (workers, sessions: the
  // lines that named them were written before it started).
  TraceRecorder(asio::io_context& io, InstructionLog& log,
                std::function<void(InstructionLog::Tap&)> describe);
  ~TraceRecorder();

  // Starts recording; `done` gets the lines after `seconds` (clamped to (0, kMaxSeconds]).
  // False (and `done` not called) when kMaxConcurrent recordings run already.
  bool record(double seconds, std::function<void(std::string)> done);
  // Ends every recording now (shutdown): each gets what it has.
  void finish_all();

 private:
  struct Recording;
  void finish(const std::shared_ptr<Recording>& r);

  asio::io_context& io_;
  InstructionLog& log_;
  std::function<void(InstructionLog::Tap&)> describe_;
  std::vector<std::shared_ptr<Recording>> running_;
};

}  // namespace gt::dispatcher
