// The fuzz harnesses (issue 7), as plain functions so the libFuzzer entry points (fuzz_entry.cpp)
// and the regression tests (tests/integration/test_fuzz_regressions.cpp) run inputs through
// exactly the same code. Each function takes one fuzz input and aborts (GT_FUZZ_CHECK) when an
// invariant breaks; the sanitizers report everything else.
//
//   run_frame_codec   byte 0: piece-size seed and frame limit; the rest: a byte stream fed to a
//                     FrameDecoder in random-sized pieces (must decode exactly like one piece);
//                     every frame is parsed as all four envelopes, re-framed and re-decoded.
//   run_handshake     byte 0: mode (bit 0 TCP transport, else Unix; bit 1 users file + worker
//                     secret configured; bit 2 a worker is registered first); the rest: what a
//                     new connection sends to an in-process Dispatcher before hanging up.
//   run_client_batch  byte 0: mode (bit 0 raw frames, else length-prefixed ClientBatch protos;
//                     bit 1 the fake worker executes on a CpuBackend, else discards; bit 2 the
//                     session is a quota'd non-admin user over TCP, else a Unix-socket admin;
//                     bit 3 no instruction log, so hot paths are replayed by reference);
//                     the rest follows a valid client Hello on a welcomed session. Then the
//                     dispatcher drains; with an executing worker, drain must complete and the
//                     worker must hold nothing once the client hung up.
//   run_worker_batch  a stream of frames, each a gt.v1.WorkerBatch executed in order by one
//                     Executor on a CpuBackend with a small memory limit.
//   run_reply_payload byte 0: bit 0 WorkerMessage (else ServerMessage), the rest a prefix cut;
//                     the rest: a frame body for the fetch-reply header scanner (issue 15).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gt::fuzz {

// Silences logging (once per process).
void init();

void run_frame_codec(const uint8_t* data, size_t size);
void run_handshake(const uint8_t* data, size_t size);
void run_client_batch(const uint8_t* data, size_t size);
void run_worker_batch(const uint8_t* data, size_t size);
void run_reply_payload(const uint8_t* data, size_t size);
// Valid fetch replies of both envelopes and a few other bodies: (name, input) for
// corpus/reply_payload/ and the regression test.
std::vector<std::pair<std::string, std::string>> reply_payload_seeds();

inline void run_frame_codec(std::string_view s) {
  run_frame_codec(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}
inline void run_handshake(std::string_view s) {
  run_handshake(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}
inline void run_client_batch(std::string_view s) {
  run_client_batch(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}
inline void run_worker_batch(std::string_view s) {
  run_worker_batch(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}
inline void run_reply_payload(std::string_view s) {
  run_reply_payload(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// Constants shared with the seed generator and the tests.
inline constexpr const char* kWorkerSecret = "fuzz-worker-secret";
inline constexpr const char* kTokenAlice = "gt_fuzz_token_alice";  // quota'd user
inline constexpr const char* kTokenRoot = "gt_fuzz_token_root";    // admin
inline constexpr uint64_t kFuzzMaxFrameBytes = 1u << 20;
inline constexpr uint64_t kWorkerMemoryBytes = 16u << 20;  // run_worker_batch's CpuBackend
inline constexpr uint64_t kRigWorkerMemoryBytes = 4u << 20;  // executing fake worker's

// Mode bits (byte 0).
inline constexpr uint8_t kHandshakeTcp = 1, kHandshakeUsers = 2, kHandshakeWorkerFirst = 4;
inline constexpr uint8_t kBatchRaw = 1, kBatchExecute = 2, kBatchUser = 4;
// The instruction log off: the dispatcher then replays hot paths by reference (HotDefine /
// HotRun to the worker) and holds a stretch that follows one, which it never does while logging.
inline constexpr uint8_t kBatchNoLog = 8;
// Stretches also cut by length (hot_path_segment 3: segments of 3, 6, 12, ... instructions).
inline constexpr uint8_t kBatchSegments = 16;

}  // namespace gt::fuzz

// An invariant of the system under test: violated means a bug (not a harness limit).
#define GT_FUZZ_CHECK(cond, ...)                                                     \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "%s:%d: GT_FUZZ_CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                             \
      std::fprintf(stderr, "\n");                                                    \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)
