// The executor on the sim device (an asynchronous accelerator simulated on the CPU): issue is
// not completion. Syncs and fetches are answered when the session's device work is done,
// without a device wait on the calling (I/O) thread and without delaying other sessions;
// uploads own their bytes; device-side errors arrive at the next sync point; a block freed by
// one session's stream is reused by another only after that work; a lost device is reported;
// a fetch into a client's shared-memory arena is written there directly (registered memory).
#include <catch2/catch.hpp>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "executor_test_util.h"
#include "libgtcore/instr_codec.h"
#include "libgtcore/shm_arena.h"
#include "require_ok.h"
#include "workerd/executor.h"
#include "workerd/sim/sim_backend.h"

using namespace gt;
using gt::test::add_request;
using gt::test::bound;
using gt::test::hot_run;
using gt::test::local;
using gt::test::path_of;
using gt::test::free_here;
using gt::test::op;
using gt::test::Outbox;
using worker::Executor;
using worker::SimBackend;
using worker::SimBackendOptions;
using Clock = std::chrono::steady_clock;

namespace {

SimBackendOptions sim_options(int64_t launch_us, int64_t kernel_us) {
  SimBackendOptions o;
  o.device.launch_us = launch_us;
  o.device.kernel_us = kernel_us;
  o.device.memory_bytes = uint64_t{256} << 20;
  return o;
}

int64_t ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

std::vector<float> floats_of(const std::vector<v1::Reply>& chunks) {
  std::string bytes;
  for (const auto& r : chunks) bytes += r.tensor().data();
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

}  // namespace

TEST_CASE("sim device: a sync is answered when the work is done, acks when it is issued",
          "[worker][sim]") {
  SimBackend backend(sim_options(0, 2000));  // 2 ms of device time per kernel
  Outbox out;
  Executor ex(backend, [&](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 1 << 20);
  ex.start();
  auto b = std::make_unique<v1::WorkerBatch>();
  b->set_session(1);
  *b->add_instrs() = op(OpId::k_full, 1, {}, make_full(Shape{64}, DType::kFloat32, 1.0));
  for (uint64_t i = 1; i <= 150; ++i)
    *b->add_instrs() = op(OpId::k_add, i + 1, {i}, make_binary_scalar(ScalarSide::kRight, 1.0, false));
  add_request(*b, 9, v1::Request::SYNC);
  const auto t0 = Clock::now();
  ex.enqueue(std::move(b));
  const auto replied = out.wait_reply(9);
  REQUIRE(replied != Clock::time_point{});
  CHECK(ms_between(t0, replied) >= 290);  // 151 kernels x 2 ms ran before the reply
  CHECK(out.last_executed_seq() == 151);  // all were acknowledged as issued
  CHECK(out.replies(9).at(0).errors_size() == 0);
  ex.stop();
}

TEST_CASE("sim device: a sync behind seconds of work blocks neither the I/O thread nor another "
          "session", "[worker][sim]") {
  SimBackend backend(sim_options(0, 10000));  // 10 ms per kernel
  Outbox out;
  Executor ex(backend, [&](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 1 << 20);
  ex.start();
  // Session 1 queues 3 s of device work.
  auto heavy = std::make_unique<v1::WorkerBatch>();
  heavy->set_session(1);
  *heavy->add_instrs() = op(OpId::k_full, 1, {}, make_full(Shape{16}, DType::kFloat32, 0.0));
  for (uint64_t i = 1; i <= 300; ++i)
    *heavy->add_instrs() = op(OpId::k_add, i + 1, {i}, make_binary_scalar(ScalarSide::kRight, 1.0, false));
  const auto t0 = Clock::now();
  ex.enqueue(std::move(heavy));
  while (out.last_executed_seq() < 301) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(ms_between(t0, Clock::now()) < 2000);  // issued long before it is done
  // Its sync, run inline as the I/O thread does for a batch without instructions, returns at
  // once: the reply comes later from the completion thread.
  v1::WorkerBatch sync;
  sync.set_session(1);
  sync.set_first_seq(301);
  add_request(sync, 100, v1::Request::SYNC);
  const auto t1 = Clock::now();
  REQUIRE(ex.try_execute_inline(sync));
  CHECK(ms_between(t1, Clock::now()) < 100);
  CHECK(out.replies(100).empty());
  // Session 2's op and fetch complete while session 1's backlog runs.
  auto light = std::make_unique<v1::WorkerBatch>();
  light->set_session(2);
  light->set_first_seq(301);
  *light->add_instrs() = op(OpId::k_full, 1000, {}, make_full(Shape{4}, DType::kFloat32, 2.5));
  add_request(*light, 200, v1::Request::FETCH, 1000);
  const auto t2 = Clock::now();
  ex.enqueue(std::move(light));
  const auto light_done = out.wait_reply(200);
  REQUIRE(light_done != Clock::time_point{});
  CHECK(ms_between(t2, light_done) < 1000);
  CHECK(floats_of(out.replies(200)) == std::vector<float>{2.5f, 2.5f, 2.5f, 2.5f});
  CHECK(out.replies(100).empty());  // session 1 is still running
  const auto heavy_done = out.wait_reply(100);
  REQUIRE(heavy_done != Clock::time_point{});
  CHECK(ms_between(t0, heavy_done) >= 2900);
  ex.stop();
}

TEST_CASE("sim device: a fetch returns what the stream computed, in order, chunk by chunk",
          "[worker][sim]") {
  SimBackend backend(sim_options(20000, 0));  // every kernel and copy starts 20 ms late
  Outbox out;
  Executor ex(backend, [&](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 1000);
  v1::WorkerBatch b;
  b.set_session(1);
  *b.add_instrs() = op(OpId::k_arange, 1, {}, make_arange(0, 1000, 1, DType::kFloat32));
  *b.add_instrs() = op(OpId::k_mul, 2, {1}, make_binary_scalar(ScalarSide::kRight, 2.0, false));
  add_request(b, 5, v1::Request::FETCH, 2);
  // In-place after the fetch: the fetch must still see the value before it.
  *b.add_instrs() = op(OpId::k_add, 3, {2}, make_binary_scalar(ScalarSide::kRight, 1.0, false));
  ex.execute(b);
  REQUIRE(out.wait_reply(5) != Clock::time_point{});
  // Wait for the last chunk.
  for (int i = 0; i < 200 && (out.replies(5).empty() || !out.replies(5).back().last()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto chunks = out.replies(5);
  REQUIRE(chunks.size() == 4);  // 4000 bytes in chunks of at most 1000
  for (size_t i = 0; i < chunks.size(); ++i) CHECK(chunks[i].tensor().offset() == i * 1000);
  auto v = floats_of(chunks);
  REQUIRE(v.size() == 1000);
  for (int i = 0; i < 1000; ++i) REQUIRE(v[i] == 2.0f * i);
  ex.stop();
}

TEST_CASE("sim device: shutdown waits for the streams of ended sessions (their host functions "
          "run before it returns)", "[worker][sim]") {
  // An ended session's stream goes once its queued work is done, from a host function on it:
  // one still queued when the backend shuts down would run after the backend is gone.
  SimBackend backend(sim_options(0, 20000));  // 20 ms per kernel
  Outbox out;
  {
    Executor ex(backend, [&](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 1 << 20);
    v1::WorkerBatch b;
    b.set_session(5);
    *b.add_instrs() = op(OpId::k_full, 1, {}, make_full(Shape{64}, DType::kFloat32, 1.0));
    for (uint64_t i = 1; i <= 4; ++i)
      *b.add_instrs() = op(OpId::k_neg, i + 1, {i});
    b.set_end_session(true);  // ~100 ms of kernels still queued when the session ends
    ex.execute(b);
  }
  REQUIRE(backend.sim().live_streams() == 1);
  backend.shutdown();
  CHECK(backend.sim().live_streams() == 0);
}

TEST_CASE("sim device: an upload owns its bytes, the instruction may go at once", "[worker][sim]") {
  SimBackend backend(sim_options(30000, 0));  // the copy runs 30 ms after it is enqueued
  Outbox out;
  Executor ex(backend, [&](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 1 << 20);
  {
    v1::WorkerBatch b;
    b.set_session(1);
    std::vector<float> vals = {1, 2, 3, 4};
    OpAttrs a = make_shape_dtype(Shape{4}, DType::kFloat32);
    std::string bytes(reinterpret_cast<const char*>(vals.data()), 16);
    a.data = bytes;
    *b.add_instrs() = op(OpId::k_from_host, 1, {}, a);
    ex.execute(b);
    // The batch (and the instruction's bytes) are overwritten and gone before the copy ran.
    auto* d = b.mutable_instrs(0);
    for (auto& c : *d->mutable_data()) c = 0x7f;
  }
  v1::WorkerBatch f;
  f.set_session(1);
  add_request(f, 2, v1::Request::FETCH, 1);
  ex.execute(f);
  REQUIRE(out.wait_reply(2) != Clock::time_point{});
  CHECK(floats_of(out.replies(2)) == std::vector<float>{1, 2, 3, 4});
  ex.stop();
}

TEST_CASE("sim device: an index out of range poisons its result on the device and is reported "
          "before the next sync completes", "[worker][sim]") {
  SimBackend backend(sim_options(0, 0));
  Outbox out;
  Executor ex(backend, [&](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 1 << 20);
  v1::WorkerBatch b;
  b.set_session(1);
  *b.add_instrs() = op(OpId::k_zeros, 1, {}, make_shape_dtype(Shape{4, 3}, DType::kFloat32));
  *b.add_instrs() = op(OpId::k_full, 2, {}, make_full(Shape{2}, DType::kInt64, 7.0));
  OpAttrs dim0;
  dim0.push_int(0);
  *b.add_instrs() = op(OpId::k_index_select, 3, {1, 2}, dim0);
  *b.add_instrs() = op(OpId::k_neg, 4, {3});  // computed from the failed result
  *b.add_instrs() = op(OpId::k_neg, 5, {1});  // independent of it
  add_request(b, 10, v1::Request::SYNC);
  ex.execute(b);
  const auto synced = out.wait_reply(10);
  REQUIRE(synced != Clock::time_point{});
  // One report, for the failed instruction's own result, sent before the sync's reply.
  auto errs = out.errors();
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].handle() == 3);
  CHECK(errs[0].error().op() == "index_select");
  CHECK(errs[0].error().origin().find("worker") != std::string::npos);
  {
    std::lock_guard<std::mutex> lk(out.mu);
    size_t error_at = 0, reply_at = 0;
    for (size_t i = 0; i < out.sent.size(); ++i) {
      if (out.sent[i].second.has_error()) error_at = i;
      if (out.sent[i].second.has_reply() && out.sent[i].second.reply().request_id() == 10)
        reply_at = i;
    }
    CHECK(error_at < reply_at);
  }
  CHECK(out.replies(10).at(0).errors_size() == 0);
  // Fetching the result or anything computed from it raises the original failure; the
  // independent tensor is fine.
  v1::WorkerBatch f;
  f.set_session(1);
  add_request(f, 11, v1::Request::FETCH, 3);
  add_request(f, 12, v1::Request::FETCH, 4);
  add_request(f, 13, v1::Request::FETCH, 5);
  ex.execute(f);
  REQUIRE(out.wait_reply(13) != Clock::time_point{});
  for (uint64_t id : {11, 12}) {
    auto r = out.replies(id);
    REQUIRE(r.size() == 1);
    REQUIRE(r[0].errors_size() == 1);
    CHECK(r[0].errors(0).op() == "index_select");
    CHECK(r[0].errors(0).message().find("7") != std::string::npos);
  }
  CHECK(out.replies(13).at(0).errors_size() == 0);
  CHECK(out.errors().size() == 1);  // dependents inherit without a new report
  ex.stop();
}

TEST_CASE("sim device: a block freed on one stream is reused by another only after that work",
          "[worker][sim]") {
  SimBackend backend(sim_options(0, 0));
  const size_t n = 4096;
  void* block = nullptr;
  {
    auto a = backend.alloc(n);
    GT_REQUIRE_OK(a.status());
    block = (*a)->data();
    // Session 1's stream writes 1s into the block 300 ms from now; the block is freed at once.
    auto s1 = backend.stream_of(1);
    GT_REQUIRE_OK(s1.status());
    GT_REQUIRE_OK(backend.allocator().use_on(block, *s1));
    GT_REQUIRE_OK(backend.sim().launch(*s1, [block, n] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      std::memset(block, 1, n);
    }));
  }
  auto b = backend.alloc(n);
  GT_REQUIRE_OK(b.status());
  REQUIRE((*b)->data() == block);  // the cached block comes back
  worker::Tensor t;
  t.meta = TensorMeta{Shape{static_cast<int64_t>(n)}, DType::kBool};
  t.storage = *b;
  t.session = 2;
  // Session 2 zeroes it: it must run after session 1's late write, or the 1s would win.
  const std::vector<unsigned char> zeros(n, 0);
  GT_REQUIRE_OK(backend.copy_from_host(t, 0, zeros.data(), n, 2));
  std::vector<unsigned char> got(n, 9);
  GT_REQUIRE_OK(backend.copy_to_host(t, 0, got.data(), n, 2));
  CHECK(got == zeros);
  CHECK(backend.allocator_stats().cross_stream_waits == 1);
}

TEST_CASE("sim device: a lost device is reported once and fails the session's sync",
          "[worker][sim]") {
  SimBackendOptions o = sim_options(0, 0);
  o.fault_after_kernels = 3;
  SimBackend backend(o);
  Outbox out;
  Executor ex(backend, [&](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 1 << 20);
  std::atomic<int> lost{0};
  ex.set_on_device_lost([&](const Status&) { ++lost; });
  v1::WorkerBatch b;
  b.set_session(1);
  for (uint64_t i = 1; i <= 5; ++i)
    *b.add_instrs() = op(OpId::k_zeros, i, {}, make_shape_dtype(Shape{4}, DType::kFloat32));
  add_request(b, 7, v1::Request::SYNC);
  ex.execute(b);
  REQUIRE(out.wait_reply(7) != Clock::time_point{});
  auto r = out.replies(7);
  REQUIRE(r.at(0).errors_size() == 1);
  CHECK(r[0].errors(0).message().find("lost") != std::string::npos);
  v1::WorkerBatch again;
  again.set_session(1);
  *again.add_instrs() = op(OpId::k_zeros, 10, {}, make_shape_dtype(Shape{4}, DType::kFloat32));
  ex.execute(again);
  // The executor checks after each batch it runs on its thread or inline; execute() is the
  // tests' direct path, so ask through an inline batch.
  v1::WorkerBatch probe;
  probe.set_session(1);
  REQUIRE(ex.try_execute_inline(probe));
  for (int i = 0; i < 100 && lost == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(lost == 1);
  ex.stop();
}

TEST_CASE("sim device: a hot path's run (upload inside) gives the eager results", "[worker][sim][hot]") {
  SimBackend backend(sim_options(20, 20));
  Outbox out;
  Executor ex(backend, [&](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 1 << 20);
  ex.start();
  // The path: u = upload [4]; y = exp(u * 2); u and u * 2 freed inside. Bindings: none.
  v1::HotPath p;
  p.set_id(1);
  *p.add_instrs() = op(OpId::k_from_host, 1, {}, make_shape_dtype(Shape{4}, DType::kFloat32));
  *p.add_instrs() = op(OpId::k_mul, 1, {0}, make_binary_scalar(ScalarSide::kRight, 2.0, false));
  *p.add_instrs() = op(OpId::k_exp, 1, {1 << 1});
  p.add_uploads(0);
  for (uint32_t k : {0u, 1u}) {
    p.add_frees(k);
    p.add_free_at(k + 2);
  }
  const std::vector<float> vals = {0.5f, -1, 2, 0};
  const std::string bytes(reinterpret_cast<const char*>(vals.data()), 16);
  v1::WorkerBatch b;
  b.set_session(1);
  *b.add_hot_define() = p;
  for (uint64_t first : {10, 20}) {  // two runs: results 12 and 22
    v1::Instr run;
    run.mutable_hot()->set_path(1);
    run.mutable_hot()->set_first_out(first);
    run.mutable_hot()->add_data(bytes);
    *b.add_instrs() = std::move(run);
  }
  // The same ops eagerly: 30 = upload, 31 = 30 * 2, 32 = exp(31).
  OpAttrs up = make_shape_dtype(Shape{4}, DType::kFloat32);
  up.data = bytes;
  *b.add_instrs() = op(OpId::k_from_host, 30, {}, up);
  *b.add_instrs() = op(OpId::k_mul, 31, {30}, make_binary_scalar(ScalarSide::kRight, 2.0, false));
  *b.add_instrs() = op(OpId::k_exp, 32, {31});
  add_request(b, 5, v1::Request::FETCH, 12);
  add_request(b, 6, v1::Request::FETCH, 22);
  add_request(b, 7, v1::Request::FETCH, 32);
  ex.enqueue(std::make_unique<v1::WorkerBatch>(std::move(b)));
  for (uint64_t r : {5, 6, 7}) REQUIRE(out.wait_reply(r) != Clock::time_point{});
  const std::vector<float> eager = floats_of(out.replies(7));
  REQUIRE(eager.size() == 4);
  CHECK(eager[0] == Approx(std::exp(1.0f)));
  CHECK(floats_of(out.replies(5)) == eager);
  CHECK(floats_of(out.replies(6)) == eager);
  CHECK(out.errors().empty());
  ex.stop();
  CHECK(ex.tensor_count() == 5);  // 12, 22, 30, 31, 32: the path's temporaries were freed
}

TEST_CASE("sim device: a fetch into a client's arena is written there by the device directly "
          "(registered memory), unregistered when the arena goes", "[worker][sim][shm]") {
  SimBackend backend(sim_options(100, 0));
  Outbox out;
  Executor ex(backend, [&](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 1 << 20);
  constexpr uint64_t kArena = uint64_t{16} << 20;
  auto arena = create_shm_arena(kArena);
  REQUIRE(arena.is_ok());
  GT_REQUIRE_OK(ex.attach_shm_arena(1, 1, kArena, UniqueFd(::dup(arena->fd.get()))));
  v1::WorkerBatch b;
  b.set_session(1);
  *b.add_instrs() = op(OpId::k_arange, 1, {}, make_arange(0, 1 << 20, 1, DType::kFloat32));  // 4 MiB
  *b.add_instrs() = op(OpId::k_mul, 2, {1}, make_binary_scalar(ScalarSide::kRight, 3.0, false));
  for (uint64_t id : {5, 6}) {  // twice: registered once
    add_request(b, id, v1::Request::FETCH, 2);
    v1::ShmTarget* to = b.mutable_requests(b.requests_size() - 1)->mutable_shm();
    to->set_generation(1);
    to->set_offset(id == 5 ? 0 : uint64_t{8} << 20);
    to->set_bytes(uint64_t{4} << 20);
  }
  ex.execute(b);
  for (uint64_t id : {5, 6}) {
    REQUIRE(out.wait_reply(id) != Clock::time_point{});
    for (int i = 0; i < 200 && (out.replies(id).empty() || !out.replies(id).back().last()); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const auto chunks = out.replies(id);
    REQUIRE(!chunks.empty());
    for (const auto& c : chunks) {
      CHECK(c.errors_size() == 0);
      CHECK(c.tensor().shm_bytes() > 0);  // in the arena, not the socket
    }
  }
  for (uint64_t base : {uint64_t{0}, uint64_t{8} << 20}) {
    const auto* v = reinterpret_cast<const float*>(arena->mapping->data() + base);
    size_t wrong = 0;
    for (int i = 0; i < (1 << 20); ++i) wrong += v[i] != 3.0f * static_cast<float>(i);
    CHECK(wrong == 0);
  }
  CHECK(backend.direct_reads() >= 2);
  CHECK(backend.staged_reads() == 0);
  CHECK(backend.sim().registered_host_bytes() == kArena);
  // The session ends: the worker's mapping goes, and with it the registration.
  v1::WorkerBatch end;
  end.set_session(1);
  end.set_end_session(true);
  ex.execute(end);
  for (int i = 0; i < 200 && backend.sim().registered_host_bytes() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(backend.sim().registered_host_bytes() == 0);
  ex.stop();
}

TEST_CASE("sim device: an upload from a client's registered arena is read by the device, and its "
          "region released once that is done", "[worker][sim][shm]") {
  SimBackend backend(sim_options(150000, 0));  // every copy and kernel starts 150 ms late
  Outbox out;
  Executor ex(backend, [&](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 1 << 20);
  constexpr uint64_t kArena = uint64_t{4} << 20;
  auto arena = create_shm_arena(kArena);
  REQUIRE(arena.is_ok());
  GT_REQUIRE_OK(ex.attach_shm_arena(1, 1, kArena, UniqueFd(::dup(arena->fd.get()))));
  // The client's region at offset 4096: 1000 floats, then the release word (cleared).
  char* region = arena->mapping->data() + 4096;
  std::vector<float> vals(1000);
  for (size_t i = 0; i < vals.size(); ++i) vals[i] = 0.5f * static_cast<float>(i) - 7;
  std::memcpy(region, vals.data(), 4000);
  shm_clear_released(region, 4000);
  v1::WorkerBatch b;
  b.set_session(1);
  v1::Instr up = op(OpId::k_from_host, 1, {}, make_shape_dtype(Shape{1000}, DType::kFloat32));
  up.mutable_shm()->set_generation(1);
  up.mutable_shm()->set_offset(4096);
  up.mutable_shm()->set_bytes(4000);
  *b.add_instrs() = up;
  ex.execute(b);
  // Issued, not done: the device has not read the region yet, so it is not the client's again.
  CHECK_FALSE(shm_released(region, 4000));
  v1::WorkerBatch f;
  f.set_session(1);
  add_request(f, 9, v1::Request::FETCH, 1);
  ex.execute(f);
  REQUIRE(out.wait_reply(9) != Clock::time_point{});
  for (int i = 0; i < 200 && !shm_released(region, 4000); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(shm_released(region, 4000));
  CHECK(floats_of(out.replies(9)) == vals);
  CHECK(out.errors().empty());
  CHECK(backend.direct_writes() == 1);  // straight from the arena, no staging buffer
  CHECK(backend.sim().registered_host_bytes() == kArena);
  ex.stop();
}

TEST_CASE("sim device: a session issues at most device_queue_ops ahead of the device, when it "
          "ends, the rest of its work is dropped, not run", "[worker][sim][pacing]") {
  SimBackend backend(sim_options(0, 20000));  // every kernel holds its stream 20 ms
  Outbox out;
  Executor ex(backend, [&](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 1 << 20);
  ex.set_device_queue_ops(8);
  ex.start();
  auto ops = [&] {
    v1::WorkerLoad l;
    ex.fill_load(&l);
    return l.ops_executed();
  };
  // Session 1: 300 kernels (6 s of device work) in one batch.
  auto a = std::make_unique<v1::WorkerBatch>();
  a->set_session(1);
  a->set_first_seq(0);
  *a->add_instrs() = op(OpId::k_full, 1, {}, make_full(Shape{4}, DType::kFloat32, 1.0));
  for (uint64_t i = 1; i < 300; ++i) *a->add_instrs() = op(OpId::k_neg, i + 1, {i});
  ex.enqueue(std::move(a));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // About 15 kernels ran in 300 ms; the session issued at most 8 beyond them (and one op more
  // at each turn), not all 300.
  const uint64_t issued = ops();
  CHECK(issued >= 8);
  CHECK(issued <= 8 + 30);
  // Another session meanwhile: its sync is answered after its own kernel, not behind session 1.
  auto b = std::make_unique<v1::WorkerBatch>();
  b->set_session(2);
  b->set_first_seq(300);
  *b->add_instrs() = op(OpId::k_full, 1, {}, make_full(Shape{4}, DType::kFloat32, 2.0));
  add_request(*b, 7, v1::Request::SYNC);
  const auto t0 = Clock::now();
  ex.enqueue(std::move(b));
  REQUIRE(out.wait_reply(7) != Clock::time_point{});
  CHECK(ms_between(t0, Clock::now()) < 1000);
  // Session 1 ends: what it had not issued is dropped; the device is idle soon after.
  auto end = std::make_unique<v1::WorkerBatch>();
  end->set_session(1);
  end->set_first_seq(301);
  end->set_end_session(true);
  add_request(*end, 8, v1::Request::SYNC);
  ex.enqueue(std::move(end));
  REQUIRE(out.wait_reply(8) != Clock::time_point{});
  CHECK(ops() < 100);  // of 300
  ex.stop();
}

TEST_CASE("sim device: a mixed-precision chain is one generated kernel, its casts in it, and "
          "an int32 head's cast runs on its own and the rest fuses", "[worker][sim][hot][fused]") {
  // Generated kernels read float16 / bfloat16 heads and write such results themselves
  // (device/fused_kernel_source.h); other dtypes' casts are ops of their own. The sim device
  // generates and compiles each chain's program as CUDA would (the first runs go op by op while
  // it compiles), then runs the CPU's fused chain in its place: results bitwise eager's.
  SimBackend backend(sim_options(0, 0));
  Outbox out;
  Executor ex(backend, [&](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 64 << 20);
  ex.start();
  uint64_t next_request = 1;
  auto run = [&](v1::WorkerBatch b) {
    b.set_session(1);
    ex.enqueue(std::make_unique<v1::WorkerBatch>(std::move(b)));
  };
  auto fetch = [&](uint64_t handle) {
    v1::WorkerBatch b;
    const uint64_t id = next_request++;
    add_request(b, id, v1::Request::FETCH, handle);
    run(std::move(b));
    REQUIRE(out.wait_reply(id) != Clock::time_point{});
    return out.fetched(id);
  };
  auto fused_ops = [&] {
    v1::WorkerLoad l;
    ex.fill_load(&l);
    return l.fused_ops();
  };
  // 1: float32 [64, 300], 2: a bias [300], 3: 40 x 1 as float16, 4: as int32.
  {
    v1::WorkerBatch b;
    *b.add_instrs() = op(OpId::k_randn, 1, {}, make_random(Shape{64, 300}, DType::kFloat32, 11, 0));
    *b.add_instrs() = op(OpId::k_randn, 2, {}, make_random(Shape{300}, DType::kFloat32, 12, 0));
    *b.add_instrs() = op(OpId::k_mul, 5, {1}, make_binary_scalar(ScalarSide::kRight, 40.0, false));
    *b.add_instrs() = op(OpId::k_cast, 3, {5}, make_cast(DType::kFloat16));
    *b.add_instrs() = op(OpId::k_cast, 4, {5}, make_cast(DType::kInt32));
    run(std::move(b));
  }
  // h.float() * 1.5 + bias, relu, .bfloat16(): eagerly from each head, and as hot path 9.
  const std::vector<v1::Instr> chain = {
      op(OpId::k_cast, 1, {bound(0)}, make_cast(DType::kFloat32)),
      op(OpId::k_mul, 1, {local(0)}, make_binary_scalar(ScalarSide::kRight, 1.5, false)),
      op(OpId::k_add, 1, {local(1), bound(1)}),
      op(OpId::k_relu, 1, {local(2)}),
      op(OpId::k_cast, 1, {local(3)}, make_cast(DType::kBFloat16))};
  v1::WorkerBatch tmp;
  for (size_t k = 0; k < chain.size(); ++k) {
    *tmp.add_instrs() = chain[k];
    if (k > 0) free_here(tmp, {local(k - 1)});
  }
  {
    v1::WorkerBatch b;
    *b.add_hot_define() = path_of(tmp, 9, 2);
    for (uint64_t head : {3, 4}) {  // eagerly into 200.. / 300..
      const uint64_t base = head == 3 ? 200 : 300;
      *b.add_instrs() = op(OpId::k_cast, base, {head}, make_cast(DType::kFloat32));
      *b.add_instrs() =
          op(OpId::k_mul, base + 1, {base}, make_binary_scalar(ScalarSide::kRight, 1.5, false));
      *b.add_instrs() = op(OpId::k_add, base + 2, {base + 1, 2});
      *b.add_instrs() = op(OpId::k_relu, base + 3, {base + 2});
      *b.add_instrs() = op(OpId::k_cast, base + 4, {base + 3}, make_cast(DType::kBFloat16));
    }
    run(std::move(b));
  }
  const std::string want16 = fetch(204).first, want32 = fetch(304).first;
  REQUIRE(want16.size() == 64 * 300 * 2);  // bfloat16
  REQUIRE(want32.size() == 64 * 300 * 2);
  CHECK(want16 != want32);  // (float16's rounding of the head shows)
  // Runs until each head's chain went through its compiled kernel (at most ~10 s).
  for (const uint64_t head : {3, 4}) {
    const uint64_t fused = head == 3 ? 5 : 4;  // int32: the head's cast on its own
    bool saw_fused = false;
    for (uint64_t i = 0; i < 500 && !saw_fused; ++i) {
      const uint64_t first = 1000 + 10 * i, before = fused_ops();
      v1::WorkerBatch b;
      *b.add_instrs() = hot_run(9, {head, 2}, first);
      run(std::move(b));
      const auto got = fetch(first + 4);
      CHECK(got.second.empty());
      CHECK(got.first == (head == 3 ? want16 : want32));  // bitwise, fused or not
      const uint64_t delta = fused_ops() - before;
      CHECK((delta == 0 || delta == fused));
      saw_fused = delta == fused;
      v1::WorkerBatch done;
      free_here(done, {first + 4});
      if (head == 4) free_here(done, {first});  // (the cast's own result, freed in the path)
      run(std::move(done));
      if (!saw_fused) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(saw_fused);
  }
  CHECK(out.errors().empty());
  ex.stop();
}
