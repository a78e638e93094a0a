// RemoteSession: the Session implementation over one connection to a dispatcher.
//
// Throughput path: user threads append instructions to a queue under a mutex; a flusher thread
// swaps the queue out and writes it as one frame whenever it is idle, so batches grow under
// load and add no latency when idle. Latency path: a thread at a sync point writes the queue
// (with its request) itself and reads the reply itself (leader/follower: one waiting thread
// reads for all), so a round trip costs no thread hand-offs on the client.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "libgtclient/session.h"
#include "libgtclient/session_embedded.h"
#include "libgtclient/session_shm_pool.h"
#include "libgtcore/frame_codec.h"
#include "libgtcore/frame_gather.h"
#include "proto/gt.pb.h"

namespace gt::detail {

class RemoteSession : public Session {
 public:
  // Connects and completes the handshake (throws gt::Error on failure). `daemons`, when set,
  // are the embedded dispatcher/worker this session owns and tears down.
  RemoteSession(const std::string& address, std::unique_ptr<EmbeddedDaemons> daemons);
  ~RemoteSession() override;

  uint64_t emit(OpId op, const OpAttrs& attrs, std::span<const uint64_t> inputs) override;
  size_t upload_chunk_bytes() const override;
  void free(uint64_t id) override;
  HostTensor fetch(uint64_t id) override;
  void fetch_into(uint64_t id, const TensorMeta& meta, void* dst) override;
  std::shared_ptr<const char> fetch_shared(uint64_t id, const TensorMeta& meta) override;
  void synchronize() override;
  std::vector<WorkerStatsInfo> worker_stats() override;
  std::string status_report() override;
  uint64_t seed() const override;
  uint64_t next_rng_counter() override;
  void manual_seed(uint64_t seed) override;
  uint64_t session_id() const override { return session_id_; }
  void signal_enter(const std::string& name, const std::string& backward,
                    bool backward_pass) override;
  void signal_exit(const std::string& name) override;
  void register_config(const ConfigEntry& entry) override;

 private:
  struct Pending {
    bool done = false;
    std::vector<v1::ErrorInfo> errors;
    HostTensor tensor;
    bool have_meta = false;
    std::vector<WorkerStatsInfo> stats;
    std::string status;  // STATUS: the serialized StatusReport
    // fetch_into: the values go to `dst` (expect.nbytes() bytes), checked against `expect`.
    bool into = false;
    char* dst = nullptr;
    TensorMeta expect;
    uint64_t received = 0;  // bytes written to dst
    // Asked to come through shared memory (Request.shm): the region its chunks lie in. Chunks
    // that come over the socket instead (the dispatcher or worker could not map the arena)
    // go to dst as usual.
    std::shared_ptr<ShmRegion> region;
  };

  void flusher_loop();
  v1::Instr* append_annotation_locked();
  // Takes the queue and writes it (caller holds no lock). Returns false when nothing was queued.
  bool flush_queue();
  void mark_lost(const std::string& why);
  // Handles one server frame; called with mu_ held.
  void on_frame_locked(std::string_view body);
  // A fetch_into chunk's metadata against what its request expects (mu_ held); false, with the
  // session marked lost, when the dispatcher's answer cannot be that tensor's.
  bool accept_chunk_locked(Pending& p, const v1::TensorData& meta, uint64_t payload_bytes);
  // With a large fetch_into chunk in progress in decoder_ (its header received), reads its
  // payload straight into the destination (mu_ held on entry and exit, released while reading).
  // False when what is buffered is not such a chunk: the ordinary path then.
  bool receive_payload_direct(std::unique_lock<std::mutex>& lk, int wait_ms);
  // A region of the shared-memory arena for a fetch of `bytes` (registering a new arena with
  // the dispatcher first when one is made); null: the fetch takes the socket.
  std::shared_ptr<ShmRegion> shm_region(uint64_t bytes);
  // Writes `msg` (a queued batch) as one frame, or, over the dispatcher's frame limit, as
  // several in stream order (write_mu_ held).
  Status send_frames(v1::ClientMessage& msg);
  // A large upload over the socket, written from the caller's memory (no copy into the queue):
  // what is queued goes first, in the same frame, then this instruction with its payload last
  // (libgtcore/payload_frame.h). Nullopt (nothing done) inside a compiled scope, whose queue
  // stays whole: the upload is queued as usual.
  std::optional<uint64_t> emit_upload_direct(OpId op, const OpAttrs& attrs,
                                             std::span<const uint64_t> inputs);
  // An upload payload copied into a region of the arena (its release word cleared), or null:
  // the payload then travels in the instruction.
  std::shared_ptr<ShmRegion> shm_upload(std::string_view payload);
  // Upload regions whose payload has been read (release word set), or that were sent before
  // request `synced_before` of a SYNC that has answered, go back to the arena (mu_ held).
  void release_uploads_locked(uint64_t synced_before = 0);
  Pending request(v1::Request::Kind kind, uint64_t id);
  Pending request(v1::Request::Kind kind, uint64_t id, Pending init);
  // The sync deadline in ms (0: none): gt::set_sync_timeout, else GT_SYNC_TIMEOUT_S / default.
  int64_t sync_timeout_ms() const;
  void handshake(const std::string& address);

  int fd_ = -1;
  std::unique_ptr<EmbeddedDaemons> daemons_;
  // Shared-memory transport for large fetches (a Unix socket to a dispatcher that offers it,
  // GT_SHM not 0); null: every fetch comes over the socket.
  std::shared_ptr<ShmArenaPool> shm_;
  struct UploadHeld {
    std::shared_ptr<ShmRegion> region;
    uint64_t payload_bytes;
    uint64_t before_request;  // next_request_id_ when it was queued
  };
  std::vector<UploadHeld> uploads_held_;  // guarded by mu_
  std::thread flusher_;

