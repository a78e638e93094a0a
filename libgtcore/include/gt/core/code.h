// The status codes of GT's errors, shared by the daemons (gt::Status, libgtcore/status.h), the
// wire (gt.v1.ErrorInfo.code) and the client's exceptions (gt::Error::code(), and the Python
// exception classes chosen by code). The numeric values travel on the wire: never renumber one,
// only add at the end (a code this build does not know arrives as kInternal).
#pragma once

#include <cstdint>
#include <optional>

namespace gt {

enum class Code : int {
  kOk = 0,
  kInvalidArgument = 1,    // a user error: shape, dtype, axis, bad option value
  kNotFound = 2,           // a file, tensor or worker that does not exist
  kOutOfRange = 3,         // an index value outside its dim (found on the worker)
  kResourceExhausted = 4,  // out of memory on a worker, or over a quota
  kFailedPrecondition = 5, // the call is not valid in this state (poisoned input, too late)
  kPermissionDenied = 6,   // refused: credentials, another session's handle
  kUnavailable = 7,        // a worker, the dispatcher or the session is gone
  kUnimplemented = 8,      // no kernel for this op/dtype on this device
  kDataLoss = 9,           // a transfer lost or corrupted data
  kDeadlineExceeded = 10,  // no answer in time
  kInternal = 11,          // a bug: an invariant GT checks does not hold
};
inline constexpr int kNumCodes = 12;

// "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", ... (gRPC's spelling).
const char* code_name(Code c);

// An error's code read off the wire: unknown values (a newer peer's code) and 0 (an error
// record from a peer that did not set one) become kInternal.
inline Code error_code_from_wire(uint32_t v) {
  return v > 0 && v < static_cast<uint32_t>(kNumCodes) ? static_cast<Code>(v) : Code::kInternal;
}

}  // namespace gt
