// Regressions found by the fuzzers (tests/fuzz, issue 7). Each bug has an explicit test here,
// and every input a fuzzer crashed with is kept in tests/fuzz/corpus/<target>/regress-* and
// replayed through the very harness that found it (an in-process Dispatcher over socketpairs,
// with a fake worker executing on a CpuBackend; see tests/fuzz/dispatcher_rig.h).
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <random>
#include <fstream>
#include <sstream>

#include "libgtcore/instr_codec.h"
#include "libgtcore/reply_payload.h"
#include "tests/fuzz/dispatcher_rig.h"
#include "tests/fuzz/harness.h"

using namespace gt;
using namespace gt::fuzz;

namespace {

v1::Instr instr(OpId op, uint64_t out, std::initializer_list<uint64_t> inputs,
                const OpAttrs& a = {}) {
  v1::Instr in;
  encode_instr(op, a, &in);
  in.set_out(out);
  for (uint64_t i : inputs) in.add_inputs(i);
  return in;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("a client that frees and hangs up while its batches wait leaks nothing on the worker",
          "[fuzz][dispatcher]") {
  // fuzz_client_batch: end_session() dropped the session's batches still waiting in the DRR
  // scheduler, frees included; tensors made by batches already sent were never freed.
  init();
  dispatcher::DispatcherOptions o;
  o.worker_window = 16;
  DispatcherRig rig(o);
  FakeWorker& w = rig.add_worker(/*execute=*/true, "", 4u << 20);
  rig.settle();
  REQUIRE(w.welcomed());
  Peer& c = rig.connect("unix");
  c.queue(client_hello());
  rig.settle();
  REQUIRE(rig.dispatcher().num_sessions() == 1);

  v1::ClientMessage a, b, frees;
  for (uint64_t id = 1; id <= 20; ++id)  // sent at once: fills the worker's window
    *a.mutable_batch()->add_instrs() =
        instr(OpId::k_ones, id, {}, make_shape_dtype(Shape{4}, DType::kFloat32));
  for (uint64_t id = 21; id <= 40; ++id)  // waits in the scheduler for an ack
    *b.mutable_batch()->add_instrs() = instr(OpId::k_neg, id, {id - 20});
  for (uint64_t id = 1; id <= 40; ++id) frees.mutable_batch()->add_frees(id);  // waits too
  c.queue(a);
  c.queue(b);
  c.queue(frees);
  c.shutdown_write();  // and hangs up before the worker acknowledged anything
  rig.settle();

  CHECK(rig.dispatcher().num_sessions() == 0);
  CHECK(w.tensors() == 0);
  CHECK(w.allocated_bytes() == 0);
}

TEST_CASE("an op whose first input is poisoned and whose second is not inherits the poison",
          "[fuzz][dispatcher]") {
  // fuzz_handshake / fuzz_client_batch: resolving inputs compared every input's worker with
  // the first input's, and a poisoned first input has no placement (workers[0] of an empty
  // vector).
  init();
  DispatcherRig rig(dispatcher::DispatcherOptions{});
  FakeWorker& w = rig.add_worker(/*execute=*/true, "", 4u << 20);
  rig.settle();
  REQUIRE(w.welcomed());
  Peer& c = rig.connect("unix");
  c.queue(client_hello());
  rig.settle();
  REQUIRE(rig.dispatcher().num_sessions() == 1);

  v1::ClientMessage m;
  auto* b = m.mutable_batch();
  *b->add_instrs() = instr(OpId::k_ones, 1, {}, make_shape_dtype(Shape{4}, DType::kFloat32));
  *b->add_instrs() = instr(OpId::k_neg, 2, {999});  // poisoned: unknown id
  *b->add_instrs() = instr(OpId::k_add, 3, {2, 1});  // poisoned first input, healthy second
  *b->add_instrs() = instr(OpId::k_copy_, 0, {2, 1});  // in place into a poisoned tensor
  auto* sync = b->add_requests();
  sync->set_request_id(1);
  sync->set_kind(v1::Request::SYNC);
  auto* fetch = b->add_requests();
  fetch->set_request_id(2);
  fetch->set_kind(v1::Request::FETCH);
  fetch->set_id(3);
  c.keep_frames();
  c.queue(m);
  rig.settle();
  // One error (the unknown id) at the sync; the fetch of 3 fails with that same error.
  std::map<uint64_t, v1::Reply> replies;
  while (auto f = c.next_frame()) {
    v1::ServerMessage r;
    REQUIRE(r.ParseFromString(*f));
    if (r.has_reply()) replies[r.reply().request_id()] = r.reply();
  }
  REQUIRE(replies.count(1));
  REQUIRE(replies[1].errors_size() == 1);
  CHECK(replies[1].errors(0).message().find("unknown tensor id 999") != std::string::npos);
  REQUIRE(replies.count(2));
  REQUIRE(replies[2].errors_size() == 1);
  CHECK(replies[2].errors(0).message().find("unknown tensor id 999") != std::string::npos);
  c.shutdown_write();
  rig.settle();
  CHECK(rig.dispatcher().num_sessions() == 0);
  CHECK(w.tensors() == 0);
}

TEST_CASE("inputs the fuzzers crashed with replay cleanly", "[fuzz]") {
  init();
  const std::filesystem::path root = GT_FUZZ_CORPUS_DIR;
  int replayed = 0;
  for (const char* target :
       {"frame_codec", "handshake", "client_batch", "worker_batch", "reply_payload"}) {
    const auto dir = root / target;
    if (!std::filesystem::exists(dir)) continue;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().filename().string().rfind("regress-", 0) != 0) continue;
      INFO(e.path().string());
      const std::string input = read_file(e.path());
      const std::string t = target;
      // The harnesses abort on a broken invariant, so a regression fails this test loudly.
      if (t == "frame_codec") run_frame_codec(input);
      else if (t == "handshake") run_handshake(input);
      else if (t == "client_batch") run_client_batch(input);
      else if (t == "reply_payload") run_reply_payload(input);
      else run_worker_batch(input);
      ++replayed;
    }
  }
  CHECK(replayed > 0);
}

