#include "workerd/device/caching_allocator.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gt::worker::device {

namespace {

constexpr size_t kMinBlock = 512;             // rounding unit and the smallest split remainder
constexpr size_t kSmallLimit = 1 << 20;       // requests up to 1 MiB are served by the small pool
constexpr size_t kSmallSegment = 2 << 20;     // the small pool's segments
constexpr size_t kLargeSegment = 20 << 20;    // the large pool's segments for requests < 10 MiB
constexpr size_t kLargeAlone = 10 << 20;      // from here a request gets its own segment
constexpr size_t kLargeRound = 2 << 20;       // ... rounded to 2 MiB
constexpr size_t kLargeMinSplit = 1 << 20;    // large blocks split only when more than this remains
// Beyond this a request cannot be rounded without overflow; no device has this much anyway.
constexpr size_t kMaxRequest = size_t{1} << 62;

size_t round_up(size_t n, size_t unit) { return (n + unit - 1) / unit * unit; }
uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// A handful of streams at most (the sessions that touched a block), so a vector beats a set.
using StreamSet = std::vector<Stream>;
void add(StreamSet& set, Stream s) {
  if (s && std::find(set.begin(), set.end(), s) == set.end()) set.push_back(s);
}
void add_all(StreamSet& set, const StreamSet& more) {
  for (Stream s : more) add(set, s);
}

struct Blk {
  char* ptr = nullptr;
  size_t size = 0;
  bool small = false;
  bool live = false;
  bool claimed = false;  // live, and ordered after its previous streams (allocate or use_on)
  Blk* prev = nullptr;   // address-ordered neighbours within the segment
  Blk* next = nullptr;
  StreamSet used;     // live: the streams it is used on in this life
  StreamSet pending;  // free (or live and unclaimed): streams whose work may still touch it
};

// The stream a free block is ready for without any wait: 0 when none may touch it, the one
// stream otherwise. Blocks pending on several streams are not in the by-stream index.
uintptr_t ready_key(const Blk* b) { return b->pending.empty() ? 0 : addr(b->pending[0]); }

struct BySize {  // best fit: smallest size first, then lowest address
  bool operator()(const Blk* a, const Blk* b) const {
    return a->size != b->size ? a->size < b->size : addr(a->ptr) < addr(b->ptr);
  }
};
struct ByStream {  // best fit among the blocks ready for one stream
  bool operator()(const Blk* a, const Blk* b) const {
    uintptr_t ka = ready_key(a), kb = ready_key(b);
    return ka != kb ? ka < kb : BySize()(a, b);
  }
};

struct Pool {
  std::set<Blk*, BySize> all;         // every free block of the pool
  std::set<Blk*, ByStream> by_stream;  // the free blocks pending on at most one stream
};

struct Segment {
  size_t size = 0;
  Blk* head = nullptr;  // the lowest block: merges keep the lower block, so it lives as long
};

}  // namespace

struct CachingAllocator::State {
  DeviceApi& device;
  uint64_t max_bytes;
  Pool small, large;
  std::unordered_map<char*, Segment> segments;  // by base address
  std::unordered_map<void*, Blk*> live;
  std::vector<Event> events;  // reusable: an event may be re-recorded once waited on
  AllocatorStats st;
  Stream capturing = nullptr;  // the stream capturing a graph (begin_capture), if any
  bool spoiled = false;        // the capture was refused something it needed

  Pool& pool(bool is_small) { return is_small ? small : large; }

  // A block's pending set is part of its ByStream key: change it only while unindexed.
  void index(Blk* b) {
    Pool& p = pool(b->small);
    p.all.insert(b);
    if (b->pending.size() <= 1) p.by_stream.insert(b);
  }
  void unindex(Blk* b) {
    Pool& p = pool(b->small);
    p.all.erase(b);
    if (b->pending.size() <= 1) p.by_stream.erase(b);
  }

