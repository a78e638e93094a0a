#include "dispatcherd/scheduler.h"

namespace gt::dispatcher {

void DrrScheduler::enqueue(uint64_t session, double weight, uint64_t cost,
                           v1::DispatchMessage&& msg, uint64_t cost_ns) {
  Flow& f = flows_[session];
  f.weight = weight;
  f.items.push_back(Item{session, cost, std::move(msg), cost_ns});
  queued_cost_ += cost;
  if (!f.active) {
    f.active = true;
    f.deficit = 0;
    active_.push_back(session);
  }
}

std::optional<DrrScheduler::Item> DrrScheduler::next(const MaySend& may_send) {
  size_t blocked = 0;  // sessions in a row that may not send: all of them ends the search
  while (!active_.empty() && blocked < active_.size()) {
    uint64_t s = active_.front();
    Flow& f = flows_[s];
    if (f.items.empty()) {  // defensive: an active flow always has items
      f.active = false;
      active_.pop_front();
      continue;
    }
    if (may_send && !may_send(s)) {  // over its in-flight budget: skip it, credit kept
      active_.splice(active_.end(), active_, active_.begin());
      ++blocked;
      continue;
    }
    Item& head = f.items.front();
    if (static_cast<double>(head.cost) > f.deficit) {
      // Not enough credit: top up and give the next session its turn. A batch bigger than one
      // quantum is sent after enough rounds have accumulated credit for it.
      f.deficit += kQuantum * f.weight;
      blocked = 0;
      active_.splice(active_.end(), active_, active_.begin());
      if (active_.size() > 1) continue;
      if (static_cast<double>(head.cost) > f.deficit) continue;  // alone: keep topping up
    }
    Item out = std::move(head);
    f.items.pop_front();
    f.deficit -= static_cast<double>(out.cost);
    queued_cost_ -= out.cost;
    if (f.items.empty()) {
      f.active = false;
      f.deficit = 0;
      for (auto it = active_.begin(); it != active_.end(); ++it)
        if (*it == s) {
          active_.erase(it);
          break;
        }
      flows_.erase(s);
    }
    return out;
  }
  return std::nullopt;
}

std::deque<DrrScheduler::Item> DrrScheduler::take_session(uint64_t session) {
  auto it = flows_.find(session);
  if (it == flows_.end()) return {};
  std::deque<Item> items = std::move(it->second.items);
  for (const auto& i : items) queued_cost_ -= i.cost;
  active_.remove(session);
  flows_.erase(it);
  return items;
}

}  // namespace gt::dispatcher
