// Mailbox: where the TCP peer link's receiver threads put whole messages, keyed by
// (sender, session, tag, step), and where the executor thread waits for the one it needs.
//
// Receiver threads never wait on the executor except for buffer room, so a worker that is busy
// sending still drains whatever its peers send it (no send/send deadlock). Memory is bounded:
// a message is admitted when the executor already expects exactly that key (the expected size
// is then checked before anything is allocated), or when it fits in `max_buffered_bytes`
// together with everything buffered; otherwise its receiver thread waits (TCP backpressure to
// that one sender) until room frees or the message becomes expected. Since the dispatcher
// emits communication in one global order and collectives post their receives (expect) before
// sending, only messages for later instructions ever wait for room.
//
// A failed or poisoned instruction abandons its (session, tag): its messages are dropped, and
// so are any that arrive later. A peer whose connection dropped is marked failed, so a wait on
// it ends at once with that error instead of running into the deadline.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "libgtcore/status.h"
#include "workerd/peer/peer_wire.h"

namespace gt::worker::peer {

struct MsgKey {
  uint32_t sender = 0;
  uint32_t step = 0;
  uint64_t session = 0;
  uint64_t tag = 0;
  auto operator<=>(const MsgKey&) const = default;
};

struct Message {
  MsgKind kind = MsgKind::kData;
  std::unique_ptr<char[]> data;
  uint64_t size = 0;
};

class Mailbox {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Admit { kStore, kDiscard, kRefuse, kStopped };

  explicit Mailbox(uint64_t max_buffered_bytes) : max_buffered_(max_buffered_bytes) {}

  uint64_t generation() const;

  // ---- receiver threads (started in generation `gen`; a reset stops them) ----
  // Decides what to do with a message whose header was just read, waiting for room if needed.
  // kStore reserves `size` bytes: deliver() must follow (or unreserve() if reading fails).
  // kRefuse: the size contradicts what the executor expects (`why` says how).
  Admit admit(const MsgKey& k, MsgKind kind, uint64_t size, uint64_t gen, std::string* why);
  void unreserve(uint64_t size, uint64_t gen);
  void deliver(const MsgKey& k, Message m, uint64_t gen);
  // A connection with `peer` ended (or carried garbage): waits on it fail with `why`.
  void peer_failed(uint32_t peer, const Status& why, uint64_t gen);
  void peer_connected(uint32_t peer, uint64_t gen);
  bool is_failed(uint32_t peer) const;
  void clear_failures();  // a new peer table: everyone in it gets a fresh start

  // ---- executor thread ----
  void expect(const MsgKey& k, uint64_t size);
  // Waits for the message; a data message must be exactly `size` bytes.
  Result<Message> take(const MsgKey& k, uint64_t size, Clock::time_point deadline);
  void abandon(uint64_t session, uint64_t tag);

  // Drops what is buffered or expected for a session that ended.
  void drop_session(uint64_t session);
  // Drops everything; receiver threads of older generations stop; waiters fail.
  void reset();
  uint64_t buffered_bytes() const;

 private:
  bool abandoned(uint64_t session, uint64_t tag) const;

  const uint64_t max_buffered_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t gen_ = 0;
  uint64_t buffered_ = 0;  // admitted bytes not yet taken or dropped
  std::map<MsgKey, std::deque<Message>> box_;
  std::map<MsgKey, uint64_t> expected_;
  std::map<uint32_t, Status> failed_;
  std::set<std::pair<uint64_t, uint64_t>> abandoned_;
  std::deque<std::pair<uint64_t, uint64_t>> abandoned_order_;  // bounds abandoned_
};

}  // namespace gt::worker::peer
