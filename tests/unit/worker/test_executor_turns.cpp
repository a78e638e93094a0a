// The executor on the CPU backend, fed batches the way the dispatcher sends them: frees take
// effect in stream order, a session reaches only its own tensors and loses all of them at its
// end, sessions take turns (a small op is not queued behind another session's long batch), and
// acknowledgements report batches that complete out of arrival order.
#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "executor_test_util.h"
#include "libgtcore/instr_codec.h"
#include "workerd/cpu/cpu_backend.h"
#include "workerd/executor.h"

using namespace gt;
using worker::CpuBackend;
using worker::CpuBackendOptions;
using worker::Executor;
using gt::test::add_request;
using gt::test::free_here;
using gt::test::op;
using gt::test::Outbox;
using Clock = std::chrono::steady_clock;


TEST_CASE("frees apply in stream order: a loop of temporaries holds a few tensors",
          "[worker][frees]") {
  const int64_t n = 1 << 18;  // 1 MiB of float32
  CpuBackend backend(CpuBackendOptions{uint64_t{8} << 20, 1, 0});  // an 8 MiB cap
  Outbox out;
  Executor ex(backend, [&](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 1 << 20);
  v1::WorkerBatch b;
  b.set_session(1);
  uint64_t h = 1;
  // 200 iterations of `t = zeros(n) + 1` in one batch: 400 MiB made, 2 MiB live at a time.
  for (int i = 0; i < 200; ++i) {
    *b.add_instrs() = op(OpId::k_zeros, h, {}, make_shape_dtype(Shape{n}, DType::kFloat32));
    *b.add_instrs() = op(OpId::k_add, h + 1, {h}, make_binary_scalar(ScalarSide::kRight, 1.0, false));
    free_here(b, {h, h + 1});
    h += 2;
  }
  ex.execute(b);
  CHECK(out.errors().empty());
  CHECK(ex.tensor_count() == 0);
  CHECK(backend.stats().peak_bytes <= uint64_t{3} << 20);
  CHECK(ex.executed_seq() == 800);  // 400 instructions and 400 frees
}

TEST_CASE("a session reaches only its own tensors and loses all of them at its end",
          "[worker][sessions]") {
  CpuBackend backend(CpuBackendOptions{0, 1, 0});
  Outbox out;
  Executor ex(backend, [&](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 1 << 20);
  v1::WorkerBatch a;
  a.set_session(1);
  *a.add_instrs() = op(OpId::k_zeros, 1, {}, make_shape_dtype(Shape{4}, DType::kFloat32));
  *a.add_instrs() = op(OpId::k_zeros, 2, {}, make_shape_dtype(Shape{4}, DType::kFloat32));
  ex.execute(a);
  REQUIRE(ex.tensor_count() == 2);
  v1::WorkerBatch b;  // another session names session 1's handles
  b.set_session(2);
  b.set_first_seq(2);
  *b.add_instrs() = op(OpId::k_neg, 3, {1});
  free_here(b, {2});
  add_request(b, 7, v1::Request::FETCH, 1);
  ex.execute(b);
  auto errs = out.errors();
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].error().message().find("unknown tensor handle 1") != std::string::npos);
  CHECK(ex.tensor_count() == 3);  // 1 and 2 untouched, 3 poisoned
  REQUIRE(out.wait_reply(7, 1000) != Clock::time_point{});
  v1::WorkerBatch end;  // session 1 ends without freeing anything
  end.set_session(1);
  end.set_first_seq(4);
  end.set_end_session(true);
  ex.execute(end);
  CHECK(ex.tensor_count() == 1);  // only session 2's tensor is left
}

