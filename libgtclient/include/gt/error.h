// gt::Error: the one exception type at libgtclient's public surface. It keeps the status code
// of the failure (gt/core/code.h) from wherever it was found: the call site's checks
// (kInvalidArgument for a shape, dtype or axis error), a worker (kResourceExhausted for out of
// memory, kOutOfRange for an index value, ... carried on the wire), the dispatcher (quotas) or
// the session (kUnavailable when it is lost, kDeadlineExceeded when a sync point times out).
// Python picks its exception class from code() (gt.ShapeError, gt.OutOfMemoryError, ...).
#pragma once

#include <stdexcept>
#include <string>

#include "gt/core/code.h"

namespace gt {

class Error : public std::runtime_error {
 public:
  // A user error found at the call site (the common case: shape, dtype, axis, bad argument).
  explicit Error(const std::string& what) : Error(Code::kInvalidArgument, what) {}
  Error(Code code, const std::string& what) : std::runtime_error(what), code_(code) {}

  Code code() const { return code_; }
  // Raised by a sync point (fetch, item, synchronize, stats) for work queued earlier, rather
  // than by the call that was just made.
  bool deferred() const { return deferred_; }
  Error& set_deferred(bool d = true) {
    deferred_ = d;
    return *this;
  }

 private:
  Code code_;
  bool deferred_ = false;
};

}  // namespace gt
