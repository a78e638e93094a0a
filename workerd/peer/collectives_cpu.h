// Collectives on host memory, built from point-to-point messages (a PeerLink's transport):
// all_reduce, all_gather and reduce_scatter over a CommGroup (libgtcore/comm.h).
//
// Every collective is one or two phases of "post every receive, send to every other member,
// then receive": the pattern of messages depends only on the group, never on the data, so a
// member whose input is poisoned (or that fails) still sends one marker per message and nobody
// waits for a message that will not come. Reductions combine the members' contributions in
// group order on the member that owns a chunk, so every member ends with bit-identical values;
// float16/bfloat16 accumulate through float and round once, integers wrap like the CPU
// kernels (int64 exact), bool sums/max are `or` and min is `and`.
#pragma once

#include <cstdint>
#include <memory>

#include "libgtcore/comm.h"
#include "libgtcore/shape.h"

namespace gt::worker::peer {

// One instruction's point-to-point messages. Failure and poison are sticky inside the channel:
// once ok() is false, send() sends a poison marker instead of the data and recv() returns
// null without waiting.
class Channel {
 public:
  virtual ~Channel() = default;
  // Announces a receive before sending (the message may then be admitted at any size).
  virtual void expect(uint32_t peer, uint32_t step, uint64_t bytes) = 0;
  virtual void send(uint32_t peer, uint32_t step, const void* data, uint64_t bytes) = 0;
  // Exactly `bytes` bytes from `peer`, or null when no data came (poisoned or failed).
  virtual std::unique_ptr<char[]> recv(uint32_t peer, uint32_t step, uint64_t bytes) = 0;
  virtual bool ok() const = 0;
};

// The steps a collective uses (0..n-1), so a poisoned member can send its markers without
// knowing any shapes.
int comm_steps(CommId c);

// `in`/`out` are contiguous row-major host buffers of the given metas.
void all_reduce(Channel& ch, const CommGroup& g, const TensorMeta& meta, const void* in, void* out);
void all_gather(Channel& ch, const CommGroup& g, const TensorMeta& out_meta, const void* in,
                void* out);
void reduce_scatter(Channel& ch, const CommGroup& g, const TensorMeta& in_meta, const void* in,
                    void* out);

// Combines `n` elements of `dt` from each source in order: dst = src_0 op src_1 op ...
// (exposed for tests and for reductions that happen elsewhere).
class Reducer {
 public:
  Reducer(DType dt, ReduceKind kind, int64_t n, void* dst);
  ~Reducer();
  void add(const void* src);
  void finish();

 private:
  DType dt_;
  ReduceKind kind_;
  int64_t n_;
  void* dst_;
  std::unique_ptr<float[]> acc_;  // float16/bfloat16 accumulate through float
  bool first_ = true;
};

}  // namespace gt::worker::peer