TEST_CASE("sessions take turns: a small op does not wait for another session's long batch",
          "[worker][fair]") {
  CpuBackend backend(CpuBackendOptions{0, 1, 0});
  Outbox out;
  Executor ex(backend, [&](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 1 << 20);
  ex.start();
  // Session 1: 300 chained 256² matmuls (hundreds of milliseconds on one core), then a sync.
  auto heavy = std::make_unique<v1::WorkerBatch>();
  heavy->set_session(1);
  heavy->set_first_seq(0);
  *heavy->add_instrs() = op(OpId::k_full, 1, {}, make_full(Shape{256, 256}, DType::kFloat32, 0.001));
  const int kMatmuls = 300;
  for (uint64_t i = 1; i <= kMatmuls; ++i) *heavy->add_instrs() = op(OpId::k_matmul, i + 1, {i, 1});
  add_request(*heavy, 100, v1::Request::SYNC);
  const uint64_t heavy_count = kMatmuls + 1;
  auto t0 = Clock::now();
  ex.enqueue(std::move(heavy));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the long batch is running
  auto light = std::make_unique<v1::WorkerBatch>();
  light->set_session(2);
  light->set_first_seq(heavy_count);
  *light->add_instrs() = op(OpId::k_zeros, 1000, {}, make_shape_dtype(Shape{4, 4}, DType::kFloat32));
  add_request(*light, 200, v1::Request::FETCH, 1000);
  auto t_light = Clock::now();
  ex.enqueue(std::move(light));
  auto light_done = out.wait_reply(200);
  auto heavy_done = out.wait_reply(100);
  REQUIRE(light_done != Clock::time_point{});
  REQUIRE(heavy_done != Clock::time_point{});
  double light_ms = std::chrono::duration<double, std::milli>(light_done - t_light).count();
  double heavy_ms = std::chrono::duration<double, std::milli>(heavy_done - t0).count();
  INFO("light op answered in " << light_ms << " ms; the long batch took " << heavy_ms << " ms");
  CHECK(light_done < heavy_done);
  CHECK(light_ms < 50);
  CHECK(out.errors().empty());
  // The light batch completed first, beyond the executed prefix: the ack said so, and the final
  // prefix covers both once the long batch is done.
  bool reported_ahead = false;
  {
    std::lock_guard<std::mutex> lk(out.mu);
    for (auto& [t, m] : out.sent)
      if (m.has_ack())
        for (uint64_t f : m.ack().done()) reported_ahead = reported_ahead || f == heavy_count;
  }
  CHECK(reported_ahead);
  auto deadline = Clock::now() + std::chrono::seconds(5);
  while (out.last_executed_seq() < heavy_count + 1 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(out.last_executed_seq() == heavy_count + 1);
  ex.stop();
}

TEST_CASE("acks leave in the order of their executed prefix, whichever thread sends them",
          "[worker][acks]") {
  // The executor thread acks the batches it runs and the I/O thread acks those it runs inline
  // (frees, syncs); the dispatcher ignores an ack older than one it has, so one built first
  // must be sent first. Two sessions: one's small ops queued, the other's frees run inline.
  // The executor thread's sends are slow (a socket that blocks a moment), which is when an
  // ack built after one of them could overtake it.
  CpuBackend backend(CpuBackendOptions{0, 1, 0});
  Outbox out;
  const std::thread::id io_thread = std::this_thread::get_id();
  Executor ex(
      backend,
      [&](v1::WorkerMessage&& m) {
        if (std::this_thread::get_id() != io_thread)
          std::this_thread::sleep_for(std::chrono::microseconds(20));
        out.push(std::move(m));
      },
      1 << 20);
  ex.start();
  uint64_t seq = 0, h = 1;
  int inline_runs = 0;
  for (int i = 0; i < 2000; ++i) {
    auto a = std::make_unique<v1::WorkerBatch>();
    a->set_session(1);
    a->set_first_seq(seq);
    *a->add_instrs() = op(OpId::k_zeros, h, {}, make_shape_dtype(Shape{4}, DType::kFloat32));
    free_here(*a, {h});
    seq += 2;
    ++h;
    ex.enqueue(std::move(a));
    auto b = std::make_unique<v1::WorkerBatch>();
    b->set_session(2);
    b->set_first_seq(seq);
    free_here(*b, {1000000 + static_cast<uint64_t>(i)});  // (a handle never made: a no-op free)
    seq += 1;
    // Often the executor has finished `a` by now and is sending its ack: `b` then runs here.
    std::this_thread::sleep_for(std::chrono::microseconds(i % 2 ? 5 : 40));
    if (ex.try_execute_inline(*b)) ++inline_runs;
    else ex.enqueue(std::move(b));
  }
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (ex.executed_seq() < seq && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ex.stop();
  REQUIRE(ex.executed_seq() == seq);
  INFO(inline_runs << " batches of frees ran inline");
  std::lock_guard<std::mutex> lk(out.mu);
  uint64_t last = 0;
  size_t acks = 0, behind = 0;
  for (auto& [t, m] : out.sent) {
    if (!m.has_ack()) continue;
    ++acks;
    if (m.ack().executed_seq() < last) ++behind;
    last = std::max(last, m.ack().executed_seq());
  }
  CHECK(acks > 0);
  CHECK(inline_runs > 0);
  CHECK(last == seq);
  CHECK(behind == 0);
}
