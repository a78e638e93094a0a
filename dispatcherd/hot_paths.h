// Hot-path detection (ARCHITECTURE §7, issue 11 step 1). A session's instruction stream is cut
// into stretches at its sync points (a frame carrying a SYNC or FETCH) and at signal
// boundaries that change how instructions are planned or compiled (a sharding or compiled
// scope, a config; others are recorded in the signature). A stretch's signature is everything its plan depends on:
//   - each instruction's op and attributes (shape, dtype, ints, reals; an upload's size, not
//     its bytes, which are the stretch's input),
//   - its dataflow: each input is "the result of instruction p of this stretch" or "outside
//     tensor k" (numbered by first use, so the same outside tensor read twice is one slot),
//     and where each of its own results is freed (frees of tensors made before it are not
//     part of it: when they arrive depends on the client's flushes),
//   - every outside tensor's shape, dtype and placement, at its first use,
//   - the signal scope the stretch runs under.
// Op names alone are never a key: two stretches with the same ops wired differently differ.
// A signature seen `min_repeats` times (once under a signal whose config says `compile: true`)
// becomes a hot path (HOT_DEFINE in the instruction log),
// each later repetition is a hit (HOT_RUN), and a stretch that is not the hot path its
// predecessor was is a miss (HOT_MISS: a shape changed mid-loop, say). Signatures live in a
// bounded LRU cache per session (HOT_EVICT when a hot path falls out), freed with the session.
//
// The session (client_session_hot.cpp) replays a qualifying hot path by reference: HotPath /
// HotRun to its worker instead of the stretch's instructions.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dispatcherd/placement.h"
#include "proto/gt.pb.h"

namespace gt::dispatcher {

struct HotPathOptions {
  bool enabled = true;
  uint32_t min_repeats = 2;
  size_t cache_entries = 64;
  size_t max_instructions = 4096;  // a longer stretch is not a candidate
  // Signature bytes a session may hold (a client must not grow the dispatcher without bound):
  // least recently seen signatures go first; one longer than a quarter of it is no candidate.
  size_t cache_bytes = size_t{4} << 20;
  // A stretch is also cut by length, so that a long one reaches its worker a segment at a time,
  // the first soon (its work starts while the client still builds the rest): after `segment`
  // instructions, then after twice as many more, and so on (segments of s, 2s, 4s, ... from each
  // other cut). The cuts count instructions, not frames: the same stretch is cut at the same
  // places however the client's flushes divided it. 0: cut only at sync points and boundaries.
  uint32_t segment = 0;
};

class HotPathDetector {
 public:
  enum class Outcome { kNone, kDefined, kHit, kMiss };
  struct Cut {
    Outcome outcome = Outcome::kNone;
    uint64_t path = 0;         // kDefined / kHit: the hot path's id (per session, from 1)
    size_t instructions = 0;   // the stretch's instructions
    uint64_t evicted = 0;      // a hot path that fell out of the cache to make room (0: none)
    // Every hot path that fell out (workers holding their definitions must forget them).
    std::vector<uint64_t> forgotten;
  };
  struct Stats {
    uint64_t defined = 0, hits = 0, misses = 0, evictions = 0;
    size_t cached = 0;        // signatures held (candidates and hot paths)
    size_t cached_bytes = 0;  // their bytes
  };

  explicit HotPathDetector(HotPathOptions o) : opts_(o), segment_end_(o.enabled ? o.segment : 0) {}

