// The CPU caching allocator: size classes, reuse, the cache cap, the memory limit and
// out-of-memory behaviour, zero-byte blocks and two-thread use.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "workerd/cpu/cpu_allocator.h"
#include "libgtcore/shape_rules.h"
#include "workerd/cpu/cpu_backend.h"
#include "require_ok.h"

namespace gt::worker {
namespace {

using cpu::CpuAllocator;

TEST_CASE("cpu size classes", "[cpu][allocator]") {
  CHECK(CpuAllocator::size_class(0) == 64);
  CHECK(CpuAllocator::size_class(1) == 64);
  CHECK(CpuAllocator::size_class(64) == 64);
  CHECK(CpuAllocator::size_class(65) == 128);
  CHECK(CpuAllocator::size_class(1000) == 1024);
  CHECK(CpuAllocator::size_class(1 << 20) == 1 << 20);
  CHECK(CpuAllocator::size_class((1 << 20) + 1) == (1 << 20) + (1 << 18));  // 1.25 MiB
  CHECK(CpuAllocator::size_class(3 << 20) == 3 << 20);                      // 1.5 * 2 MiB
  CHECK(CpuAllocator::size_class((3 << 20) + 1) == 7 << 19);                // 1.75 * 2 MiB
  CHECK(CpuAllocator::size_class(size_t{1} << 62) == 0);                    // impossible
  // Never more than 25% waste above 1 MiB, never less than asked, always 64-byte multiples.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    size_t n = (rng() % (size_t{1} << 34)) + 1;
    size_t c = CpuAllocator::size_class(n);
    REQUIRE(c >= n);
    REQUIRE(c % 64 == 0);
    if (n > (1 << 20)) REQUIRE(static_cast<double>(c) <= 1.25 * static_cast<double>(n));
  }
}

TEST_CASE("cpu freed blocks are reused: reserved memory stays flat", "[cpu][allocator]") {
  CpuBackend be;
  void* first = nullptr;
  {
    auto s = be.alloc(1000);
    GT_REQUIRE_OK(s);
    first = (*s)->data();
    CHECK((*s)->bytes() == 1000);
    CHECK((*s)->capacity() == 1024);
    CHECK(reinterpret_cast<uintptr_t>(first) % 64 == 0);
    CHECK(be.stats().allocated_bytes == 1024);
  }
  CHECK(be.stats().allocated_bytes == 0);
  const uint64_t reserved = be.stats().reserved_bytes;
  CHECK(reserved == 1024);
  for (int i = 0; i < 1000; ++i) {
    auto s = be.alloc(900 + i % 100);  // the same size class
    GT_REQUIRE_OK(s);
    CHECK((*s)->data() == first);
    std::memset((*s)->data(), 0xab, (*s)->bytes());
  }
  CHECK(be.stats().reserved_bytes == reserved);
  // Several live blocks of several sizes, freed and allocated again: no growth either.
  uint64_t after_first_round = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<std::shared_ptr<Storage>> live;
    for (size_t n : {10, 100, 5000, 70000, 3000000, 100}) live.push_back(*be.alloc(n));
    if (round == 0) after_first_round = be.stats().reserved_bytes;
    CHECK(be.stats().reserved_bytes == after_first_round);
  }
  CHECK(be.stats().allocated_bytes == 0);
  auto st = be.stats();
  CHECK(st.peak_bytes >= 64 + 128 + 8192 + 131072 + (3 << 20) + 128);
  be.trim_cache();
  CHECK(be.stats().reserved_bytes == 0);
  CHECK(be.stats().peak_bytes == st.peak_bytes);
}

TEST_CASE("cpu zero-byte allocations are valid", "[cpu][allocator]") {
  CpuBackend be;
  {
    auto s = be.alloc(0);
    GT_REQUIRE_OK(s);
    CHECK((*s)->bytes() == 0);
    Tensor t{TensorMeta{Shape{0, 5}, DType::kFloat32}, *s, nullptr};
    GT_CHECK_OK(be.copy_to_host(t, 0, nullptr, 0, 0));
    // Kernels on empty tensors leave it alone.
    Tensor out{TensorMeta{Shape{0, 5}, DType::kFloat32}, *be.alloc(0), nullptr};
    std::vector<const Tensor*> ins = {&t};
    OpAttrs none;
    KernelArgs args{OpId::k_exp, none, ins, out, 0};
    GT_CHECK_OK(be.run(args));
  }
  CHECK(be.stats().allocated_bytes == 0);
}