  // The best-fit free block of `size` for stream `t` (or the capturing stream): one that needs
  // no wait if any fits (pending on nothing, or on `t` alone), else the best fit overall (it
  // will wait) -- but never while a stream captures. Removed from the index.
  Blk* find_free(bool is_small, size_t size, Stream t) {
    if (!t) t = capturing;
    Pool& p = pool(is_small);
    Blk probe;
    probe.size = size;
    auto ready_for = [&](Stream s) -> Blk* {
      probe.pending.assign(s ? 1 : 0, s);
      auto it = p.by_stream.lower_bound(&probe);
      return it != p.by_stream.end() && ready_key(*it) == addr(s) ? *it : nullptr;
    };
    Blk* best = ready_for(nullptr);
    if (t) {
      Blk* mine = ready_for(t);
      if (mine && (!best || BySize()(mine, best))) best = mine;
    }
    if (!best && !capturing) {
      probe.pending.clear();
      auto it = p.all.lower_bound(&probe);
      if (it != p.all.end()) best = *it;
    }
    if (best) unindex(best);
    return best;
  }

  Result<Event> take_event() {
    if (!events.empty()) {
      Event e = events.back();
      events.pop_back();
      return e;
    }
    return device.create_event();
  }

  // Orders `t` after the work of the block's pending streams (no host wait). What the block
  // still owes a later claimer is then owed through `t` alone (t waited for the rest): a split
  // remainder keeps that, the claimed block clears it.
  Status claim(Blk* b, Stream t) {
    StreamSet others;
    for (Stream s : b->pending)
      if (s != t) others.push_back(s);
    if (!others.empty() && capturing && t == capturing) {
      spoiled = true;
      return failed_precondition(
          "a block still in use on another stream, claimed during a graph capture");
    }
    if (!others.empty()) {
      GT_ASSIGN_OR_RETURN(Event e, take_event());
      // One event serves every stream: a wait already issued keeps its capture (CUDA semantics).
      Status status;
      for (Stream s : others) {
        status = device.record_event(e, s);
        if (status.is_ok()) status = device.stream_wait_event(t, e);
        if (!status.is_ok()) break;
        ++st.cross_stream_waits;
      }
      events.push_back(e);
      GT_RETURN_IF_ERROR(status);
    }
    if (!b->pending.empty()) b->pending.assign(1, t);
    b->claimed = true;
    return Status::ok();
  }

  // Cuts `b` (unindexed, free) to `size` when enough remains; the remainder keeps its pending
  // streams, since their work may touch any part of the old block.
  void split(Blk* b, size_t size) {
    size_t rest = b->size - size;
    if (b->small ? rest < kMinBlock : rest <= kLargeMinSplit) return;
    auto* r = new Blk;
    r->ptr = b->ptr + size;
    r->size = rest;
    r->small = b->small;
    r->prev = b;
    r->next = b->next;
    r->pending = b->pending;
    if (b->next) b->next->prev = r;
    b->next = r;
    b->size = size;
    index(r);
  }

  // Frees `b` (unindexed) into its pool, merged with its free neighbours.
  void release(Blk* b) {
    b->live = b->claimed = false;
    for (Blk* n : {b->next, b->prev}) {
      if (!n || n->live) continue;
      unindex(n);
      Blk* lo = n == b->next ? b : n;  // the lower block absorbs the upper one
      Blk* hi = n == b->next ? n : b;
      lo->size += hi->size;
      add_all(lo->pending, hi->pending);
      lo->next = hi->next;
      if (hi->next) hi->next->prev = lo;
      delete hi;
      b = lo;
    }
    index(b);
  }

