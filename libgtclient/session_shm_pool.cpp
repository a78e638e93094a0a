#include "libgtclient/session_shm_pool.h"

#include <algorithm>
#include <bit>

namespace gt::detail {

struct ShmRegion::Arena {
  uint64_t generation = 0;
  std::shared_ptr<ShmMapping> mapping;
  std::shared_ptr<ShmArenaPool::Live> live;  // the pool's totals, which this counts in
  std::mutex mu;
  std::map<uint64_t, uint64_t> free;  // offset -> bytes, coalesced
  uint64_t in_use = 0;

  ~Arena() {
    live->bytes -= mapping->size();
    --live->arenas;
  }

  // First fit; -1 when no free range is large enough.
  int64_t take(uint64_t bytes) {
    std::lock_guard<std::mutex> lk(mu);
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (it->second < bytes) continue;
      const uint64_t at = it->first, left = it->second - bytes;
      free.erase(it);
      if (left > 0) free.emplace(at + bytes, left);
      in_use += bytes;
      return static_cast<int64_t>(at);
    }
    return -1;
  }

  void give_back(uint64_t at, uint64_t bytes) {
    std::lock_guard<std::mutex> lk(mu);
    in_use -= bytes;
    auto next = free.lower_bound(at);
    if (next != free.end() && at + bytes == next->first) {  // merge with the range after
      bytes += next->second;
      next = free.erase(next);
    }
    if (next != free.begin()) {  // and the one before
      auto prev = std::prev(next);
      if (prev->first + prev->second == at) {
        prev->second += bytes;
        return;
      }
    }
    free.emplace(at, bytes);
  }
};

ShmRegion::ShmRegion(std::shared_ptr<Arena> arena, uint64_t offset, uint64_t bytes)
    : arena_(std::move(arena)), offset_(offset), bytes_(bytes) {}

ShmRegion::~ShmRegion() { arena_->give_back(offset_, bytes_); }

char* ShmRegion::data() const { return arena_->mapping->data() + offset_; }

uint64_t ShmRegion::generation() const { return arena_->generation; }

ShmArenaPool::ShmArenaPool(uint64_t max_bytes, uint64_t min_arena_bytes)
    : max_bytes_(max_bytes), min_arena_bytes_(std::max(min_arena_bytes, kAlign)) {}

std::shared_ptr<ShmRegion> ShmArenaPool::allocate(uint64_t bytes, NewArena* made) {
  if (bytes == 0 || bytes > max_bytes_) return nullptr;
  const uint64_t size = (bytes + kAlign - 1) / kAlign * kAlign;
  std::lock_guard<std::mutex> lk(mu_);
  if (newest_) {
    const int64_t at = newest_->take(size);
    if (at >= 0) return std::make_shared<ShmRegion>(newest_, static_cast<uint64_t>(at), size);
  }
  // A larger arena: at least twice the last (few arenas over a program's life), within what
  // the others still mapped leave of the limit. The old one goes once its regions are released.
  const uint64_t last = newest_ ? newest_->mapping->size() : 0;
  newest_.reset();
  if (live_->arenas.load() >= kMaxLiveArenas) return nullptr;
  const uint64_t room = max_bytes_ - std::min(max_bytes_, live_->bytes.load());
  uint64_t want = std::max({min_arena_bytes_, 2 * last, std::bit_ceil(size)});
  want = std::min(want, room) / kAlign * kAlign;
  if (want < size) return nullptr;
  auto file = create_shm_arena(want);
  if (!file.is_ok()) return nullptr;
  auto arena = std::make_shared<ShmRegion::Arena>();
  arena->generation = next_generation_++;
  arena->mapping = std::move(file->mapping);
  arena->live = live_;
  live_->bytes += want;
  ++live_->arenas;
  arena->free.emplace(0, want);
  newest_ = arena;
  made->fd = std::move(file->fd);
  made->generation = arena->generation;
  made->bytes = want;
  const int64_t at = arena->take(size);
  return std::make_shared<ShmRegion>(arena, static_cast<uint64_t>(at), size);
}

}  // namespace gt::detail