TEST_CASE("cpu the cache is capped: twice the cap for a moment, then the cap", "[cpu][allocator]") {
  CpuAllocator a(0, 1 << 20);  // keep 1 MiB of free blocks (2 MiB for a moment)
  std::vector<CpuAllocator::Block> blocks;
  for (int i = 0; i < 12; ++i) blocks.push_back(*a.allocate(256 << 10));
  for (auto& b : blocks) a.deallocate(b.data, b.capacity);
  CHECK(a.stats().allocated_bytes == 0);
  CHECK(a.stats().reserved_bytes == 2 << 20);  // 8 of the 12 kept
  CHECK(a.cached_blocks() == 8);
  // A loop needing 8 blocks at a time reuses them all: nothing new from the system.
  for (int step = 0; step < 3; ++step) {
    blocks.clear();
    for (int i = 0; i < 8; ++i) blocks.push_back(*a.allocate(256 << 10));
    CHECK(a.cached_blocks() == 0);
    CHECK(a.stats().reserved_bytes == 2 << 20);
    for (auto& b : blocks) a.deallocate(b.data, b.capacity);
  }
  // Over the cap for longer than the overshoot: back to the cap.
  a.decay(std::chrono::steady_clock::now() + CpuAllocator::kOvershoot / 2);
  CHECK(a.cached_blocks() == 8);
  a.decay(std::chrono::steady_clock::now() + 2 * CpuAllocator::kOvershoot);
  CHECK(a.cached_blocks() == 4);
  CHECK(a.stats().reserved_bytes == 1 << 20);
  // A block larger than twice the cap is never cached.
  auto big = *a.allocate(4 << 20);
  a.deallocate(big.data, big.capacity);
  CHECK(a.stats().reserved_bytes == 1 << 20);
}

TEST_CASE("cpu out of memory is a status, and the backend keeps working", "[cpu][allocator]") {
  CpuBackendOptions o;
  o.max_memory_bytes = 1 << 20;
  CpuBackend be(o);
  std::optional<Result<std::shared_ptr<Storage>>> a = be.alloc(600 << 10);  // class: 1 MiB
  REQUIRE(a->is_ok());
  auto b = be.alloc(600 << 10);
  REQUIRE_FALSE(b.is_ok());
  CHECK(b.status().code() == Code::kResourceExhausted);
  CHECK(b.status().message().find("out of memory") != std::string::npos);
  CHECK(b.status().message().find("614400") != std::string::npos);  // the request
  CHECK(b.status().message().find("1048576") != std::string::npos); // in use / the limit
  auto huge = be.alloc(size_t{1} << 62);
  CHECK(huge.status().code() == Code::kResourceExhausted);
  a.reset();  // free the first block
  {
    auto c = be.alloc(600 << 10);  // fits again: the freed block is reused
    GT_REQUIRE_OK(c);
  }
  // Cached blocks of another size are given back to make room under the limit.
  auto d = be.alloc(300 << 10);  // 512 KiB class: 1 MiB cached + 512 KiB > limit
  GT_REQUIRE_OK(d);
  CHECK(be.stats().reserved_bytes <= o.max_memory_bytes);

  // An op whose output does not fit fails the allocation; ops that fit still run.
  Tensor x{TensorMeta{Shape{4}, DType::kFloat32}, *be.alloc(16), nullptr};
  float xs[4] = {1, 2, 3, 4};
  std::memcpy(x.storage->data(), xs, 16);
  OpAttrs at = make_shape_dtype(Shape{1 << 20}, DType::kFloat32);  // 4 MiB
  auto m = infer_meta(OpId::k_zeros, {}, at);
  GT_REQUIRE_OK(m);
  CHECK(be.alloc(static_cast<size_t>(m->nbytes())).status().code() == Code::kResourceExhausted);
  Tensor y{TensorMeta{Shape{4}, DType::kFloat32}, *be.alloc(16), nullptr};
  std::vector<const Tensor*> ins = {&x};
  OpAttrs none;
  KernelArgs args{OpId::k_neg, none, ins, y, 0};
  GT_REQUIRE_OK(be.run(args));
  float ys[4];
  GT_REQUIRE_OK(be.copy_to_host(y, 0, ys, 16, 0));
  CHECK(ys[3] == -4.0f);
}

TEST_CASE("cpu two threads allocating and freeing", "[cpu][allocator]") {
  CpuBackend be;
  auto work = [&](unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::shared_ptr<Storage>> held;
    for (int i = 0; i < 20000; ++i) {
      if (held.size() < 16 && (rng() & 1)) {
        auto s = be.alloc(rng() % 5000);
        if (s.is_ok()) held.push_back(*s);
      } else if (!held.empty()) {
        held.erase(held.begin() + static_cast<long>(rng() % held.size()));
      }
    }
  };
  std::thread t1(work, 1), t2(work, 2);
  t1.join();
  t2.join();
  CHECK(be.stats().allocated_bytes == 0);
  CHECK(be.stats().peak_bytes > 0);
  CHECK(be.stats().peak_bytes <= 2 * 16 * 8192);  // at most 16 live blocks (<= 8 KiB) each
  be.trim_cache();
  CHECK(be.stats().reserved_bytes == 0);
}

