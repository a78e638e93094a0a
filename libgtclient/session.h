// The client's connection to GT: one per process, created on first use (connecting to
// GT_ADDRESS / gt::connect, or spawning the embedded default). Ops are fire-and-forget: emit()
// queues an instruction and returns at once; a background I/O thread coalesces queued
// instructions into frames. Only fetch/synchronize/stats wait for the dispatcher.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <optional>
#include <string>
#include <vector>

#include "gt/tensor.h"
#include "libgtcore/op_attrs.h"
#include "gt/core/ops.h"
#include "libgtcore/shape.h"

namespace gt::detail {

struct HostTensor {
  TensorMeta meta;
  std::string bytes;  // row-major, meta.nbytes() long
};

using WorkerStatsInfo = gt::WorkerStats;  // gt/tensor.h

// The embedded default's worker count (call before the first op; the default is 1).
void set_embedded_workers(int n);

class Session {
 public:
  virtual ~Session() = default;

  // The process-wide session, connected (or spawned) on first use. Throws gt::Error when it
  // cannot connect.
  static Session& get();
  // Connects the process-wide session to an explicit address ("host:port" or "unix:/path").
  // Must be called before the first op; throws if a session already exists elsewhere.
  static void connect(const std::string& address);
  // Tears the process-wide session down (also done at exit).
  static void shutdown();

  // Queues one op with new result id (returned; 0 for in-place ops, which write inputs[0]).
  // The caller has already run infer_meta. Blocks only when the send window is full.
  virtual uint64_t emit(OpId op, const OpAttrs& attrs, std::span<const uint64_t> inputs) = 0;
  // Queues a free of `id` (called when the last client handle dies).
  virtual void free(uint64_t id) = 0;
  // The largest payload one from_host / host_chunk instruction carries (from_host_bytes chunks
  // uploads by it): what fits the dispatcher's frame limit, at most kHostChunkBytes.
  virtual size_t upload_chunk_bytes() const;

  // Sync points. They throw gt::Error naming the failing op and its message.
  virtual HostTensor fetch(uint64_t id) = 0;
  // fetch() straight into `dst` (meta.nbytes() bytes, where the caller wants the values: a
  // std::vector, a numpy array), checked against `meta`. A session that can receives the bytes
  // there directly; this default fetches and copies once.
  virtual void fetch_into(uint64_t id, const TensorMeta& meta, void* dst);
  // The values in memory the result owns (meta.nbytes() bytes, checked against `meta`). A
  // session that can hands out the memory they arrived in (a region of the shared-memory
  // arena: no copy at all); this default allocates and uses fetch_into.
  virtual std::shared_ptr<const char> fetch_shared(uint64_t id, const TensorMeta& meta);
  virtual void synchronize() = 0;
  virtual std::vector<WorkerStatsInfo> worker_stats() = 0;
  // The dispatcher's live status, a serialized v1::StatusReport (a sync point).
  virtual std::string status_report() = 0;

  // Counter-based RNG state: every random op consumes one counter value.
  virtual uint64_t seed() const = 0;
  virtual uint64_t next_rng_counter() = 0;
  virtual void manual_seed(uint64_t seed) = 0;

  virtual uint64_t session_id() const = 0;

  // Stream annotations for sharding (ordered with the ops around them; no round trip).
  virtual void signal_enter(const std::string& name, const std::string& backward,
                            bool backward_pass) {}
  virtual void signal_exit(const std::string& name) {}
  struct ConfigEntry {
    std::string name;
    bool has_shard = false;
    int axis = 0;
    std::vector<uint32_t> workers;
    bool replicated = false;
    std::string backward;
    std::optional<bool> compile;  // unset / true / false (gt::SignalConfig)
  };
  virtual void register_config(const ConfigEntry& entry) {}
};

}  // namespace gt::detail