  bool enabled() const { return opts_.enabled; }
  // The current stretch can still become a hot path (not tainted, not too long).
  bool candidate() const { return opts_.enabled && !tainted_; }
  // A valid instruction about to be emitted: `entries` are the records of its inputs (in.inputs'
  // order), `out` its result id (0: in place), `scope` the signal scope in effect and
  // `compile_now` whether that scope's config says `compile: true` (the stretch is then a hot
  // path at first sight, not after min_repeats).
  void instr(const v1::Instr& in, std::span<TensorEntry* const> entries, uint64_t out,
             std::string_view scope, bool compile_now = false);
  // The innermost scope became `scope` within the stretch (a boundary that does not cut it).
  void scope(std::string_view scope);
  // The client freed `id` (a tensor of the session), `e` its record.
  void free(uint64_t id, const TensorEntry& e);
  // The stretch cannot be a hot path (an instruction was refused or poisoned).
  void taint() { tainted_ = true; }
  // The stretch is not to be one: it ran under a `compile: false` scope. Not a miss either
  // when it follows a hot path (the user opted out; HOT_MISS counts paths that were left).
  void opt_out() {
    ++seen_;
    tainted_ = true;
    opted_out_ = true;
  }
  // The stretch so far is the beginning of a hot path (the session may hold its instructions
  // back for replay: client_session_hot.cpp). Any of the session's hot paths, not only the one
  // the previous stretch was: a program alternating two (a GAN's two steps, training and
  // evaluation) is held too. Checks only the bytes added since the last call against the paths
  // still matching; once the stretch leaves them all it is false until the next cut.
  bool follows_hot_path();
  // The hot path the stretch so far is, whole (0: none, or tainted). Its lookup is kept for the
  // cut that follows (the signature is hashed once).
  uint64_t matching_path();
  // Nothing of a stretch since the last cut (frees at most): cutting it changes nothing.
  bool stretch_empty() const { return instructions_ == 0 && !tainted_; }
  // The current stretch has reached its segment's length (HotPathOptions::segment): the session
  // cuts it here, with cut(true).
  bool segment_full() const {
    return segment_end_ != 0 && seen_ >= segment_end_;
  }
  // Ends the current stretch and looks it up; `by_length`: at segment_full() (the next segment
  // is then twice as long; any other cut starts again from `segment`).
  Cut cut(bool by_length = false);
  const Stats& stats() const { return stats_; }

 private:
  struct Entry {
    uint64_t path = 0;  // 0 until defined
    uint32_t count = 0;
    std::list<const std::string*>::iterator lru;
  };
  // The reference of client id `id` in the signature (local result or outside slot).
  void put_ref(uint64_t id, const TensorEntry& e);
  // Drops the least recently seen signature; returns its hot path id (0: a candidate).
  uint64_t evict_oldest();
  void reset();

  HotPathOptions opts_;
  std::string sig_;                              // the current stretch's signature
  std::unordered_map<uint64_t, uint64_t> refs_;  // client id -> its tag in the signature
  size_t instructions_ = 0;
  uint64_t seen_ = 0;         // instructions of the stretch, candidate or not (segment cuts)
  uint32_t segment_cuts_ = 0;  // length cuts since the last other cut
  uint64_t segment_end_ = 0;   // seen_ at which the stretch is cut by length (0: never)
  uint64_t outside_ = 0;  // outside tensors numbered so far
  bool tainted_ = false;
  bool opted_out_ = false;  // tainted by a `compile: false` scope (opt_out)
  bool compile_now_ = false;  // the stretch runs under a `compile: true` signal
  bool last_hot_ = false;  // the previous stretch was a hot path
  // The hot paths' signatures (cache_ keys) the stretch so far is a beginning of, once
  // follows_hot_path() has looked (candidates_ready_), and the bytes of sig_ checked so far.
  std::vector<const std::string*> candidates_;
  bool candidates_ready_ = false;
  size_t candidates_checked_ = 0;
  std::unordered_map<std::string, Entry> cache_;
  // matching_path()'s lookup of sig_ while sig_ is still that size (it only grows until a cut).
  std::unordered_map<std::string, Entry>::iterator looked_up_;
  size_t looked_up_size_ = 0;
  bool looked_up_valid_ = false;
  std::list<const std::string*> lru_;  // most recent first; points at cache_'s keys
  uint64_t next_path_ = 1;
  Stats stats_;
};

const char* hot_outcome_event(HotPathDetector::Outcome o);  // "HOT_DEFINE", ... ("" for kNone)

}  // namespace gt::dispatcher
