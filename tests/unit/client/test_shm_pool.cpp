// The client's shared-memory arena pool (libgtclient/session_shm_pool.h): regions page-aligned
// and reused once released (merged with their neighbours), larger arenas made (and handed out
// for registering) when the newest is full, old ones unmapped with their last region, and the
// limits: bytes of all live arenas, and at most kMaxLiveArenas of them.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstring>
#include <vector>

#include "libgtclient/session_shm_pool.h"

using gt::detail::ShmArenaPool;
using gt::detail::ShmRegion;

constexpr uint64_t kMiB = 1 << 20;

TEST_CASE("regions are page-aligned, distinct, reused and merged when released", "[shm]") {
  ShmArenaPool pool(1ull << 30);  // the default first arena (64 MiB)
  ShmArenaPool::NewArena made;
  auto a = pool.allocate(1000, &made);
  REQUIRE(a);
  REQUIRE(made.fd.valid());  // the first region makes the first arena, to be registered
  CHECK(made.generation == 1);
  CHECK(made.bytes == ShmArenaPool::kMinArenaBytes);
  struct stat st{};
  REQUIRE(::fstat(made.fd.get(), &st) == 0);
  CHECK(static_cast<uint64_t>(st.st_size) == made.bytes);
  CHECK(a->offset() == 0);
  CHECK(a->bytes() == 4096);
  ShmArenaPool::NewArena none;
  auto b = pool.allocate(5000, &none);
  auto c = pool.allocate(4096, &none);
  CHECK_FALSE(none.fd.valid());  // room in the same arena
  CHECK(b->offset() == 4096);
  CHECK(b->bytes() == 8192);
  CHECK(c->offset() == 12288);
  std::memset(a->data(), 1, 1000);
  std::memset(b->data(), 2, 5000);
  CHECK(a->data()[999] == 1);
  CHECK(b->data()[0] == 2);
  // a and b released: their ranges merge, and a region of both fits there again.
  a.reset();
  b.reset();
  auto d = pool.allocate(12288, &none);
  CHECK(d->offset() == 0);
  c.reset();
  d.reset();
  auto whole = pool.allocate(ShmArenaPool::kMinArenaBytes, &none);
  CHECK_FALSE(none.fd.valid());  // everything merged back into one range
  CHECK(whole->offset() == 0);
}

TEST_CASE("a full arena is replaced by a larger one, old arenas go with their last region", "[shm]") {
  ShmArenaPool pool(1ull << 30, kMiB);
  ShmArenaPool::NewArena m1, m2, m3;
  auto held = pool.allocate(600 << 10, &m1);
  CHECK(m1.bytes == kMiB);
  auto second = pool.allocate(600 << 10, &m2);  // does not fit what is left: a new arena
  REQUIRE(second);
  REQUIRE(m2.fd.valid());
  CHECK(m2.generation == 2);
  CHECK(m2.bytes == 2 * kMiB);
  CHECK(second->generation() == 2);
  CHECK(pool.live_arenas() == 2);
  held.reset();  // arena 1 had only this region left: unmapped
  CHECK(pool.live_arenas() == 1);
  CHECK(pool.live_bytes() == m2.bytes);
  auto big = pool.allocate(5 * kMiB, &m3);  // larger than twice the last: sized to fit
  REQUIRE(big);
  CHECK(m3.bytes == 8 * kMiB);
}

TEST_CASE("the pool stays within its byte limit and its arena count", "[shm]") {
  ShmArenaPool pool(16 * kMiB, kMiB);
  ShmArenaPool::NewArena m;
  CHECK_FALSE(pool.allocate(16 * kMiB + 1, &m));  // larger than any arena may be
  std::vector<std::shared_ptr<ShmRegion>> held;
  for (uint64_t want : {kMiB, 2 * kMiB, 4 * kMiB}) {  // each fills its arena: 1 + 2 + 4 MiB
    ShmArenaPool::NewArena mi;
    held.push_back(pool.allocate(want, &mi));
    REQUIRE(held.back());
    CHECK(mi.bytes == want);
  }
  CHECK(pool.live_bytes() == 7 * kMiB);
  ShmArenaPool::NewArena over;
  CHECK_FALSE(pool.allocate(10 * kMiB, &over));  // 8 MiB wanted, 9 MiB of room: 10 does not fit
  auto fits = pool.allocate(9 * kMiB, &over);  // the rest of the limit
  REQUIRE(fits);
  CHECK(over.bytes == 9 * kMiB);
  CHECK(pool.live_bytes() == 16 * kMiB);
  fits.reset();
  held.clear();
  CHECK(pool.live_bytes() == 9 * kMiB);  // the newest arena is kept for the next fetch

  // Arenas held alive by their regions count too: at most kMaxLiveArenas.
  ShmArenaPool many(1ull << 40, 64 << 10);
  std::vector<std::shared_ptr<ShmRegion>> pinned;
  uint64_t want = 64 << 10;
  for (uint32_t i = 0; i < ShmArenaPool::kMaxLiveArenas; ++i, want *= 2) {
    ShmArenaPool::NewArena mi;
    pinned.push_back(many.allocate(want, &mi));  // fills the new arena (twice the last)
    REQUIRE(pinned.back());
    REQUIRE(mi.fd.valid());
  }
  CHECK(many.live_arenas() == ShmArenaPool::kMaxLiveArenas);
  ShmArenaPool::NewArena ninth;
  CHECK_FALSE(many.allocate(4096, &ninth));
  pinned.erase(pinned.begin());
  CHECK(many.live_arenas() == ShmArenaPool::kMaxLiveArenas - 1);
  CHECK(many.allocate(4096, &ninth));
}
