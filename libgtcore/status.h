// Status / Result: the error currency inside GT. Exceptions appear only at libgtclient's
// public surface; everything below returns a Status so a bad instruction becomes a value.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "gt/core/code.h"

namespace gt {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == Code::kOk; }
  explicit operator bool() const { return is_ok(); }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string to_string() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// Status constructors with fmt-style formatting: gt::invalid_argument("bad axis {}", axis).
#define GT_DEFINE_STATUS_CTOR(fn, code)                                     \
  template <typename... Args>                                               \
  Status fn(fmt::format_string<Args...> f, Args&&... args) {                \
    return Status(code, fmt::format(f, std::forward<Args>(args)...));       \
  }
GT_DEFINE_STATUS_CTOR(invalid_argument, Code::kInvalidArgument)
GT_DEFINE_STATUS_CTOR(not_found, Code::kNotFound)
GT_DEFINE_STATUS_CTOR(out_of_range, Code::kOutOfRange)
GT_DEFINE_STATUS_CTOR(resource_exhausted, Code::kResourceExhausted)
GT_DEFINE_STATUS_CTOR(failed_precondition, Code::kFailedPrecondition)
GT_DEFINE_STATUS_CTOR(permission_denied, Code::kPermissionDenied)
GT_DEFINE_STATUS_CTOR(unavailable, Code::kUnavailable)
GT_DEFINE_STATUS_CTOR(unimplemented, Code::kUnimplemented)
GT_DEFINE_STATUS_CTOR(data_loss, Code::kDataLoss)
GT_DEFINE_STATUS_CTOR(deadline_exceeded, Code::kDeadlineExceeded)
GT_DEFINE_STATUS_CTOR(internal_error, Code::kInternal)
#undef GT_DEFINE_STATUS_CTOR

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}   // NOLINT: implicit by design

  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<1>(v_);
  }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace gt

#define GT_CONCAT_INNER(a, b) a##b
#define GT_CONCAT(a, b) GT_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` is not ok.
#define GT_RETURN_IF_ERROR(expr)                 \
  do {                                           \
    ::gt::Status gt_status_ = (expr);            \
    if (!gt_status_.is_ok()) return gt_status_;  \
  } while (0)

// GT_ASSIGN_OR_RETURN(auto x, make_x()): unwraps a Result or returns its Status.
#define GT_ASSIGN_OR_RETURN(lhs, expr)                                  \
  auto GT_CONCAT(gt_result_, __LINE__) = (expr);                        \
  if (!GT_CONCAT(gt_result_, __LINE__).is_ok())                         \
    return GT_CONCAT(gt_result_, __LINE__).status();                    \
  lhs = std::move(GT_CONCAT(gt_result_, __LINE__)).value()
