// The shared-memory transport for fetches (issue 15, libgtcore/shm_arena.h) against real daemons:
// a client on the Unix socket registers a sealed memfd, the worker writes large fetches into it
// and only headers cross the sockets. Checked here:
//   - fetches of several dtypes and sizes (below the threshold, one chunk, several) come back
//     byte-exact through it, and their payload does not cross the dispatcher;
//   - results handed out in place (fetch_shared) stay intact while later fetches reuse and grow
//     the arena, and threads fetching at once each get their own values;
//   - a client over TCP, and one with GT_SHM=0, still get their fetches over the socket;
//   - large uploads go the other way through it (the worker reads the payload in place and
//     releases its region), also inside a sharding scope (the dispatcher copies them out), and
//     a hostile client's upload regions fail that upload only;
//   - a hostile client's arenas (no descriptor, not a memfd, unsealed, the wrong size, too big,
//     a stale generation, too many descriptors) are refused with a clear reason, a region that
//     does not hold the value or an arena the worker cannot map falls back to the socket, and
//     the dispatcher goes on serving everyone else.
#include <catch2/catch.hpp>
#include <gt/gt.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "daemons.h"
#include "instr_builder.h"
#include "libgtclient/session.h"
#include "libgtclient/session_remote.h"
#include "libgtcore/shm_arena.h"
#include "proto/status.pb.h"
#include "raw_client.h"

using namespace gt;
using namespace gt::testing;

