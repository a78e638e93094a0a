// Error identity (ARCHITECTURE §2: errors are values, raised at sync points). Each failure is raised
// once: a FETCH that raises a poisoned tensor's error takes that error out of what the session's
// next SYNC reports, and a SYNC reports each error once, however many paths it arrived by.
//
// Every error the dispatcher hands a client carries an id (ErrorInfo.id, unique within the
// dispatcher): errors made here get one when made (new_error_id), errors a worker reports get
// one on arrival (ErrorLedger::reported), and an error in a worker's answer to a FETCH is the
// poison of a failure that worker reported earlier, which identify_fetched() finds:
//   - the failed result the worker names (ErrorInfo.failed_handle, set for failures on that
//     worker); else
//   - the fetched handle is the failed instruction's own result; else
//   - among this session's reported errors from that worker with the same op, message and
//     origin and an older result handle, the only one; else the only one whose report arrived
//     after the fetched tensor was issued (so a repeated failure in a loop, each step fetching
//     a result computed before the step's error came back, is matched to its own step).
//     "Older" and "issued" date the fetched tensor by its latest in-place write when it had one
//     (its `age`): a write can bring it the poison of a failure newer than its handle.
// An error it cannot tell apart keeps a fresh id and consumes nothing: it may then be raised
// again at SYNC, but a genuinely new error is never swallowed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "dispatcherd/placement.h"
#include "proto/gt.pb.h"

namespace gt::dispatcher {

// A fresh error id (never 0).
uint64_t new_error_id();

class ErrorLedger {
 public:
  // Reports kept per session for identify_fetched(); past that, only the exact handle rule of
  // the kept ones applies (ambiguity could not be ruled out any more).
  static constexpr size_t kMaxReports = 1024;

  // A worker reported `e` for result `handle`; `horizon` is the worker's next unused handle at
  // that moment (every tensor issued to it before the report has a smaller one). Stamps e.id.
  void reported(v1::ErrorInfo& e, uint32_t worker, uint64_t handle, uint64_t horizon);
  // A FETCH of `handle` on `worker` was answered with `e`: sets e.id to the reported error it
  // is when that can be told, else to a fresh id. Returns true when it was identified. `age`:
  // the worker's next unused handle at the tensor's latest in-place write (0: none).
  bool identify_fetched(v1::ErrorInfo& e, uint32_t worker, uint64_t handle,
                        uint64_t age = 0) const;
  bool overflowed() const { return overflowed_; }

 private:
  struct Report {
    uint32_t worker;
    uint64_t handle, horizon, id;
    std::string op, message, origin;
  };
  std::vector<Report> reports_;
  bool overflowed_ = false;
};

// Marks the session tensor whose piece on `worker` is `handle` (a failed instruction's result)
// as poisoned with `err`; its handles stay (the worker frees them as usual).
void poison_failed_result(std::unordered_map<uint64_t, TensorEntry>& tensors, uint32_t worker,
                          uint64_t handle, const std::shared_ptr<const v1::ErrorInfo>& err);

// Removes the errors with id `id` from `pending` (a session's errors not yet reported at SYNC).
void consume_error(std::vector<v1::ErrorInfo>& pending, uint64_t id);

// Removes later copies of an error (same id) from a SYNC reply, keeping the order.
void dedupe_errors(google::protobuf::RepeatedPtrField<v1::ErrorInfo>* errors);

}  // namespace gt::dispatcher
