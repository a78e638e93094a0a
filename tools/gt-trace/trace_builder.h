// Instruction log -> Chrome / Perfetto trace-event JSON (ARCHITECTURE §9; the format is Google's
// "Trace Event Format": {"traceEvents": [...], "displayTimeUnit": "ms"}, timestamps in µs).
//
// Tracks: one process per worker ("worker 0 (cpu)": threads "executor" for its EXEC turns and
// "peer exchange" for its PEER instructions) and one per session ("session <id> <user>/<name>":
// threads "instructions" for what the dispatcher received (RECV) and "requests" for each SYNC /
// FETCH / STATS from REQUEST to REPLY). Flows: a request to the worker turn that answered it and
// back (the REQUEST line names each worker's request id; the EXEC line lists the ids answered
// after it), and peer transfers from the sending member to each receiving one (PEER lines of
// one exchange share a tag).
//
// Worker times: each EXEC / PEER line carries the worker's own clock (wstart / wend) and its
// ack's offset sample (ack_offset); the least sample per worker over the whole log places all of
// that worker's events with one offset, so its own order is kept exactly. Lines without them
// (an older log) use their start= / end= seconds.
#pragma once

#include <cstdint>
#include <istream>
#include <string>

#include "tools/gt-trace/log_line.h"

namespace gt::trace {

struct TraceSummary {
  size_t lines = 0;      // log lines read
  size_t skipped = 0;    // not log lines (comments, cut lines)
  size_t workers = 0, sessions = 0;
  size_t slices = 0;     // complete ("X") events
  size_t flows = 0;      // flow start / finish pairs
};

// Reads every line of `in` (an instruction log or a live recording) and returns the JSON.
std::string convert_log(std::istream& in, TraceSummary* summary = nullptr);

}  // namespace gt::trace
