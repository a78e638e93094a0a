// Hot-path detection: the signature encoding and the per-session LRU cache (hot_paths.h).
#include "dispatcherd/hot_paths.h"

#include <algorithm>
#include <cstring>

namespace gt::dispatcher {
namespace {

// Tags of the signature's records (one byte each, then varints).
enum : char { kInstr = 'I', kFree = 'F', kLocal = 'L', kOutside = 'O', kScope = 'S' };

void put_varint(std::string& s, uint64_t v) {
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
}

void put_signed(std::string& s, int64_t v) {  // zigzag
  put_varint(s, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}

void put_bytes(std::string& s, std::string_view b) {
  put_varint(s, b.size());
  s.append(b);
}

void put_meta(std::string& s, const TensorMeta& m) {
  put_varint(s, static_cast<uint64_t>(m.dtype));
  put_varint(s, static_cast<uint64_t>(m.shape.rank()));
  for (int d = 0; d < m.shape.rank(); ++d) put_signed(s, m.shape[d]);
}

void put_placement(std::string& s, const Placement& p) {
  put_varint(s, static_cast<uint64_t>(p.kind));
  put_varint(s, p.workers.size());
  for (uint32_t w : p.workers) put_varint(s, w);
  put_signed(s, p.axis);
  put_varint(s, p.extents.size());
  for (int64_t e : p.extents) put_signed(s, e);
}

// Local results and outside slots share the id -> tag map: the low bit says which.
constexpr uint64_t local_tag(uint64_t index) { return index << 1; }
constexpr uint64_t outside_tag(uint64_t slot) { return (slot << 1) | 1; }

}  // namespace

const char* hot_outcome_event(HotPathDetector::Outcome o) {
  switch (o) {
    case HotPathDetector::Outcome::kDefined: return "HOT_DEFINE";
    case HotPathDetector::Outcome::kHit: return "HOT_RUN";
    case HotPathDetector::Outcome::kMiss: return "HOT_MISS";
    case HotPathDetector::Outcome::kNone: break;
  }
  return "";
}

void HotPathDetector::put_ref(uint64_t id, const TensorEntry& e) {
  auto [it, fresh] = refs_.try_emplace(id, outside_tag(outside_));
  if (!fresh) {
    sig_.push_back((it->second & 1) ? kOutside : kLocal);
    put_varint(sig_, it->second >> 1);
    return;
  }
  // First use of a tensor made before this stretch: its slot, meta and placement.
  sig_.push_back(kOutside);
  put_varint(sig_, outside_++);
  put_meta(sig_, e.meta);
  put_placement(sig_, e.placement);
}

void HotPathDetector::instr(const v1::Instr& in, std::span<TensorEntry* const> entries,
                            uint64_t out, std::string_view scope, bool compile_now) {
  if (!opts_.enabled) return;
  ++seen_;
  if (tainted_) return;
  if (instructions_ >= opts_.max_instructions) {
    taint();  // too long to be a candidate; stop paying for the signature
    return;
  }
  if (instructions_ == 0) {
    sig_.push_back(kScope);
    put_bytes(sig_, scope);
  }
  compile_now_ = compile_now_ || compile_now;
  sig_.push_back(kInstr);
  put_varint(sig_, in.op());
  put_varint(sig_, static_cast<uint64_t>(in.shape_size()));
  for (int64_t d : in.shape()) put_signed(sig_, d);
  put_varint(sig_, static_cast<uint64_t>(in.dtype()));
  put_varint(sig_, static_cast<uint64_t>(in.ints_size()));
  for (int64_t v : in.ints()) put_signed(sig_, v);
  put_varint(sig_, static_cast<uint64_t>(in.reals_size()));
  for (double r : in.reals()) {
    uint64_t bits;
    std::memcpy(&bits, &r, sizeof bits);
    put_varint(sig_, bits);
  }
  // (a payload in shared memory counts by its size: the same stretch either way)
  put_varint(sig_, in.has_shm() ? in.shm().bytes() : in.data().size());
  put_varint(sig_, entries.size());
  for (size_t i = 0; i < entries.size(); ++i) put_ref(in.inputs(static_cast<int>(i)), *entries[i]);
  // The result is instruction `instructions_` of the stretch (a reused id takes the new one).
  if (out != 0) refs_[out] = local_tag(instructions_);
  ++instructions_;
  if (sig_.size() > opts_.cache_bytes / 4) taint();  // too big to keep
}

void HotPathDetector::scope(std::string_view scope) {
  // Before the first instruction the stretch's scope is recorded with it (instr()).
  if (!opts_.enabled || tainted_ || instructions_ == 0) return;
  sig_.push_back(kScope);
  put_bytes(sig_, scope);
}

void HotPathDetector::free(uint64_t id, const TensorEntry&) {
  if (!opts_.enabled || tainted_) return;
  auto it = refs_.find(id);
  // A tensor made before the stretch is not part of what the stretch computes: when its free
  // arrives depends on the client's flushes and garbage collection (the previous step's loss
  // may come with this frame or the last), so it stays out of the signature.
  if (it == refs_.end() || (it->second & 1)) {
    if (it != refs_.end()) refs_.erase(it);
    return;
  }
  sig_.push_back(kFree);  // a temporary of this stretch: where it dies is part of the path
  put_varint(sig_, it->second >> 1);
  refs_.erase(it);  // the id may name a new tensor later
}

void HotPathDetector::reset() {
  sig_.clear();
  candidates_.clear();
  candidates_ready_ = false;
  candidates_checked_ = 0;
  refs_.clear();
  instructions_ = 0;
  seen_ = 0;
  outside_ = 0;
  tainted_ = false;
  opted_out_ = false;
  compile_now_ = false;
  looked_up_valid_ = false;
}

bool HotPathDetector::follows_hot_path() {
  if (!opts_.enabled || tainted_) return false;
  if (!candidates_ready_) {  // the stretch's first look: every hot path may be it
    candidates_ready_ = true;
    for (const auto& [sig, e] : cache_)
      if (e.path != 0) candidates_.push_back(&sig);
  }
  const size_t from = candidates_checked_, n = sig_.size() - from;
  std::erase_if(candidates_, [&](const std::string* c) {
    return c->size() < sig_.size() || std::memcmp(sig_.data() + from, c->data() + from, n) != 0;
  });
  candidates_checked_ = sig_.size();
  return !candidates_.empty();
}

uint64_t HotPathDetector::matching_path() {
  if (!opts_.enabled || tainted_ || instructions_ == 0) return 0;
  looked_up_ = cache_.find(sig_);
  looked_up_size_ = sig_.size();
  looked_up_valid_ = true;
  return looked_up_ == cache_.end() ? 0 : looked_up_->second.path;
}

uint64_t HotPathDetector::evict_oldest() {
  auto victim = cache_.find(*lru_.back());
  std::erase(candidates_, &victim->first);
  const uint64_t path = victim->second.path;
  if (path != 0) ++stats_.evictions;
  stats_.cached_bytes -= victim->first.size();
  lru_.pop_back();
  cache_.erase(victim);
  return path;
}

HotPathDetector::Cut HotPathDetector::cut(bool by_length) {
  Cut c;
  if (!opts_.enabled) return c;
  // The next segment's length: twice this one's after a length cut (a long stretch is cut
  // O(log n) times), `segment` again after any other cut.
  segment_cuts_ = by_length ? std::min<uint32_t>(segment_cuts_ + 1, 32) : 0;
  segment_end_ = uint64_t{opts_.segment} << segment_cuts_;  // (0 stays 0: no length cuts)
  c.instructions = instructions_;
  if (instructions_ == 0 && !tainted_) {  // only frees, or nothing: not a stretch
    reset();
    return c;
  }
  const bool was_hot = last_hot_;
  last_hot_ = false;
  if (tainted_) {
    const bool opted_out = opted_out_;
    reset();
    if (was_hot && !opted_out) {
      c.outcome = Outcome::kMiss;
      ++stats_.misses;
    }
    return c;
  }
  auto it = looked_up_valid_ && looked_up_size_ == sig_.size() ? looked_up_ : cache_.find(sig_);
  looked_up_valid_ = false;
  if (it == cache_.end()) {
    // Make room: the least recently seen go (the first one logged, every one forgotten).
    while (!lru_.empty() && (cache_.size() >= opts_.cache_entries ||
                             stats_.cached_bytes + sig_.size() > opts_.cache_bytes)) {
      if (const uint64_t gone = evict_oldest(); gone != 0) {
        if (c.evicted == 0) c.evicted = gone;
        c.forgotten.push_back(gone);
      }
    }
    stats_.cached_bytes += sig_.size();
    it = cache_.emplace(std::move(sig_), Entry{}).first;
    lru_.push_front(&it->first);
    it->second.lru = lru_.begin();
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  }
  Entry& e = it->second;
  ++e.count;
  if (e.path == 0 && (compile_now_ || e.count >= opts_.min_repeats)) {
    e.path = next_path_++;
    c.outcome = Outcome::kDefined;
    ++stats_.defined;
  } else if (e.path != 0) {
    c.outcome = Outcome::kHit;
    ++stats_.hits;
  } else if (was_hot) {
    c.outcome = Outcome::kMiss;
    ++stats_.misses;
  }
  c.path = e.path;
  last_hot_ = e.path != 0;
  stats_.cached = cache_.size();
  reset();
  return c;
}

}  // namespace gt::dispatcher
