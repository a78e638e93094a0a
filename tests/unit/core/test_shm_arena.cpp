// Shared-memory arenas and descriptor passing (libgtcore/shm_arena.h, FramedConnection): what a
// receiver accepts as an arena, the release word of upload regions, and descriptors crossing a
// Unix socket each with its own frame however the writes coalesce.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "framed_pair.h"
#include "libgtcore/framed_connection.h"
#include "libgtcore/shm_arena.h"
#include "proto/gt.pb.h"

using namespace gt;
using Pair = gt::test::FramedPair;

namespace {

UniqueFd memfd(uint64_t bytes, int seals) {
  UniqueFd fd(::memfd_create("test", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  REQUIRE(fd.valid());
  REQUIRE(::ftruncate(fd.get(), static_cast<off_t>(bytes)) == 0);
  if (seals) REQUIRE(::fcntl(fd.get(), F_ADD_SEALS, seals) == 0);
  return fd;
}

uint64_t size_of(int fd) {
  struct stat st{};
  REQUIRE(::fstat(fd, &st) == 0);
  return static_cast<uint64_t>(st.st_size);
}


}  // namespace

TEST_CASE("an arena is accepted only as a memfd sealed against shrinking, of its size", "[shm]") {
  auto made = create_shm_arena(1 << 20);
  REQUIRE(made.is_ok());
  CHECK(check_shm_arena_fd(made->fd.get(), 1 << 20).is_ok());
  CHECK(size_of(made->fd.get()) == (1u << 20));
  CHECK(::ftruncate(made->fd.get(), 4096) != 0);  // sealed: nobody can shrink it under a mapping
  CHECK_THAT(check_shm_arena_fd(made->fd.get(), 2 << 20).message(), Catch::Contains("2097152 were declared"));
  CHECK_THAT(check_shm_arena_fd(memfd(1 << 20, 0).get(), 1 << 20).message(),
             Catch::Contains("not a memfd sealed against shrinking"));
  CHECK(check_shm_arena_fd(memfd(1 << 20, F_SEAL_SHRINK).get(), 1 << 20).is_ok());
  int p[2];
  REQUIRE(::pipe(p) == 0);
  CHECK_THAT(check_shm_arena_fd(p[0], 1 << 20).message(), Catch::Contains("not a memory file"));
  ::close(p[0]);
  ::close(p[1]);
  // Both mappings see the same bytes.
  auto other = ShmMapping::map(made->fd.get(), 1 << 20, false);
  REQUIRE(other.is_ok());
  made->mapping->data()[12345] = 77;
  CHECK((*other)->data()[12345] == 77);
}

TEST_CASE("upload regions: bounds without overflow, and the release word", "[shm]") {
  CHECK(shm_upload_region_bytes(1) == 16);
  CHECK(shm_upload_region_bytes(8) == 16);
  CHECK(shm_upload_region_bytes(9) == 24);
  CHECK(shm_upload_region_fits(0, 4096 - 8, 4096));
  CHECK_FALSE(shm_upload_region_fits(0, 4096 - 7, 4096));  // the word would end past the arena
  CHECK_FALSE(shm_upload_region_fits(8, 4096 - 8, 4096));
  CHECK_FALSE(shm_upload_region_fits(~0ull - 4, 16, 4096));
  CHECK_FALSE(shm_upload_region_fits(0, ~0ull - 3, 4096));
  alignas(8) char region[64] = {};
  shm_mark_released(region, 13);
  CHECK(shm_released(region, 13));
  CHECK(region[16] == 1);  // the word follows the payload, 8-byte aligned
  shm_clear_released(region, 13);
  CHECK_FALSE(shm_released(region, 13));
}

TEST_CASE("descriptors cross a Unix socket each with its own frame", "[shm]") {
  Pair p;
  p.b->accept_fds(8);
  std::vector<std::pair<uint64_t, uint64_t>> got;  // (generation, size of the fd that came)
  std::vector<std::string> plain;
  p.b->start(
      [&](std::string_view body) {
        v1::DispatchMessage m;
        REQUIRE(m.ParseFromArray(body.data(), static_cast<int>(body.size())));
        if (m.has_shm_arena()) {
          UniqueFd fd = p.b->take_fd();
          REQUIRE(fd.valid());
          got.emplace_back(m.shm_arena().generation(), size_of(fd.get()));
        } else {
          plain.push_back(m.refusal().reason());
        }
      },
      [](const Status&) {});
  p.a->start([](std::string_view) {}, [](const Status&) {});
  // Frames with descriptors among large ones, all queued in one turn: one write would carry
  // them all, and the socket takes a large frame in several steps.
  const int n = 12;
  for (int i = 0; i < n; ++i) {
    v1::DispatchMessage m;
    m.mutable_shm_arena()->set_generation(static_cast<uint64_t>(i));
    REQUIRE(p.a->send_with_fd(m, memfd(4096 * static_cast<uint64_t>(i + 1), 0)).is_ok());
    v1::DispatchMessage big;
    big.mutable_refusal()->set_reason(std::string((i % 3 == 0) ? (3u << 20) : 10u, 'x'));
    REQUIRE(p.a->send(big).is_ok());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (got.size() < n && std::chrono::steady_clock::now() < deadline) p.io.run_for(std::chrono::milliseconds(20));
  REQUIRE(got.size() == n);
  for (int i = 0; i < n; ++i) {
    CHECK(got[i].first == static_cast<uint64_t>(i));
    CHECK(got[i].second == 4096 * static_cast<uint64_t>(i + 1));  // its own descriptor
  }
  CHECK(plain.size() == static_cast<size_t>(n));
  CHECK_FALSE(p.b->take_fd().valid());
}

TEST_CASE("a peer that passes more descriptors than may wait is cut off", "[shm]") {
  Pair p;
  p.b->accept_fds(2);
  Status closed_with;
  bool closed = false;
  p.b->start([](std::string_view) {}, [&](const Status& s) {
    closed = true;
    closed_with = s;
  });
  UniqueFd f1 = memfd(4096, 0), f2 = memfd(4096, 0), f3 = memfd(4096, 0);
  std::string frame(8, '\0');  // an incomplete frame: nothing claims them
  REQUIRE(send_with_fds(p.a->socket().native_handle(), frame, {f1.get(), f2.get(), f3.get()}) > 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!closed && std::chrono::steady_clock::now() < deadline) p.io.run_for(std::chrono::milliseconds(20));
  REQUIRE(closed);
  CHECK_THAT(closed_with.message(), Catch::Contains("more file descriptors than expected"));
}

TEST_CASE("without accept_fds passed descriptors are dropped, and frames still arrive", "[shm]") {
  Pair p;
  int frames = 0;
  p.b->start([&](std::string_view) { ++frames; }, [](const Status&) {});
  p.a->start([](std::string_view) {}, [](const Status&) {});
  v1::DispatchMessage m;
  m.mutable_shm_arena()->set_generation(1);
  REQUIRE(p.a->send_with_fd(m, memfd(4096, 0)).is_ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (frames < 1 && std::chrono::steady_clock::now() < deadline) p.io.run_for(std::chrono::milliseconds(20));
  CHECK(frames == 1);
  CHECK_FALSE(p.b->take_fd().valid());
}
