// The hot paths a worker holds (ARCHITECTURE §7, issue 11): per session, the paths the dispatcher
// defined (WorkerBatch.hot_define, v1::HotPath), checked once when defined and then run by the
// executor for each HotRun (executor_hot.cpp) with the run's handles put in. Nothing the
// dispatcher sends is trusted: a definition whose references point forward, out of range, or at
// an instruction without a result is refused, and a session holds a bounded number of paths and
// instructions. Definitions die with their session (end_session), on hot_forget, and when the
// dispatcher goes away. A path holds ops and, for a sharded path, the communication between its
// members (libgtcore/comm.def), whose tags each run offsets (HotRun.tag_base); a communication
// is never part of a fused chain or a graph segment.
//
// At definition the path is also analysed for elementwise chains the device may fuse
// (workerd/fusion.h): runs of consecutive fusable ops, each consuming the previous one's result,
// that result read nowhere else and freed inside the path, so it never needs to exist. On a
// device with graphs (Backend::captures_graphs) it is cut into graph segments instead: runs of
// instructions the device may record (no upload, capturable ops), each recorded and launched
// as one device graph at every run (executor_hot.cpp), whose executable graph the segment keeps
// from run to run and the store hands back to the device (the graph dropper) with its path.
// On a device with a transposed GEMM, 2-D transposes feeding a matmul are folded into it
// (fusion.h, TransposeFold).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "libgtcore/instr_codec.h"
#include "libgtcore/status.h"
#include "proto/gt.pb.h"
#include "workerd/fusion.h"

namespace gt::worker {

struct HotPathDef {
  // The instructions as defined; inputs and out are rewritten with handles at each run.
  std::vector<v1::Instr> instrs;
  std::vector<uint64_t> refs;        // every instruction's input references, in order
  std::vector<uint32_t> ref_begin;   // instruction k's refs: [ref_begin[k], ref_begin[k + 1])
  std::vector<int64_t> result;       // instruction k's result number, -1 in place
  std::vector<int32_t> upload;       // instruction k's payload number in the HotRun, -1 none
  // Communication (a sharded path's exchange): instruction k's tag is ints[tag_int[k]] (-1: not
  // a communication), tag_offset[k] + HotRun.tag_base at each run.
  std::vector<int32_t> tag_int;
  std::vector<uint64_t> tag_offset;
  struct Free {
    uint32_t at;     // after this many instructions
    uint32_t instr;  // whose result
  };
  std::vector<Free> frees;           // by `at`
  uint32_t results = 0, bindings = 0, uploads = 0;
  // Fusable chains (begin ascending) and, per instruction, the chain starting there (-1 none).
  std::vector<FusedChain> chains;
  std::vector<int32_t> chain_at;
  // The decoded ops of the chains' instructions (attrs view the instrs above: stable).
  std::vector<std::optional<DecodedInstr>> decoded;
  // Graph segments (begin ascending) and, per instruction, the segment starting there (-1).
  struct GraphSegment {
    uint32_t begin = 0, end = 0;
    void* graph = nullptr;  // the device's executable graph of the last run (Backend::end_graph)
    // The path's frees inside the segment of results made inside it (by `at`): applied in
    // stream order while it records, as eagerly. Frees of earlier results wait for its end (a
    // failed capture runs the segment again, which reads them).
    std::vector<Free> frees;
  };
  std::vector<GraphSegment> segments;
  std::vector<int32_t> segment_at;
  // Where segments must end (ascending): the points of a run where a FETCH behind it is due
  // (Executor::begin_final_fetches), so that its answer need not wait for the whole path.
  std::vector<uint32_t> cuts;
  static constexpr size_t kMaxCuts = 4;
  // Transposes folded into matmuls (fusion.h, TransposeFold; empty where the device has no
  // transposed GEMM): the folds, and per instruction its role: kNoFold, the fold's index for its
  // matmul, kFoldedOperand for a permute a fold takes over.
  std::vector<TransposeFold> folds;
  std::vector<int32_t> fold_at;
  static constexpr int32_t kNoFold = -1, kFoldedOperand = -2;
  // When a FETCH queued behind a run may be answered before the run ends
  // (Executor::plan_final_fetch): the instruction making each result, whether the path
  // frees an instruction's result, the instructions without a result (in-place writes to their
  // first input), and whether the path exchanges with peers (then it never is).
  std::vector<uint32_t> result_instr;  // result number -> instruction
  std::vector<uint8_t> freed;          // per instruction
  std::vector<uint32_t> writes;        // ascending
  bool has_comm = false;
};

// What a path's definition looks for on the device that will run it.
struct HotPathDevice {
  bool fuse = false;                       // fusable chains (Backend::fuses_chains)
  bool fuse_casts = false;                 // casts in them (Backend::fuses_chain_casts)
  bool fold_transposes = false;            // TransposeFolds (Backend::folds_transposes)
  std::function<bool(OpId)> capturable;    // graph segments (null: none)
};

class HotPathStore {
 public:
  // A session may hold at most this many paths and instructions in them: what the dispatcher
  // can hold for one session (hot_path_cache's largest value; 4 MiB of signatures, at least 8
  // bytes an instruction), so a well-behaved dispatcher never meets the bound.
  static constexpr size_t kMaxPathsPerSession = 65536;
  static constexpr size_t kMaxInstructionsPerSession = size_t{1} << 20;

  // Checks and keeps `p` for `session`, with the chains or graph segments the device can use.
  // Redefining an id replaces it.
  Status define(uint64_t session, const v1::HotPath& p, const HotPathDevice& device);
  HotPathDef* find(uint64_t session, uint64_t id);
  void forget(uint64_t session, uint64_t id);
  // Ends d's graph segments at instruction `at` from now on, when one spans it (a new cut; at
  // most kMaxCuts): the segments are found again and their executable graphs dropped (each is
  // instantiated anew at its next run). Returns whether anything changed.
  bool cut_segments(HotPathDef& d, uint32_t at, const std::function<bool(OpId)>& capturable);
  void drop_session(uint64_t session);
  void clear();
  size_t size() const { return paths_; }  // paths held, all sessions
  // Called with each executable graph of a path that goes (forget, drop_session, clear).
  void set_graph_dropper(std::function<void(void*)> drop) { drop_graph_ = std::move(drop); }

 private:
  void drop_graphs(HotPathDef& d);
  std::function<void(void*)> drop_graph_;
  struct SessionPaths {
    std::unordered_map<uint64_t, HotPathDef> paths;
    size_t instructions = 0;
  };
  std::unordered_map<uint64_t, SessionPaths> sessions_;
  size_t paths_ = 0;
};

}  // namespace gt::worker
