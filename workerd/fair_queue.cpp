#include "workerd/fair_queue.h"

#include <algorithm>

namespace gt::worker {

bool FairQueue::holds_comm(const v1::WorkerBatch& b) {
  for (const auto& in : b.instrs())
    if (in.comm() != 0) return true;
  return false;
}

void FairQueue::enlist(uint64_t session) {
  if (std::find(order_.begin(), order_.end(), session) == order_.end()) order_.push_back(session);
}

void FairQueue::push(std::unique_ptr<v1::WorkerBatch> batch, std::vector<SeqRange>* dropped,
                     std::chrono::steady_clock::time_point received) {
  const uint64_t session = batch->session();
  auto& q = sessions_[session];
  if (batch->end_session()) {
    // Work for a session that is gone is dropped (a dead client's backlog must not keep the
    // worker busy for nobody); communication stays, since peers wait for their halves of it. A
    // batch already started keeps its place (its sequence range completes with it) but runs
    // nothing more, and so does one that is running now, when it comes back (push_front).
    ended_.insert(session);
    for (auto it = q.begin(); it != q.end();) {
      if (it->comm) {
        ++it;
        continue;
      }
      if (it->next > 0 || it->next_free > 0) {
        abandon(*it);
        ++it;
        continue;
      }
      if (dropped) dropped->emplace_back(it->batch->first_seq(), seq_count(*it->batch));
      instructions_ -= remaining(*it);
      it = q.erase(it);
      --size_;
    }
  }
  Entry e;
  e.comm = holds_comm(*batch);
  e.received = received;
  e.batch = std::move(batch);
  if (e.comm) comm_.push_back(e.batch.get());
  instructions_ += remaining(e);
  q.push_back(std::move(e));
  ++size_;
  enlist(session);
}

bool FairQueue::may_run(uint64_t session, const Entry& head) const {
  if (head.comm) return !comm_.empty() && comm_.front() == head.batch.get();
  return !paused(session);
}

void FairQueue::set_paused(uint64_t session, bool paused) {
  if (paused) paused_.insert(session);
  else paused_.erase(session);
}

std::optional<FairQueue::Entry> FairQueue::pop() {
  for (size_t i = 0; i < order_.size(); ++i) {
    const uint64_t session = order_[i];
    auto it = sessions_.find(session);
    if (it == sessions_.end() || it->second.empty()) {  // defensive: listed means queued
      order_.erase(order_.begin() + static_cast<std::ptrdiff_t>(i));
      if (it != sessions_.end()) sessions_.erase(it);
      --i;
      continue;
    }
    if (!may_run(session, it->second.front())) continue;
    Entry e = std::move(it->second.front());
    it->second.pop_front();
    if (e.batch->end_session()) ended_.erase(session);  // (its last batch)
    --size_;
    instructions_ -= remaining(e);
    order_.erase(order_.begin() + static_cast<std::ptrdiff_t>(i));
    if (it->second.empty()) sessions_.erase(it);
    else order_.push_back(session);
    return e;
  }
  return std::nullopt;
}

void FairQueue::abandon(Entry& e) {
  const uint64_t before = remaining(e);
  e.next = e.batch->instrs_size();
  e.next_free = e.batch->frees_size();
  instructions_ -= before - remaining(e);
}

void FairQueue::push_front(Entry e) {
  const uint64_t session = e.batch->session();
  if (!e.comm && ended_.count(session)) abandon(e);
  instructions_ += remaining(e);
  sessions_[session].push_front(std::move(e));
  ++size_;
  enlist(session);
}

void FairQueue::comm_done(const v1::WorkerBatch* batch) {
  if (!comm_.empty() && comm_.front() == batch) comm_.pop_front();
}

v1::WorkerBatch* FairQueue::next_unstarted(uint64_t session) {
  auto it = sessions_.find(session);
  if (it == sessions_.end() || it->second.empty()) return nullptr;
  Entry& e = it->second.front();
  return e.next == 0 && e.next_free == 0 ? e.batch.get() : nullptr;
}

bool FairQueue::runnable() const {
  for (uint64_t session : order_) {
    auto it = sessions_.find(session);
    if (it != sessions_.end() && !it->second.empty() && may_run(session, it->second.front()))
      return true;
  }
  return false;
}

void FairQueue::clear() {
  sessions_.clear();
  paused_.clear();
  ended_.clear();
  order_.clear();
  comm_.clear();
  size_ = 0;
  instructions_ = 0;
}

}  // namespace gt::worker
