// The CPU kernels' compute pool (workerd/cpu/compute_pool.h) and parallel_for on it: every part
// runs exactly once whoever takes it, jobs from two threads at once, a job started inside a
// part, and helpers that sleep between jobs and wake for the next.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "workerd/cpu/compute_pool.h"
#include "workerd/cpu/parallel.h"

using gt::worker::cpu::ComputePool;
using gt::worker::cpu::max_threads;
using gt::worker::cpu::parallel_for;

namespace {

// Runs `jobs` jobs of `parts` parts and checks that each part of each job ran exactly once.
void check_parts_once(int jobs, int parts) {
  ComputePool& pool = ComputePool::instance();
  std::vector<std::atomic<int>> runs(static_cast<size_t>(parts));
  for (int j = 0; j < jobs; ++j) {
    for (auto& r : runs) r.store(0);
    pool.run(parts, [&](int part) { runs[static_cast<size_t>(part)].fetch_add(1); });
    for (int p = 0; p < parts; ++p) {
      INFO("job " << j << " of " << parts << " parts, part " << p);
      REQUIRE(runs[static_cast<size_t>(p)].load() == 1);
    }
  }
}

void busy_for(std::chrono::microseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

}  // namespace

TEST_CASE("compute pool: every part of every job runs exactly once", "[cpu][pool]") {
  ComputePool& pool = ComputePool::instance();
  CHECK(pool.threads() == max_threads());
  for (int parts : {0, 1, 2, 3, 7, 64}) check_parts_once(300, parts);
}

TEST_CASE("compute pool: helpers take parts, sleeping helpers wake for the next job",
          "[cpu][pool]") {
  ComputePool& pool = ComputePool::instance();
  // Parts long enough that the caller cannot take them all before a helper wakes; up to 500 jobs
  // (~0.6 s) so that a machine busy with other tests still schedules a helper in time (the loop
  // ends at the first part a helper ran).
  auto helper_ran_a_part = [&] {
    const auto caller = std::this_thread::get_id();
    std::atomic<int> elsewhere{0};
    for (int j = 0; j < 500 && elsewhere.load() == 0; ++j)
      pool.run(pool.threads() * 2, [&](int) {
        busy_for(std::chrono::microseconds(300));
        if (std::this_thread::get_id() != caller) elsewhere.fetch_add(1);
      });
    return elsewhere.load() > 0;
  };
  if (pool.threads() >= 2) {
    CHECK(helper_ran_a_part());
    // Past the spinning and yielding phases the helpers sleep on a futex: a job must wake them.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(helper_ran_a_part());
  } else {
    WARN("one hardware thread: no helpers to check (the parts run on the caller)");
  }
  check_parts_once(20, 5);
}

TEST_CASE("compute pool: a job started inside a part runs on that thread, whole", "[cpu][pool]") {
  ComputePool& pool = ComputePool::instance();
  std::atomic<int> inner{0}, outer{0}, inner_elsewhere{0};
  pool.run(4, [&](int) {
    const auto me = std::this_thread::get_id();
    pool.run(3, [&](int) {
      if (std::this_thread::get_id() != me) inner_elsewhere.fetch_add(1);
      inner.fetch_add(1);
    });
    outer.fetch_add(1);
  });
  CHECK(outer.load() == 4);
  CHECK(inner_elsewhere.load() == 0);
  CHECK(inner.load() == 12);
}

TEST_CASE("compute pool: two threads submitting jobs at once", "[cpu][pool]") {
  std::atomic<bool> wrong{false};
  auto submitter = [&](int seed) {
    ComputePool& pool = ComputePool::instance();
    for (int j = 0; j < 400; ++j) {
      const int parts = 1 + (seed + j) % 6;
      std::vector<std::atomic<int>> runs(static_cast<size_t>(parts));
      pool.run(parts, [&](int part) { runs[static_cast<size_t>(part)].fetch_add(1); });
      for (auto& r : runs)
        if (r.load() != 1) wrong.store(true);
    }
  };
  std::thread a(submitter, 0), b(submitter, 3);
  a.join();
  b.join();
  CHECK_FALSE(wrong.load());
}

TEST_CASE("parallel_for: covers 0 to n once, in chunks of at least the grain", "[cpu][pool]") {
  for (int64_t n : {0, 1, 5, 1000, 65536, 131072, 200704, 1000003}) {
    for (int64_t grain : {1, 100, 65536}) {
      std::vector<std::atomic<uint8_t>> seen(static_cast<size_t>(n));
      std::atomic<int64_t> chunks{0}, smallest{n}, empty{0};
      parallel_for(n, grain, [&](int64_t b, int64_t e) {
        if (b >= e) empty.fetch_add(1);
        for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)].fetch_add(1);
        chunks.fetch_add(1);
        int64_t s = smallest.load();
        while (e - b < s && !smallest.compare_exchange_weak(s, e - b)) {
        }
      });
      INFO("n " << n << " grain " << grain);
      CHECK(empty.load() == 0);
      for (int64_t i = 0; i < n; ++i) REQUIRE(seen[static_cast<size_t>(i)].load() == 1);
      CHECK(chunks.load() <= max_threads());
      if (chunks.load() > 1) CHECK(smallest.load() >= grain / 2);
    }
  }
}