namespace {

// The process-wide session (gt::connect) is the Unix socket's: it uses shared memory.
Daemons& daemons() {
  static Daemons d(DaemonOptions{1});
  static bool ready = [] {
    gt::connect(d.unix_address());
    return true;
  }();
  (void)ready;
  return d;
}

std::string random_bytes(size_t n, uint32_t seed, bool bools = false) {
  std::mt19937 rng(seed);
  std::string b(n, '\0');
  for (char& c : b) c = static_cast<char>(bools ? (rng() & 1) : rng());
  return b;
}

v1::DispatcherStats dispatcher_stats() {
  RawClient c(daemons().address());
  REQUIRE(c.hello().kind_case() == v1::ServerMessage::kWelcome);
  return c.request(v1::Request::STATS).dispatcher();
}

// Bytes the workers sent the dispatcher so far (what crossed the worker -> dispatcher socket).
uint64_t bytes_from_workers() { return dispatcher_stats().bytes_from_workers(); }
// Bytes the dispatcher sent the workers so far.
uint64_t bytes_to_workers() { return dispatcher_stats().bytes_to_workers(); }

// A raw client on the Unix socket, welcomed.
struct LocalRaw {
  RawClient c{daemons().unix_address()};
  v1::Welcome welcome;
  LocalRaw() {
    auto m = c.hello();
    REQUIRE(m.kind_case() == v1::ServerMessage::kWelcome);
    welcome = m.welcome();
  }
};

v1::ClientMessage arena_message(uint64_t generation, uint64_t bytes) {
  v1::ClientMessage m;
  m.mutable_shm_arena()->set_generation(generation);
  m.mutable_shm_arena()->set_bytes(bytes);
  return m;
}

// The refusal the dispatcher answers `m` (with `fds`) with; "" when it did not refuse.
std::string refusal_for(const v1::ClientMessage& m, const std::vector<int>& fds) {
  LocalRaw r;
  r.c.send_with_fds(m, fds);
  auto reply = r.c.read(5000);
  if (!reply || reply->kind_case() != v1::ServerMessage::kRefusal) return "";
  return reply->refusal().reason();
}

// The other sessions are served meanwhile.
void others_are_served() {
  RawClient c(daemons().address());
  REQUIRE(c.hello().kind_case() == v1::ServerMessage::kWelcome);
  c.send(batch_of({from_floats(1, {1, 2, 3, 4}, Shape{{4}})}));
  CHECK(floats_of(c.request(v1::Request::FETCH, 1)) == std::vector<float>{1, 2, 3, 4});
}

// A memfd of `bytes`, optionally sealed and faulted in.
UniqueFd memfd(uint64_t bytes, bool seal, bool touch) {
  UniqueFd fd(::memfd_create("test-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  REQUIRE(fd.valid());
  REQUIRE(::ftruncate(fd.get(), static_cast<off_t>(bytes)) == 0);
  if (touch) REQUIRE(::fallocate(fd.get(), 0, 0, static_cast<off_t>(bytes)) == 0);
  if (seal) REQUIRE(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
  return fd;
}

}  // namespace

TEST_CASE("large fetches from a local client come through shared memory, byte-exact",
          "[shm]") {
  daemons();
  // Below the 256 KiB threshold, at it, one 8 MiB chunk and a bit, three chunks.
  const std::vector<int64_t> floats = {1000, 65536, (8 << 20) / 4 + 5, (20 << 20) / 4 + 3};
  uint32_t seed = 1;
  uint64_t large = 0;
  const uint64_t before = bytes_from_workers();
  for (int64_t n : floats) {
    INFO(n << " float32");
    const std::string bytes = random_bytes(static_cast<size_t>(n) * 4, seed++);
    gt::Tensor t = gt::from_bytes({n}, kFloat32, bytes);
    CHECK(t.to_bytes() == bytes);
    std::vector<float> v = t.to_vector<float>();
    CHECK(std::memcmp(v.data(), bytes.data(), bytes.size()) == 0);
    std::shared_ptr<const char> in_place = gt::detail::fetch_shared(t);
    CHECK(std::memcmp(in_place.get(), bytes.data(), bytes.size()) == 0);
    if (bytes.size() >= (256u << 10)) large += 3 * bytes.size();
  }
  for (DType dt : {kInt64, kBool, kFloat16}) {
    INFO(dtype_name(dt));
    const int64_t n = (3 << 20) / static_cast<int64_t>(dtype_size(dt)) + 1;
    const std::string bytes = random_bytes(static_cast<size_t>(n) * dtype_size(dt), seed++, dt == kBool);
    gt::Tensor t = gt::from_bytes({n / 2, 2}, dt, bytes.substr(0, static_cast<size_t>(n / 2 * 2) * dtype_size(dt)));
    const std::string want = bytes.substr(0, static_cast<size_t>(n / 2 * 2) * dtype_size(dt));
    CHECK(t.to_bytes() == want);
    large += want.size();
  }
  // Computed results too (a matmul's output, fetched twice).
  gt::Tensor a = gt::randn({512, 512}), b = gt::randn({512, 512});
  gt::Tensor c = gt::matmul(a, b);
  std::vector<float> c1 = c.to_vector<float>(), c2 = c.to_vector<float>();
  CHECK(c1 == c2);
  std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>();
  double ref = 0;
  for (int k = 0; k < 512; ++k) ref += static_cast<double>(av[7 * 512 + k]) * bv[k * 512 + 3];
  CHECK(std::abs(c1[7 * 512 + 3] - ref) < 1e-3);
  // What crossed the worker's socket: headers and small fetches, not the large payloads.
  const uint64_t crossed = bytes_from_workers() - before;
  INFO("large payload bytes " << large << ", bytes from workers " << crossed);
  CHECK(crossed < large / 20);
}

TEST_CASE("results held in place survive later fetches, the arena grows, threads", "[shm]") {
  daemons();
  // 40 MiB each: the first arena (64 MiB) holds one, the rest make it grow while they are held.
  std::vector<std::string> want;
  std::vector<std::shared_ptr<const char>> held;
  for (uint32_t i = 0; i < 4; ++i) {
    want.push_back(random_bytes(40u << 20, 100 + i));
    gt::Tensor t = gt::from_bytes({static_cast<int64_t>(want.back().size())}, kUInt8, want.back());
    held.push_back(gt::detail::fetch_shared(t));
  }
  for (int round = 0; round < 3; ++round) {  // reuse what the dropped ones give back
    gt::Tensor t = gt::full({1 << 20}, static_cast<double>(round), kFloat32);
    std::vector<float> v = t.to_vector<float>();
    CHECK(v.front() == static_cast<float>(round));
    CHECK(v.back() == static_cast<float>(round));
  }
  for (size_t i = 0; i < held.size(); ++i)
    CHECK(std::memcmp(held[i].get(), want[i].data(), want[i].size()) == 0);
  held.clear();

  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([k, &bad] {
      for (int i = 0; i < 20; ++i) {
        const float x = static_cast<float>(k * 1000 + i);
        gt::Tensor t = gt::full({(1 << 20) + k}, x, kFloat32);
        std::vector<float> v = t.to_vector<float>();
        if (v.size() != static_cast<size_t>((1 << 20) + k) || v.front() != x || v.back() != x ||
            v[v.size() / 2] != x)
          ++bad;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(bad == 0);
}

TEST_CASE("without shared memory (TCP, GT_SHM=0) fetches come over the socket", "[shm]") {
  const std::string bytes = random_bytes(3u << 20, 7);
  for (int variant = 0; variant < 3; ++variant) {
    INFO((variant == 0 ? "TCP" : variant == 1 ? "GT_SHM=0" : "Unix socket"));
    if (variant == 1) ::setenv("GT_SHM", "0", 1);
    detail::RemoteSession s(variant == 0 ? daemons().address() : daemons().unix_address(), nullptr);
    ::unsetenv("GT_SHM");
    OpAttrs a = make_shape_dtype(Shape{{static_cast<int64_t>(bytes.size())}}, DType::kUInt8);
    a.data = bytes;
    const uint64_t id = s.emit(OpId::k_from_host, a, {});
    s.synchronize();
    const uint64_t before = bytes_from_workers();
    std::string got(bytes.size(), '\0');
    s.fetch_into(id, TensorMeta{Shape{{static_cast<int64_t>(bytes.size())}}, DType::kUInt8}, got.data());
    CHECK(got == bytes);
    const uint64_t crossed = bytes_from_workers() - before;
    if (variant < 2) CHECK(crossed >= bytes.size());
    else CHECK(crossed < bytes.size() / 20);  // the same session shape, through shared memory
  }
}

TEST_CASE("a client's bad arenas are refused, bad regions fall back to the socket", "[shm][hostile]") {
  daemons();
  SECTION("the dispatcher offers the transport on the Unix socket only") {
    LocalRaw local;
    CHECK(local.welcome.shm_arena_max_bytes() > 0);
    RawClient tcp(daemons().address());
    CHECK(tcp.hello().welcome().shm_arena_max_bytes() == 0);
  }
  SECTION("refusals") {
    const uint64_t mb = 1 << 20;
    CHECK_THAT(refusal_for(arena_message(1, mb), {}), Catch::Contains("without its file descriptor"));
    int pipefd[2];
    REQUIRE(::pipe(pipefd) == 0);
    CHECK_THAT(refusal_for(arena_message(1, mb), {pipefd[0]}), Catch::Contains("not a memory file"));
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    UniqueFd unsealed = memfd(mb, false, true);
    CHECK_THAT(refusal_for(arena_message(1, mb), {unsealed.get()}),
               Catch::Contains("not a memfd sealed against shrinking"));
    UniqueFd sealed = memfd(mb, true, true);
    CHECK_THAT(refusal_for(arena_message(1, 2 * mb), {sealed.get()}),
               Catch::Contains("bytes where 2097152 were declared"));
    CHECK_THAT(refusal_for(arena_message(1, 1ull << 50), {sealed.get()}),
               Catch::Contains("this dispatcher takes 1 to"));
    CHECK_THAT(refusal_for(arena_message(0, mb), {sealed.get()}),
               Catch::Contains("generation 0 after 0"));
    // More descriptors than may wait (4), with no frame claiming them: the connection is cut.
    LocalRaw flood;
    v1::ClientMessage empty;
    empty.mutable_batch();
    flood.c.send_with_fds(empty, {sealed.get(), sealed.get(), sealed.get()});
    flood.c.send_with_fds(empty, {sealed.get(), sealed.get()});
    CHECK(flood.c.closed_by_peer(5000));
    // Over TCP an arena message is refused (no descriptor can come with it).
    RawClient tcp(daemons().address());
    REQUIRE(tcp.hello().kind_case() == v1::ServerMessage::kWelcome);
    tcp.send(arena_message(1, mb));
    auto r = tcp.read(5000);
    REQUIRE(r);
    CHECK_THAT(r->refusal().reason(), Catch::Contains("only on the Unix socket"));
    others_are_served();
    CHECK(daemons().dispatcher_alive());
  }
  SECTION("regions: written in place when they hold the value, else over the socket") {
    const uint64_t arena_bytes = 4 << 20;
    auto file = create_shm_arena(arena_bytes);
    REQUIRE(file.is_ok());
    LocalRaw r;
    r.c.send_with_fds(arena_message(5, arena_bytes), {file->fd.get()});
    std::vector<float> values(1 << 18);  // 1 MiB
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
    r.c.send(batch_of({from_floats(1, values, Shape{{static_cast<int64_t>(values.size())}})}));
    auto fetch = [&](uint64_t generation, uint64_t offset, uint64_t bytes) {
      v1::ClientMessage m;
      auto* q = m.mutable_batch()->add_requests();
      q->set_request_id(77);
      q->set_kind(v1::Request::FETCH);
      q->set_id(1);
      q->mutable_shm()->set_generation(generation);
      q->mutable_shm()->set_offset(offset);
      q->mutable_shm()->set_bytes(bytes);
      r.c.send(m);
      std::string got;
      uint64_t in_shm = 0;
      while (auto reply = r.c.read(5000)) {
        REQUIRE(reply->kind_case() == v1::ServerMessage::kReply);
        REQUIRE(reply->reply().errors_size() == 0);
        const auto& t = reply->reply().tensor();
        got += t.data();
        in_shm += t.shm_bytes();
        if (reply->reply().last()) break;
      }
      return std::make_pair(in_shm, got);
    };
    const std::string want(reinterpret_cast<const char*>(values.data()), values.size() * 4);
    auto [in_shm, got] = fetch(5, 2 << 20, 2 << 20);
    CHECK(in_shm == want.size());
    CHECK(got.empty());
    CHECK(std::memcmp(file->mapping->data() + (2 << 20), want.data(), want.size()) == 0);
    for (auto [gen, off, len] : {std::tuple<uint64_t, uint64_t, uint64_t>{5, 3 << 20, 2 << 20},
                                 {5, 0, 1 << 19}, {4, 0, 2 << 20}, {5, ~0ull - 10, 2 << 20}}) {
      INFO("generation " << gen << " offset " << off << " bytes " << len);
      auto [shm2, got2] = fetch(gen, off, len);
      CHECK(shm2 == 0);
      CHECK(got2 == want);
    }
    others_are_served();
  }
  SECTION("an arena whose memory is not allocated is not mapped by the worker") {
    const uint64_t arena_bytes = 4 << 20;
    UniqueFd sparse = memfd(arena_bytes, true, false);
    LocalRaw r;
    r.c.send_with_fds(arena_message(1, arena_bytes), {sparse.get()});
    r.c.send(batch_of({from_floats(1, std::vector<float>(1 << 18, 2.5f), Shape{{1 << 18}})}));
    v1::ClientMessage m;
    auto* q = m.mutable_batch()->add_requests();
    q->set_request_id(9);
    q->set_kind(v1::Request::FETCH);
    q->set_id(1);
    q->mutable_shm()->set_generation(1);
    q->mutable_shm()->set_bytes(1 << 20);
    r.c.send(m);
    std::string got;
    while (auto reply = r.c.read(5000)) {
      CHECK(reply->reply().tensor().shm_bytes() == 0);
      got += reply->reply().tensor().data();
      if (reply->reply().last()) break;
    }
    CHECK(got.size() == (1u << 20));
    struct stat st{};
    REQUIRE(::fstat(sparse.get(), &st) == 0);
    CHECK(st.st_blocks == 0);  // nothing of it was allocated on the client's behalf
  }
}

TEST_CASE("large uploads go through shared memory, their regions are reused", "[shm]") {
  daemons();
  uint32_t seed = 500;
  const uint64_t before = bytes_to_workers();
  uint64_t sent = 0;
  for (size_t n : {size_t{300} << 10, size_t{3} << 20, (size_t{20} << 20) + 12}) {
    INFO(n << " bytes");
    const std::string bytes = random_bytes(n, seed++);
    gt::Tensor t = gt::from_bytes({static_cast<int64_t>(n)}, kUInt8, bytes);
    CHECK(t.to_bytes() == bytes);
    sent += n;
  }
  const uint64_t crossed = bytes_to_workers() - before;
  INFO("uploaded " << sent << ", bytes to workers " << crossed);
  CHECK(crossed < sent / 20);
  // Many uploads with no SYNC between them: the regions the worker has read are reused (a
  // 64 MiB arena takes 8 MiB at a time), and every value arrives intact.
  std::vector<gt::Tensor> made;
  for (int i = 0; i < 40; ++i) {
    made.push_back(gt::from_vector<float>(std::vector<float>(2 << 20, static_cast<float>(i)), {2 << 20}));
    if (i % 8 == 7) CHECK(made.back().sum().item<float>() == static_cast<float>(i) * (2 << 20));
  }
  for (int i = 0; i < 40; i += 13) {
    std::vector<float> v = made[static_cast<size_t>(i)].to_vector<float>();
    CHECK(v.front() == static_cast<float>(i));
    CHECK(v.back() == static_cast<float>(i));
  }
  // Inside a sharding scope the dispatcher plans the upload: it copies the payload out.
  gt::register_config("shm_one", gt::SignalConfig{gt::ShardConfig{0, {0}, false}, "", false});
  const std::string bytes = random_bytes(1u << 20, 9);
  gt::Tensor t;
  {
    gt::signal::Scope scope("shm_one");
    t = gt::from_bytes({1 << 18, 4}, kUInt8, bytes);
  }
  CHECK(t.to_bytes() == bytes);
}

TEST_CASE("a hostile client's upload regions fail that upload only", "[shm][hostile]") {
  daemons();
  const uint64_t arena_bytes = 4 << 20;
  auto file = create_shm_arena(arena_bytes);
  REQUIRE(file.is_ok());
  LocalRaw r;
  r.c.send_with_fds(arena_message(3, arena_bytes), {file->fd.get()});
  const uint64_t n = 1 << 20;
  std::vector<float> values(n / 4);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  char* region = file->mapping->data() + 8192;
  std::memcpy(region, values.data(), n);
  shm_clear_released(region, n);
  auto upload = [&](uint64_t out, uint64_t generation, uint64_t offset, uint64_t bytes, OpId op) {
    OpAttrs a = make_shape_dtype(Shape{{static_cast<int64_t>(n / 4)}}, DType::kFloat32);
    v1::Instr in = make_instr(op, out, {}, a);
    in.mutable_shm()->set_generation(generation);
    in.mutable_shm()->set_offset(offset);
    in.mutable_shm()->set_bytes(bytes);
    r.c.send(batch_of({in}));
  };
  // A good one: the worker reads it in place, then releases the region.
  upload(1, 3, 8192, n, OpId::k_from_host);
  v1::Reply got = r.c.request(v1::Request::FETCH, 1);
  REQUIRE(got.errors_size() == 0);
  CHECK(floats_of(got) == values);
  r.c.request(v1::Request::SYNC);
  CHECK(shm_released(region, n));
  // Bad ones: each fails its own instruction with a clear reason.
  const std::pair<std::tuple<uint64_t, uint64_t, uint64_t, OpId>, const char*> bad[] = {
      {{3, arena_bytes - 100, n, OpId::k_from_host}, "is not inside its arena"},
      {{3, ~0ull - 4, n, OpId::k_from_host}, "is not inside its arena"},
      {{9, 0, n, OpId::k_from_host}, "which this session has not registered"},
      {{3, 8192, n, OpId::k_zeros}, "unexpected shared-memory payload"},
      {{3, 8192, 2 * n, OpId::k_from_host}, "2097152 bytes of data for a float32 [262144] tensor"},
  };
  uint64_t out = 10;
  for (const auto& [args, why] : bad) {
    const auto& [gen, off, len, op] = args;
    INFO("expecting " << why);
    upload(out, gen, off, len, op);
    v1::Reply f = r.c.request(v1::Request::FETCH, out);
    REQUIRE(f.errors_size() > 0);
    CHECK_THAT(f.errors(0).message(), Catch::Contains(why));
    ++out;
  }
  // The session goes on, and so do the others.
  upload(out, 3, 8192, n, OpId::k_from_host);
  v1::Reply again = r.c.request(v1::Request::FETCH, out);
  REQUIRE(again.errors_size() == 0);
  CHECK(floats_of(again) == values);
  others_are_served();
  CHECK(daemons().dispatcher_alive());
}

TEST_CASE("a compiled step that uploads through shared memory is replayed by reference",
          "[shm][hot]") {
  daemons();
  // Each call uploads 1 MiB (through the arena) and reduces it against w: the HotRun carries
  // the upload's region, and the worker reads it in place as eager does.
  const gt::Tensor w = gt::full({1 << 18}, 0.5, kFloat32);
  std::vector<float> host(1 << 18);
  auto step = gt::compile([&](const gt::Tensor& weights) {
    return (gt::from_vector<float>(host, {1 << 18}) * weights).sum();
  });
  const uint64_t before = bytes_to_workers();
  for (int i = 1; i <= 6; ++i) {
    for (size_t k = 0; k < host.size(); ++k) host[k] = static_cast<float>(i * (k % 8));
    // sum of i * (k % 8) * 0.5 over 2^18 elements: i * 0.5 * 28 * 2^15 (exact in float32)
    CHECK(step(w).item<float>() == static_cast<float>(i) * 0.5f * 28.0f * 32768.0f);
  }
  CHECK(bytes_to_workers() - before < (1u << 20));  // six 1 MiB uploads, none through the socket
  v1::StatusReport report;
  REQUIRE(report.ParseFromString(gt::detail::Session::get().status_report()));
  uint64_t replays = 0;
  for (const auto& s : report.sessions())
    if (s.id() == gt::detail::Session::get().session_id()) replays = s.hot_path_replays();
  CHECK(replays >= 5);  // every call after the first that defines it
}

TEST_CASE("operators see each session's arenas and the bytes that went through them", "[shm]") {
  daemons();
  auto mine = [] {
    v1::StatusReport report;
    REQUIRE(report.ParseFromString(gt::detail::Session::get().status_report()));
    for (const auto& s : report.sessions())
      if (s.id() == gt::detail::Session::get().session_id()) return s;
    FAIL("this session is not in the status report");
    return v1::SessionStatus();
  };
  const v1::SessionStatus before = mine();
  const std::string bytes = random_bytes(3u << 20, 77);
  gt::Tensor t = gt::from_bytes({static_cast<int64_t>(bytes.size())}, kUInt8, bytes);  // up
  CHECK(t.to_bytes() == bytes);  // and down
  const v1::SessionStatus after = mine();
  CHECK(after.shm_arena_bytes() >= (64u << 20));  // at least the first arena
  CHECK(after.shm_bytes() - before.shm_bytes() == 2 * bytes.size());
}