// The host memory guard (issue item 6): a large request must fit in what the host has free plus
// the headroom, or it is refused before anything is allocated; what passes is committed.
TEST_CASE("cpu allocator: large requests the host cannot hold are refused up front",
          "[cpu][allocator][host_memory]") {
  // A fake host with 5 MiB free before this allocator holds anything (what it reserves,
  // cached blocks included, is gone from the host).
  const uint64_t host = 5 << 20;
  CpuAllocator* self = nullptr;
  int probes = 0;
  HostMemoryGuard g;
  g.large = 1 << 20;
  g.headroom = 1 << 20;
  g.available = [&]() -> std::optional<uint64_t> {
    ++probes;
    return host - self->stats().reserved_bytes;
  };
  CpuAllocator a(0, 64 << 20, g);  // no limit of its own
  self = &a;
  // 4 MiB + 1 MiB headroom do not fit: refused before allocating, saying why.
  auto big = a.allocate(4 << 20);
  REQUIRE_FALSE(big.is_ok());
  CHECK(big.status().code() == Code::kResourceExhausted);
  CHECK_THAT(big.status().message(), Catch::Contains("out of memory") &&
                                         Catch::Contains("available") &&
                                         Catch::Contains("1048576"));
  CHECK(a.stats().allocated_bytes == 0);
  CHECK(a.stats().reserved_bytes == 0);
  // 1.5 MiB fits: allocated, its pages committed (and writable).
  auto mid = a.allocate(3 << 19);
  GT_REQUIRE_OK(mid);
  std::memset(mid->data, 7, mid->capacity);
  // Small requests never ask the host.
  probes = 0;
  auto small = a.allocate(1000);
  GT_REQUIRE_OK(small);
  CHECK(probes == 0);
  a.deallocate(small->data, small->capacity);
  // With the 1.5 MiB block cached, 2 MiB fits only once the cache is given back: it is.
  a.deallocate(mid->data, mid->capacity);
  REQUIRE(a.cached_blocks() >= 1);
  auto two = a.allocate(2 << 20);
  GT_REQUIRE_OK(two);
  CHECK(a.stats().reserved_bytes == 2u << 20);
  a.deallocate(two->data, two->capacity);
  // Without a probe there is no guard: nothing is asked.
  CpuAllocator b(0, 64 << 20, HostMemoryGuard{});
  auto unguarded = b.allocate(4 << 20);
  GT_REQUIRE_OK(unguarded);
  b.deallocate(unguarded->data, unguarded->capacity);
}

TEST_CASE("cpu allocator: the limit holds while another thread allocates from the system",
          "[cpu][allocator][host_memory]") {
  CpuAllocator a(8 << 20, 0, HostMemoryGuard{});
  std::vector<std::thread> ts;
  std::vector<std::optional<Result<CpuAllocator::Block>>> got(4);
  for (int i = 0; i < 4; ++i)
    ts.emplace_back([&, i] { got[i] = a.allocate(3 << 20); });  // class 3 MiB: two fit in 8
  for (auto& t : ts) t.join();
  int ok = 0;
  for (auto& r : got)
    if (r->is_ok()) ++ok;
  CHECK(ok == 2);
  CHECK(a.stats().allocated_bytes == 6u << 20);
  for (auto& r : got)
    if (r->is_ok()) a.deallocate((*r)->data, (*r)->capacity);
}

TEST_CASE("max_memory_bytes: auto, 0 (the old default, also auto) or a byte count",
          "[cpu][host_memory]") {
  CHECK_FALSE(parse_max_memory_bytes("auto")->has_value());
  CHECK_FALSE(parse_max_memory_bytes("0")->has_value());
  CHECK(**parse_max_memory_bytes("1048576") == 1048576u);
  CHECK(**parse_max_memory_bytes("1125899906842624") == uint64_t{1} << 50);
  for (const char* bad : {"", "-1", "1e9", "12 GiB", "1125899906842625", "Auto"}) {
    INFO(bad);
    auto r = parse_max_memory_bytes(bad);
    REQUIRE_FALSE(r.is_ok());
    CHECK_THAT(r.status().message(), Catch::Contains("max_memory_bytes"));
  }
  // The automatic limit leaves headroom: below the host's memory, and at least half of it.
  const uint64_t total = host_memory_total();
  REQUIRE(total > 0);
  CHECK(auto_cpu_memory_limit() < total);
  CHECK(auto_cpu_memory_limit() >= total / 2);
  CHECK(host_memory_headroom(total) >= uint64_t{1} << 30);
  CHECK(host_memory_headroom(uint64_t{100} << 30) == uint64_t{10} << 30);
  auto avail = host_memory_available();
  REQUIRE(avail.has_value());
  CHECK(*avail <= total + (uint64_t{1} << 30));
}

}  // namespace
}  // namespace gt::worker
