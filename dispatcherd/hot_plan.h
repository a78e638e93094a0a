// Hot paths replayed without planning them again (ARCHITECTURE §7, issue 11 step 2: "skips
// re-planning"). What a session records of a stretch while it runs (StretchLog), and the plan it
// keeps of a hot path once a repetition has been replayed by reference (HotPlan): enough to
// produce, for a later repetition with the same signature, the HotRuns the workers get and every
// change the eager planning would have made to the session (its results' records, handles,
// quota charges), without validating, placing and rewriting each instruction again. The session
// code is client_session_plan.cpp.
#pragma once

#include <cstdint>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dispatcherd/placement.h"

namespace gt::dispatcher {

// One stretch as it arrives, in the client's ids, numbered as the detector numbers them
// (hot_paths.h): instruction k of the stretch, and "outside" tensors (made before it) by first
// use. Built for every stretch that may be replayed; read when it is (recording a plan) and when
// a buffered repetition is sent from a plan.
struct StretchLog {
  bool active = false;
  bool cacheable = true;  // nothing seen so far that a plan could not reproduce
  std::vector<uint64_t> outs;                      // per instruction: its result id (0: in place)
  std::unordered_map<uint64_t, uint32_t> locals;   // live results: id -> instruction
  std::unordered_map<uint64_t, uint32_t> outside;  // outside tensors: id -> slot
  struct Slot {
    uint64_t id = 0;
    std::vector<uint32_t> workers;  // its placement's members and handles at first use
    std::vector<uint64_t> handles;
    uint64_t written_at = 0;
    bool freed = false;  // freed within the stretch
  };
  std::vector<Slot> slots;
  std::vector<uint64_t> outside_frees;  // ids of outside tensors freed in it, in order
  // Their (worker, handle)s: the only frees of older tensors a part's range may hold (a plan
  // frees the outside tensors after its HotRuns, and nothing else).
  std::set<std::pair<uint32_t, uint64_t>> outside_freed_handles;
  uint32_t current = 0;  // the instruction being planned
  struct Upload {  // a plain upload: instruction k went to `worker` at `index` of its batch
    uint32_t instr, worker;
    int index;
  };
  std::vector<Upload> uploads;
  uint64_t charged = 0;  // quota bytes charged in it (before frees)

  // Empty again, the containers' room kept (a stretch log is made for every stretch).
  void clear() {
    active = false;
    cacheable = true;
    outs.clear();
    locals.clear();
    outside.clear();
    slots.clear();
    outside_frees.clear();
    outside_freed_handles.clear();
    current = 0;
    uploads.clear();
    charged = 0;
  }
};

// One worker's part of a replayed stretch, however it is sent.
struct PartSummary {
  uint32_t worker = 0;
  uint64_t handles = 0;      // its results' handles (they follow its first)
  uint32_t instrs = 0, own_frees = 0;  // what its HotRun stands for (WorkerBatch.hot_extra)
  uint64_t hash = 0;         // as hot_defined_ holds it
  bool exchanges = false;    // its HotRun carries tag_base
  uint64_t replaced_bytes = 0, sent_bytes = 0;  // (hot_path_bytes_saved)
  uint64_t cost_ns = 0;      // the cost model's estimate of its instructions
};

// What replay_on_worker made of one worker's part (recorded into a HotPlan).
struct PartRecord : PartSummary {
  uint64_t first_handle = 0;
  std::vector<uint64_t> older;  // frees of older tensors in its range
  bool shm = false;         // an upload in shared memory (not reproducible from a plan)
  std::vector<uint64_t> bindings;    // absolute handles, by slot
  std::vector<int> upload_indices;   // the batch index of each upload, in HotRun.data order
};

struct HotPlan {
  uint64_t epoch = 0;          // WorkerPool::epoch() it was made in
  uint64_t config_epoch = 0;   // the session's configs then
  uint32_t instructions = 0;   // client instructions of the stretch
  uint32_t slots = 0;          // outside tensors
  uint64_t tags = 0;           // collective tags it uses
  uint64_t charged = 0;        // quota bytes charged (before frees): what must fit
  struct Ref {                 // a handle: `offset` into part `part`'s results (part -1: 0)
    int32_t part = -1;
    uint64_t offset = 0;
  };
  struct Result {              // the record of a result that outlives the stretch
    uint32_t instr = 0;
    TensorMeta meta;
    Placement placement;
    std::vector<Ref> handles;
    Ref written_at;            // (part -1: never written in place)
    int64_t charged = 0;
  };
  std::vector<Result> results;
  struct Written {             // an outside tensor written in place: its new written_at
    uint32_t slot = 0;
    Ref at;
  };
  std::vector<Written> written;
  struct Binding {             // member `member` of outside slot `slot`
    uint32_t slot = 0, member = 0;
  };
  struct Part : PartSummary {
    std::vector<Binding> bindings;
    std::vector<uint32_t> uploads;  // the client instruction whose payload each upload is
  };
  std::vector<Part> parts;
};

}  // namespace gt::dispatcher