  mutable std::mutex mu_;              // queue, pending requests, state
  std::condition_variable flusher_cv_; // work for the flusher
  std::condition_variable space_cv_;   // queue drained (backpressure)
  std::condition_variable reply_cv_;   // a reply arrived / the reader role is free
  v1::ClientMessage queue_;
  size_t queued_ = 0;
  size_t queued_payload_ = 0;  // host bytes (uploads) in queue_: bounds the frame it becomes
  bool flusher_sleeping_ = false;
  // Compiled scopes (gt::compile, gt.compile: configs with compile: true). While one is open
  // the flusher holds the queue, so the scope's instructions reach the dispatcher in one frame
  // with its exit, and the dispatcher replays them as one hot path (ARCHITECTURE §7). Where the
  // dispatcher cuts stretches into segments (after s, 3s, 7s, ... instructions:
  // Welcome.hot_path_segment), each whole segment goes in a frame of its own when the next
  // instruction comes, so the worker runs it while the rest is built. Held at most
  // kMaxHeldInstrs instructions (and never past the queue's own bounds).
  std::unordered_set<std::string> compile_signals_;
  std::vector<bool> scope_holds_;  // per open scope: whether it is compiled
  int hold_depth_ = 0;
  uint32_t hot_segment_ = 0;     // the dispatcher's first segment length (0: send scopes whole)
  uint64_t held_ops_ = 0;        // instructions of the outermost compiled scope so far
  uint64_t segment_end_ = 0;     // held_ops_ at which the current segment ends
  // Before the next instruction is queued: a whole segment goes out now (`lk` holds mu_).
  void send_whole_segment(std::unique_lock<std::mutex>& lk);
  bool holding_locked() const;
  // The queue filled up (emit waits for its space) while a compiled scope held it: it goes out
  // now, and the scope's later instructions in frames of their own. Until the queue is sent.
  bool hold_overflow_ = false;
  // Plain loops: when the dispatcher said it held the last stretch to its end and replayed it
  // (Reply.hot_stretch), the client holds the next one as well, until it has as many
  // instructions as the last (then this thread sends it), a request, or kAutoHoldMax: one frame
  // per step instead of one per flush (the dispatcher would hold them anyway).
  uint64_t stretch_instrs_ = 0;  // instructions since the last request
  uint64_t last_stretch_ = 0;    // the stretch before
  bool auto_hold_ = false;       // the last reply's hot_stretch
  bool auto_released_ = false;   // this stretch's held part has gone (whole, or timed out)
  std::chrono::steady_clock::time_point held_since_;  // when the flusher first saw it held
  bool auto_holding_locked() const;
  // Counts an instruction of the stretch; true when it makes a held step whole (it goes now).
  bool count_stretch_instr_locked();
  void note_hot_stretch_locked(bool hot);
  void wake_flusher_locked();    // when the queue is not held
  void notify_flusher_locked();  // if it sleeps, whatever holds
  // queue_ becomes sending_ (write_mu_ and mu_ held), the queue's counts and hold start again.
  void take_queue_locked();
  bool stopping_ = false;
  bool reader_active_ = false;
  std::string lost_;                   // non-empty once the session is gone
  Code lost_code_ = Code::kUnavailable;  // kDeadlineExceeded when the sync deadline ended it
  int64_t env_sync_timeout_ms_ = 0;    // GT_SYNC_TIMEOUT_S (or the default), read at connect
  std::chrono::steady_clock::time_point last_rx_;  // when the reader last got bytes
  uint64_t next_id_ = 1;
  uint64_t next_request_id_ = 1;
  uint64_t session_id_ = 0;
  uint64_t seed_ = 67280421310721ull;  // PyTorch's default CPU seed
  uint64_t rng_counter_ = 0;
  std::unordered_map<uint64_t, Pending> pending_;

  std::mutex write_mu_;                // one writer on the socket at a time
  v1::ClientMessage sending_;          // guarded by write_mu_
  void clear_sent();                   // sending_ after its frame went out (write_mu_ held)
  // sending_'s frame: its uploads' payloads are written from sending_ itself (FrameParts).
  FrameParts wparts_;                  // guarded by write_mu_
  v1::Instr direct_instr_;             // emit_upload_direct's, guarded by write_mu_
  std::string direct_header_;          // its frame's header, guarded by write_mu_
  bool direct_uploads_ = true;         // GT_DIRECT_UPLOAD=0 queues every upload (benchmarks)
  // The largest frame the dispatcher accepts (Welcome.max_frame_bytes): uploads are chunked and
  // queued so that no frame passes it.
  uint64_t max_frame_bytes_ = kDefaultMaxFrameBytes;
  size_t max_queued_payload() const;
  FrameDecoder decoder_;               // used only by the thread holding the reader role
  // Reused by the reader for every frame (no allocation per reply).
  v1::ServerMessage rx_msg_;
  v1::Reply rx_head_;
  v1::TensorData rx_meta_;
};

// "op failed: message (worker 0)" for the first error; with several, says how many.
std::string format_errors(const std::vector<v1::ErrorInfo>& errors);

// The process-wide sync deadline override (gt::set_sync_timeout): milliseconds, 0 = none,
// negative = not set (GT_SYNC_TIMEOUT_S, else the default, applies).
void set_sync_timeout_ms(int64_t ms);

}  // namespace gt::detail
