#include "dispatcherd/error_ledger.h"

#include <algorithm>
#include <atomic>
#include <unordered_set>

namespace gt::dispatcher {

uint64_t new_error_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

void ErrorLedger::reported(v1::ErrorInfo& e, uint32_t worker, uint64_t handle,
                           uint64_t horizon) {
  e.set_id(new_error_id());
  e.clear_failed_handle();  // kept as `handle`; a worker-local handle means nothing to clients
  if (reports_.size() >= kMaxReports) {
    overflowed_ = true;
    return;
  }
  reports_.push_back(Report{worker, handle, horizon, e.id(), e.op(), e.message(), e.origin()});
}

bool ErrorLedger::identify_fetched(v1::ErrorInfo& e, uint32_t worker, uint64_t handle,
                                   uint64_t age) const {
  // Everything the fetched tensor holds was issued before handle `issued` (its own handle, or
  // the next one at its latest in-place write).
  const uint64_t issued = std::max(handle + 1, age);
  if (e.failed_handle() != 0) {  // the worker named the failed result: exact, no heuristics
    for (const Report& r : reports_)
      if (r.worker == worker && r.handle == e.failed_handle()) {
        e.set_id(r.id);
        e.clear_failed_handle();
        return true;
      }
  }
  e.clear_failed_handle();  // a worker-local handle means nothing to clients
  const Report* same = nullptr;   // the only candidate so far
  size_t candidates = 0;
  const Report* window = nullptr;  // the only candidate reported after `handle` was issued
  size_t in_window = 0;
  for (const Report& r : reports_) {
    if (r.worker != worker) continue;
    if (handle != 0 && r.handle == handle) {
      e.set_id(r.id);
      return true;
    }
    if (r.handle >= issued || r.op != e.op() || r.message != e.message() || r.origin != e.origin())
      continue;
    ++candidates;
    same = &r;
    if (issued <= r.horizon) {
      ++in_window;
      window = &r;
    }
  }
  if (!overflowed_ && candidates == 1) {
    e.set_id(same->id);
    return true;
  }
  if (!overflowed_ && in_window == 1) {
    e.set_id(window->id);
    return true;
  }
  e.set_id(new_error_id());
  return false;
}

void poison_failed_result(std::unordered_map<uint64_t, TensorEntry>& tensors, uint32_t worker,
                          uint64_t handle, const std::shared_ptr<const v1::ErrorInfo>& err) {
  for (auto& [id, e] : tensors) {
    if (e.poison) continue;
    int m = e.placement.index_of(worker);
    if (m >= 0 && static_cast<size_t>(m) < e.handles.size() && e.handles[m] == handle) {
      e.poison = err;
      return;
    }
  }
}

void consume_error(std::vector<v1::ErrorInfo>& pending, uint64_t id) {
  if (id == 0) return;
  pending.erase(std::remove_if(pending.begin(), pending.end(),
                               [&](const v1::ErrorInfo& e) { return e.id() == id; }),
                pending.end());
}

void dedupe_errors(google::protobuf::RepeatedPtrField<v1::ErrorInfo>* errors) {
  std::unordered_set<uint64_t> seen;
  bool repeated = false;
  for (const auto& e : *errors) repeated |= e.id() != 0 && !seen.insert(e.id()).second;
  if (!repeated) return;
  seen.clear();
  google::protobuf::RepeatedPtrField<v1::ErrorInfo> kept;
  for (auto& e : *errors)
    if (e.id() == 0 || seen.insert(e.id()).second) *kept.Add() = std::move(e);
  errors->Swap(&kept);
}

}  // namespace gt::dispatcher
