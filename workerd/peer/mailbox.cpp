#include "workerd/peer/mailbox.h"

namespace gt::worker::peer {

namespace {
constexpr size_t kMaxAbandoned = 4096;
}

uint64_t Mailbox::generation() const {
  std::lock_guard<std::mutex> lk(mu_);
  return gen_;
}

uint64_t Mailbox::buffered_bytes() const {
  std::lock_guard<std::mutex> lk(mu_);
  return buffered_;
}

bool Mailbox::abandoned(uint64_t session, uint64_t tag) const {
  return abandoned_.count({session, tag}) != 0;
}

Mailbox::Admit Mailbox::admit(const MsgKey& k, MsgKind kind, uint64_t size, uint64_t gen,
                              std::string* why) {
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    if (gen != gen_) return Admit::kStopped;
    if (abandoned(k.session, k.tag)) return Admit::kDiscard;
    auto e = expected_.find(k);
    if (e != expected_.end() && kind == MsgKind::kPoison) {  // in place of the expected data
      expected_.erase(e);
      buffered_ += size;
      return Admit::kStore;
    }
    if (e != expected_.end()) {
      if (size != e->second) {
        *why = fmt::format("sent {} bytes for session {} tag {} step {}, {} expected", size,
                           k.session, k.tag, k.step, e->second);
        return Admit::kRefuse;
      }
      expected_.erase(e);  // a duplicate of this key goes through the budget like any other
      buffered_ += size;
      return Admit::kStore;
    }
    if (size <= max_buffered_ - std::min(max_buffered_, buffered_)) {
      buffered_ += size;
      return Admit::kStore;
    }
    cv_.wait(lk);
  }
}

void Mailbox::unreserve(uint64_t size, uint64_t gen) {
  std::lock_guard<std::mutex> lk(mu_);
  if (gen != gen_) return;  // the reset zeroed the count
  buffered_ -= size;
  cv_.notify_all();
}

void Mailbox::deliver(const MsgKey& k, Message m, uint64_t gen) {
  std::lock_guard<std::mutex> lk(mu_);
  if (gen != gen_) return;
  if (abandoned(k.session, k.tag)) {
    buffered_ -= m.size;
  } else {
    box_[k].push_back(std::move(m));
  }
  cv_.notify_all();
}

void Mailbox::peer_failed(uint32_t peer, const Status& why, uint64_t gen) {
  std::lock_guard<std::mutex> lk(mu_);
  if (gen != gen_) return;
  failed_[peer] = why;
  cv_.notify_all();
}

void Mailbox::peer_connected(uint32_t peer, uint64_t gen) {
  std::lock_guard<std::mutex> lk(mu_);
  if (gen != gen_) return;
  failed_.erase(peer);
}

void Mailbox::clear_failures() {
  std::lock_guard<std::mutex> lk(mu_);
  failed_.clear();
}

bool Mailbox::is_failed(uint32_t peer) const {
  std::lock_guard<std::mutex> lk(mu_);
  return failed_.count(peer) != 0;
}

void Mailbox::expect(const MsgKey& k, uint64_t size) {
  std::lock_guard<std::mutex> lk(mu_);
  // A message already waiting was admitted under the budget; take() checks its size.
  auto it = box_.find(k);
  if (it != box_.end() && !it->second.empty()) return;
  expected_[k] = size;
  cv_.notify_all();  // a receiver thread may be waiting for room for exactly this message
}

Result<Message> Mailbox::take(const MsgKey& k, uint64_t size, Clock::time_point deadline) {
  std::unique_lock<std::mutex> lk(mu_);
  const uint64_t gen = gen_;
  auto done = [&] { expected_.erase(k); };
  while (true) {
    if (gen != gen_) return unavailable("the peer link was reset");
    auto it = box_.find(k);
    if (it != box_.end() && !it->second.empty()) {
      Message m = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) box_.erase(it);
      buffered_ -= m.size;
      done();
      cv_.notify_all();
      if (m.kind == MsgKind::kData && m.size != size)
        return data_loss("worker {} sent {} bytes for tag {} (step {}), {} expected", k.sender,
                         m.size, k.tag, k.step, size);
      return m;
    }
    auto f = failed_.find(k.sender);
    if (f != failed_.end()) {
      done();
      return Status(f->second.code(), fmt::format("waiting for worker {} (tag {}): {}", k.sender,
                                                  k.tag, f->second.message()));
    }
    if (Clock::now() >= deadline) {
      done();
      return deadline_exceeded("no message from worker {} for tag {} (step {}) before the deadline",
                               k.sender, k.tag, k.step);
    }
    if (expected_.emplace(k, size).second) {
      cv_.notify_all();  // a receiver thread may be waiting for room for exactly this message
    }
    cv_.wait_until(lk, deadline);
  }
}

void Mailbox::abandon(uint64_t session, uint64_t tag) {
  std::lock_guard<std::mutex> lk(mu_);
  if (abandoned_.insert({session, tag}).second) {
    abandoned_order_.push_back({session, tag});
    if (abandoned_order_.size() > kMaxAbandoned) {
      abandoned_.erase(abandoned_order_.front());
      abandoned_order_.pop_front();
    }
  }
  for (auto it = box_.begin(); it != box_.end();) {
    if (it->first.session == session && it->first.tag == tag) {
      for (const Message& m : it->second) buffered_ -= m.size;
      it = box_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = expected_.begin(); it != expected_.end();) {
    if (it->first.session == session && it->first.tag == tag)
      it = expected_.erase(it);
    else
      ++it;
  }
  cv_.notify_all();
}

void Mailbox::drop_session(uint64_t session) {
  std::lock_guard<std::mutex> lk(mu_);
  for (auto it = box_.begin(); it != box_.end();) {
    if (it->first.session != session) {
      ++it;
      continue;
    }
    for (const Message& m : it->second) buffered_ -= m.size;
    it = box_.erase(it);
  }
  std::erase_if(expected_, [&](const auto& e) { return e.first.session == session; });
  cv_.notify_all();  // senders held back for room may proceed
}

void Mailbox::reset() {
  std::lock_guard<std::mutex> lk(mu_);
  ++gen_;
  buffered_ = 0;
  box_.clear();
  expected_.clear();
  failed_.clear();
  abandoned_.clear();
  abandoned_order_.clear();
  cv_.notify_all();
}

}  // namespace gt::worker::peer
