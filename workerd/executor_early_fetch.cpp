// FETCHes answered before the HotRun they wait behind ends (ARCHITECTURE §7, issue 11).
//
// A FETCH reads its tensor as it is once everything before it in the session's stream has run.
// Inside a hot path the worker knows the rest of that stream in advance: from the point where
// the path has made the tensor and none of its later instructions writes it, the value a FETCH
// after the path reads is already there. Only a write naming the tensor itself can change it (a
// worker's tensors are values: a write to bytes shared with another tensor copies them first),
// so the plan is the tensor's maker and the path's in-place writes to it. The answer is
// eager execution's; what moves is when it leaves, relative to the errors of the path's later
// instructions, which a FETCH never reports (a SYNC does, and it is never answered early).
//
// Not answered early (they wait for the end, as eagerly): a FETCH of a tensor the batch frees
// (eagerly that fails), anything in a path with communication (its members' order is the
// exchange's), a traced batch, a tensor not made when it is due (an operand a fold put off),
// and every request after one that is not answered early (replies keep their request order).
#include <algorithm>

#include <spdlog/spdlog.h>

#include "workerd/executor.h"

namespace gt::worker {

void Executor::begin_final_fetches(HotPathDef& p, const v1::HotRun& run) {
  early_.clear();
  early_answered_ = early_own_ = 0;
  early_next_batch_ = false;
  if (p.has_comm) return;
  early_next_batch_ = true;
  for (const v1::Request& req : early_batch_->requests()) {
    if (!plan_final_fetch(p, run, req)) {
      early_next_batch_ = false;  // (its FETCHes would overtake this one)
      break;
    }
  }
  early_own_ = early_.size();
  // On a device with graphs a segment runs whole: one that a FETCH is due inside is cut there
  // (for this run and the next ones), so its answer leaves while the rest of the path runs.
  for (const EarlyFetch& f : early_)
    if (hot_.cut_segments(p, f.due, [this](OpId op) { return backend_.capturable(op); }))
      spdlog::debug("hot path: its graph segment is cut at instruction {} (a fetch is due there)",
                    f.due);
}

bool Executor::plan_final_fetch(const HotPathDef& p, const v1::HotRun& run,
                                const v1::Request& req) {
  if (req.kind() != v1::Request::FETCH) return false;
  const uint64_t h = req.id();
  const auto& frees = early_batch_->frees();
  if (std::find(frees.begin(), frees.end(), h) != frees.end()) return false;
  const size_t n = p.instrs.size();
  const uint64_t first_out = run.first_out();
  uint32_t due = early_.empty() ? 0 : early_.back().due;  // (never before the previous one)
  if (h >= first_out && h - first_out < p.results) {  // the path makes it
    const uint32_t k = p.result_instr[h - first_out];
    if (p.freed[k]) return false;
    due = std::max(due, k + 1);
  }
  for (uint32_t j : p.writes) {
    if (j < due || p.ref_begin[j] == p.ref_begin[j + 1]) continue;
    const uint64_t ref = p.refs[p.ref_begin[j]];
    const uint64_t target = (ref & 1) ? run.bindings(static_cast<int>(ref >> 1))
                                      : first_out + static_cast<uint64_t>(p.result[ref >> 1]);
    if (target == h) due = j + 1;
  }
  if (due >= n) return false;  // due at the end anyway
  early_.push_back(EarlyFetch{req, due});
  return true;
}

void Executor::answer_final_fetches(uint64_t session, const HotPathDef& p, const v1::HotRun& run,
                                    size_t k) {
  // compiled().item(): the scope's HotRun left the dispatcher at the scope's end, its FETCH in
  // a frame of its own, which is queued here by now or soon (looked for before each instruction).
  if (early_next_batch_ && early_answered_ == early_.size() &&
      waiting_.load(std::memory_order_relaxed) > 0)
    take_next_batch_fetches(session, p, run);
  while (early_answered_ < early_.size() && early_[early_answered_].due <= k) {
    const v1::Request& req = early_[early_answered_].req;
    auto it = tensors_.find(req.id());
    if (it == tensors_.end() || it->second.session != session) {
      // Not made: the batch's own wait for its end (finish_batch), those taken from the next
      // batch for the run's end (end_final_fetches), after every one before them.
      early_next_batch_ = false;
      if (early_answered_ < early_own_) early_.resize(early_own_ = early_answered_);
      return;
    }
    answer(session, req);
    ++early_answered_;
    bump(early_fetches_);
  }
}

void Executor::take_next_batch_fetches(uint64_t session, const HotPathDef& p,
                                       const v1::HotRun& run) {
  std::lock_guard<std::mutex> lk(mu_);
  v1::WorkerBatch* next = queue_.next_unstarted(session);
  if (!next) return;  // not here yet
  early_next_batch_ = false;
  // Requests alone: nothing of it runs before them.
  if (next->instrs_size() != 0 || next->frees_size() != 0 || next->hot_define_size() != 0 ||
      next->hot_forget_size() != 0 || next->end_session() || next->trace() ||
      next->hot_extra() != 0)
    return;
  int taken = 0;
  for (const v1::Request& req : next->requests()) {
    if (!plan_final_fetch(p, run, req)) break;
    ++taken;
  }
  // Answered by this run (at the latest when it ends); the batch keeps the rest.
  if (taken > 0) next->mutable_requests()->DeleteSubrange(0, taken);
}

void Executor::end_final_fetches(uint64_t session) {
  // The next batch's FETCHes this run took are answered now, whatever came of them: all the
  // batch's own were answered before they were taken, and nothing runs before them eagerly
  // but the batch's frees, which do not name them.
  for (size_t i = std::max(early_answered_, early_own_); i < early_.size(); ++i)
    answer(session, early_[i].req);
  // The batch's own answered ones leave it; finish_batch answers the rest.
  const size_t own_answered = std::min(early_answered_, early_own_);
  if (own_answered > 0)
    early_batch_->mutable_requests()->DeleteSubrange(0, static_cast<int>(own_answered));
  early_.clear();
  early_answered_ = early_own_ = 0;
  early_next_batch_ = false;
}

}  // namespace gt::worker