TEST_CASE("the reply-payload harness holds on its seeds, every prefix cut and corruptions",
          "[fuzz]") {
  // What fuzz_reply_payload checks (tests/fuzz/reply_payload_target.cpp), run here on its seeds
  // with every byte-0 variant (envelope, prefix cut) and single-byte corruptions, so plain ctest
  // exercises the harness and the scanner's invariants without clang.
  init();
  std::mt19937 rng(15);
  int runs = 0;
  int found = 0;
  for (const auto& [name, seed] : reply_payload_seeds()) {
    INFO(name);
    const std::string_view body = std::string_view(seed).substr(1);
    auto scan = scan_reply_payload(body, body.size(),
                                   (seed[0] & 1) ? kWorkerReplyField : kServerReplyField);
    if (scan.is_ok() && scan->state == ReplyScan::kFound) ++found;
    for (int b0 = 0; b0 < 128; ++b0) {
      std::string input = seed;
      input[0] = static_cast<char>((seed[0] & 1) | (b0 << 1));
      run_reply_payload(input);
      for (int k = 0; k < 20 && input.size() > 1; ++k) {
        std::string bad = input;
        bad[1 + rng() % (bad.size() - 1)] = static_cast<char>(rng());
        run_reply_payload(bad);
        ++runs;
      }
    }
  }
  CHECK(found == 2);  // the two fetch replies reach the deep checks
  CHECK(runs > 5000);
}

TEST_CASE("the worker-batch harness holds on the hot-path seed and on corruptions of it",
          "[fuzz][hot]") {
  // Hot-path definitions and runs (issue 11) from a dispatcher gone wrong: the seed (a chain,
  // an upload, frees, an unknown path, a short run, a forget) and single-byte corruptions of
  // it. The harness aborts on a crash, and on any byte left allocated after the executor.
  init();
  const std::string seed = read_file(std::filesystem::path(GT_FUZZ_CORPUS_DIR) / "worker_batch" /
                                     "hot_paths");
  REQUIRE(seed.size() > 64);
  run_worker_batch(seed);
  std::mt19937 rng(11);
  for (int k = 0; k < 400; ++k) {
    std::string bad = seed;
    for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips)
      bad[rng() % bad.size()] = static_cast<char>(rng());
    run_worker_batch(bad);
  }
}

TEST_CASE("the client-batch harness holds on the hot-path, signal and shared-memory seeds",
          "[fuzz][hot]") {
  // What newer clients send (tests/fuzz/make_seeds.cpp): a loop whose step the dispatcher finds
  // and replays (by reference where the instruction log is off), a `compile: true` scope (a path at first sight) beside a `compile: false` one,
  // and shared-memory regions named with no arena. Every mode (raw frames or protos, executing
  // worker or not, quota'd TCP user or admin), then corruptions of the executing variants: the
  // harness aborts on a crash, a stalled drain or a tensor left on the worker.
  init();
  std::mt19937 rng(16);
  for (const char* name : {"hot_loop", "hot_loop_split", "compile_scope", "shm_no_arena"}) {
    // (modes 8-15, without the instruction log, replay the paths by reference)
    for (int mode = 0; mode < (std::string(name) == "shm_no_arena" ? 8 : 16); ++mode) {
      const std::string file = std::string(name) + "_m" + std::to_string(mode);
      INFO(file);
      const std::string seed =
          read_file(std::filesystem::path(GT_FUZZ_CORPUS_DIR) / "client_batch" / file);
      REQUIRE(seed.size() > 16);
      run_client_batch(seed);
      if (!(mode & 2)) continue;  // corruptions where the worker executes
      for (int k = 0; k < 25; ++k) {
        std::string bad = seed;
        for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips)
          bad[1 + rng() % (bad.size() - 1)] = static_cast<char>(rng());
        run_client_batch(bad);
      }
    }
  }
}