  // A device allocation of n bytes within max_bytes, as a new segment's (unindexed) block.
  Result<Blk*> new_segment(size_t n, bool is_small) {
    if (max_bytes && st.reserved_bytes + n > max_bytes)
      return resource_exhausted("over max_bytes {}", max_bytes);
    GT_ASSIGN_OR_RETURN(void* p, device.malloc(n));
    auto* b = new Blk;
    b->ptr = static_cast<char*>(p);
    b->size = n;
    b->small = is_small;
    segments[b->ptr] = Segment{n, b};
    st.reserved_bytes += n;
    ++st.segments;
    ++st.device_mallocs;
    return b;
  }

  // Gives every wholly free segment back to the device, once its streams' work is done (the
  // device may reuse the memory at once; another stream's kernel may still be writing it).
  // The host waits under the lock: this runs when memory ran out, not on the common path.
  void trim() {
    if (capturing) return;
    std::vector<Blk*> whole;
    StreamSet streams;
    for (auto& [base, seg] : segments) {
      Blk* h = seg.head;
      if (!h->live && !h->next) {
        whole.push_back(h);
        add_all(streams, h->pending);
      }
    }
    StreamSet unsynced;  // streams we could not wait for: their segments stay
    for (Stream s : streams) {
      Status status = sync(s);
      if (!status.is_ok()) unsynced.push_back(s);
    }
    for (Blk* h : whole) {
      bool busy = std::any_of(h->pending.begin(), h->pending.end(), [&](Stream s) {
        return std::find(unsynced.begin(), unsynced.end(), s) != unsynced.end();
      });
      if (busy) continue;
      unindex(h);
      device.free(h->ptr);
      st.reserved_bytes -= h->size;
      --st.segments;
      segments.erase(h->ptr);
      delete h;
    }
  }

  // Waits for the work enqueued on `s` so far (an event, not the whole stream: work enqueued
  // later by other threads is none of the allocator's business).
  Status sync(Stream s) {
    GT_ASSIGN_OR_RETURN(Event e, take_event());
    Status status = device.record_event(e, s);
    if (status.is_ok()) status = device.synchronize_event(e);
    events.push_back(e);
    return status;
  }

  // A new segment for a request of `size`: on failure the cache is trimmed and the allocation
  // retried once; the request then settles for a segment of its own size (a large one, or a
  // small one under a max_bytes below the small pool's 2 MiB segments).
  Result<Blk*> grow(size_t size, bool is_small) {
    size_t seg = is_small ? kSmallSegment
                 : size < kLargeAlone ? kLargeSegment
                                      : round_up(size, kLargeRound);
    Result<Blk*> b = new_segment(seg, is_small);
    if (b.is_ok() || b.status().code() != Code::kResourceExhausted) return b;
    if (capturing) {  // no trim (it would wait on the capturing stream): without the graph
      spoiled = true;
      return b;
    }
    ++st.retries;
    trim();
    b = new_segment(seg, is_small);
    if (!b.is_ok() && b.status().code() == Code::kResourceExhausted && size < seg)
      b = new_segment(size, is_small);
    return b;
  }
};

CachingAllocator::CachingAllocator(DeviceApi& device, uint64_t max_bytes)
    : device_(device), state_(new State{device, max_bytes, {}, {}, {}, {}, {}, {}}) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  // Live blocks here are a caller's bug; their segments go back anyway (the device is shared).
  for (auto& [base, seg] : state_->segments) {
    for (Blk* b = seg.head; b;) {
      Blk* next = b->next;
      delete b;
      b = next;
    }
    device_.free(base);
  }
  for (Event e : state_->events) device_.destroy_event(e);
}

size_t CachingAllocator::round_size(size_t bytes) {
  return bytes < kMinBlock ? kMinBlock : round_up(bytes, kMinBlock);
}

