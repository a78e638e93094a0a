#include "libgtcore/status.h"

namespace gt {

const char* code_name(Code c) {
  switch (c) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: return "INVALID_ARGUMENT";
    case Code::kNotFound: return "NOT_FOUND";
    case Code::kOutOfRange: return "OUT_OF_RANGE";
    case Code::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case Code::kFailedPrecondition: return "FAILED_PRECONDITION";
    case Code::kPermissionDenied: return "PERMISSION_DENIED";
    case Code::kUnavailable: return "UNAVAILABLE";
    case Code::kUnimplemented: return "UNIMPLEMENTED";
    case Code::kDataLoss: return "DATA_LOSS";
    case Code::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case Code::kInternal: return "INTERNAL";
  }
  return "UNKNOWN";
}

std::string Status::to_string() const {
  if (is_ok()) return "OK";
  return fmt::format("{}: {}", code_name(code_), message_);
}

}  // namespace gt