Result<CachingAllocator::Block> CachingAllocator::allocate(size_t bytes, Stream stream) {
  std::lock_guard<std::mutex> lock(mu_);
  State& s = *state_;
  if (bytes == 0) return invalid_argument("allocate: 0 bytes");
  const size_t size = bytes < kMaxRequest ? round_size(bytes) : bytes;
  const bool is_small = size <= kSmallLimit;
  Blk* b = bytes < kMaxRequest ? s.find_free(is_small, size, stream) : nullptr;
  if (!b && bytes < kMaxRequest) {
    Result<Blk*> grown = s.grow(size, is_small);
    if (!grown.is_ok() && grown.status().code() != Code::kResourceExhausted)
      return grown.status();  // the device failed (a sticky error): no OOM to report
    if (grown.is_ok()) b = *grown;
  }
  if (!b) {
    ++s.st.ooms;
    std::string limit = s.max_bytes ? fmt::format("{} (max_bytes)", s.max_bytes)
                                    : fmt::format("{} (device total)", device_.total_memory());
    return resource_exhausted(
        "device out of memory: requested {} bytes ({} rounded); allocated {}, reserved {}, "
        "limit {}",
        bytes, size, s.st.allocated_bytes, s.st.reserved_bytes, limit);
  }
  // Claimed before the split, so the remainder owes its streams' work through `stream` only.
  if (stream) {
    Status claimed = s.claim(b, stream);
    if (!claimed.is_ok()) {
      s.release(b);
      return claimed;
    }
  }
  s.split(b, size);
  if (stream) b->pending.clear();
  b->live = true;
  b->used.clear();
  add(b->used, stream);
  s.live[b->ptr] = b;
  s.st.allocated_bytes += b->size;
  s.st.peak_bytes = std::max(s.st.peak_bytes, s.st.allocated_bytes);
  ++s.st.live_blocks;
  return Block{b->ptr, b->size};
}

void CachingAllocator::deallocate(void* data) {
  std::lock_guard<std::mutex> lock(mu_);
  State& s = *state_;
  auto it = s.live.find(data);
  if (it == s.live.end()) return;  // unknown, or already freed
  Blk* b = it->second;
  s.live.erase(it);
  s.st.allocated_bytes -= b->size;
  --s.st.live_blocks;
  // No device call: the streams are remembered, and whoever claims the block next waits.
  add_all(b->pending, b->used);
  b->used.clear();
  s.release(b);
}

Status CachingAllocator::use_on(const void* data, Stream stream) {
  std::lock_guard<std::mutex> lock(mu_);
  State& s = *state_;
  auto it = s.live.find(const_cast<void*>(data));
  if (it == s.live.end() || !stream) return Status::ok();
  Blk* b = it->second;
  if (!b->claimed) {
    GT_RETURN_IF_ERROR(s.claim(b, stream));
    b->pending.clear();
  }
  add(b->used, stream);
  return Status::ok();
}

void CachingAllocator::forget_stream(Stream stream) {
  std::lock_guard<std::mutex> lock(mu_);
  State& s = *state_;
  auto drop = [stream](StreamSet& set) { std::erase(set, stream); };
  for (auto& [base, seg] : s.segments) {
    for (Blk* b = seg.head; b; b = b->next) {
      drop(b->used);
      if (b->live) {
        drop(b->pending);
      } else {  // its pending set is its index key
        s.unindex(b);
        drop(b->pending);
        s.index(b);
      }
    }
  }
}

void CachingAllocator::trim() {
  std::lock_guard<std::mutex> lock(mu_);
  state_->trim();
}

void CachingAllocator::note_workspace(int64_t delta) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t& w = state_->st.workspace_bytes;
  if (delta >= 0) w += static_cast<uint64_t>(delta);
  else w -= std::min(w, static_cast<uint64_t>(-(delta + 1)) + 1);  // -INT64_MIN overflows
}

void CachingAllocator::begin_capture(Stream s) {
  std::lock_guard<std::mutex> lock(mu_);
  state_->capturing = s;
  state_->spoiled = false;
}

bool CachingAllocator::end_capture() {
  std::lock_guard<std::mutex> lock(mu_);
  state_->capturing = nullptr;
  return std::exchange(state_->spoiled, false);
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_->st;
}

}  // namespace gt::worker::device
