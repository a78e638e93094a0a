// CachingAllocator (workerd/device/caching_allocator.h) on a fake device that logs every call:
// PyTorch's pool and segment sizes, splitting and coalescing, the cross-stream hand-over (an
// event recorded on the old streams and waited on by the new one, only when needed), trimming
// and retrying on out of memory, and a randomized run checked against a vector-clock model of
// the device's streams (no block is ever handed to a stream that could race its old users).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "require_ok.h"
#include "workerd/device/caching_allocator.h"

using namespace gt;
using worker::device::AllocatorStats;
using worker::device::CachingAllocator;
using worker::device::DeviceApi;
using worker::device::Event;
using worker::device::Stream;

namespace {

constexpr size_t KiB = 1024, MiB = 1024 * 1024;

using Clock = std::map<Stream, uint64_t>;  // a vector clock: the work of each stream it covers
void merge(Clock& into, const Clock& from) {
  for (auto [s, t] : from) into[s] = std::max(into[s], t);
}

struct Call {
  enum Kind { kMalloc, kFree, kRecord, kWait, kSyncEvent, kSyncStream } kind;
  void* a = nullptr;  // malloc/free: the pointer; record: the event; wait: the stream
  void* b = nullptr;  // record: the stream; wait: the event
  size_t n = 0;       // malloc: the size
  bool ok = true;     // malloc: whether it succeeded
};

// A device with `capacity` bytes that logs the calls the allocator makes and models stream
// ordering with vector clocks (events capture a stream's clock; waits merge it in). Its memory
// is one arena handed out first fit, so that addresses -- and with them the allocator's choices
// among equal fits -- are the same from run to run. The arena is 4x the capacity (address
// space, untouched), so that, as on a real device, its own fragmentation never matters.
class FakeDevice : public DeviceApi {
 public:
  explicit FakeDevice(uint64_t capacity = 256 * 1024 * 1024)
      : capacity_(capacity), arena_(static_cast<char*>(std::aligned_alloc(4096, 4 * capacity))) {
    holes_[0] = 4 * capacity;
  }
  ~FakeDevice() override { std::free(arena_); }

  std::string kind() const override { return "fake"; }
  uint64_t total_memory() const override { return capacity_; }
  Result<void*> malloc(size_t n) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!malloc_error_.is_ok()) return malloc_error_;
    const size_t pages = (n + 4095) / 4096 * 4096;
    auto hole = std::find_if(holes_.begin(), holes_.end(), [&](auto& h) { return h.second >= pages; });
    bool ok = used_ + n <= capacity_ && hole != holes_.end();
    void* p = ok ? arena_ + hole->first : nullptr;
    calls_.push_back({Call::kMalloc, p, nullptr, n, ok});
    if (!ok) return resource_exhausted("fake device full");
    if (hole->second > pages) holes_[hole->first + pages] = hole->second - pages;
    holes_.erase(hole);
    outstanding_[p] = n;
    used_ += n;
    return p;
  }
  void free(void* p) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back({Call::kFree, p});
    auto it = outstanding_.find(p);
    if (it == outstanding_.end()) {
      ++bad_frees_;
      return;
    }
    used_ -= it->second;
    size_t at = static_cast<char*>(p) - arena_, len = (it->second + 4095) / 4096 * 4096;
    outstanding_.erase(it);
    auto next = holes_.lower_bound(at);
    if (next != holes_.end() && next->first == at + len) {
      len += next->second;
      holes_.erase(next);
    }
    auto prev = holes_.lower_bound(at);
    if (prev != holes_.begin() && std::prev(prev)->first + std::prev(prev)->second == at) {
      std::prev(prev)->second += len;
    } else {
      holes_[at] = len;
    }
  }
  Result<void*> host_alloc(size_t) override { return unimplemented("fake"); }
  Result<bool> stream_idle(Stream) override { return unimplemented("fake"); }
  Status synchronize_device() override { return unimplemented("fake"); }
  void host_free(void*) override {}
  Result<Stream> create_stream() override { return unimplemented("fake"); }
  void destroy_stream(Stream) override {}
  Status synchronize_stream(Stream s) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back({Call::kSyncStream, s});
    merge(host_, clocks_[s]);
    return Status::ok();
  }
  Result<Event> create_event() override {
    std::lock_guard<std::mutex> lock(mu_);
    ++events_alive_;
    return Event(new int(0));
  }
  void destroy_event(Event e) override {
    std::lock_guard<std::mutex> lock(mu_);
    --events_alive_;
    delete static_cast<int*>(e);
  }
  Status record_event(Event e, Stream s) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back({Call::kRecord, e, s});
    captures_[e] = clocks_[s];
    return Status::ok();
  }
  Result<bool> event_done(Event) override { return true; }
  Status synchronize_event(Event e) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back({Call::kSyncEvent, e});
    merge(host_, captures_[e]);
    return Status::ok();
  }
  Status stream_wait_event(Stream s, Event e) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back({Call::kWait, s, e});
    merge(clocks_[s], captures_[e]);  // the capture as of now: a later record does not change it
    return Status::ok();
  }
  Status copy_to_device(void*, const void*, size_t, Stream) override { return Status::ok(); }
  Status copy_to_host(void*, const void*, size_t, Stream) override { return Status::ok(); }
  Status copy_on_device(void*, const void*, size_t, Stream) override { return Status::ok(); }
  Status fill_zero(void*, size_t, Stream) override { return Status::ok(); }
  Status launch_host_func(Stream, std::function<void()>) override { return Status::ok(); }
  Status sticky_error() const override { return Status::ok(); }

  // Test side: work enqueued on `s` (after everything the host has waited for); its tick.
  uint64_t work(Stream s) {
    std::lock_guard<std::mutex> lock(mu_);
    Clock& c = clocks_[s];
    merge(c, host_);
    return ++c[s];
  }
  // Whether work enqueued on `s` now runs after tick `t` of stream `u`.
  bool ordered_after(Stream s, Stream u, uint64_t t) {
    std::lock_guard<std::mutex> lock(mu_);
    Clock c = clocks_[s];
    merge(c, host_);
    return s == u || c[u] >= t;
  }
  // Work enqueued on `s` from now on runs after the work enqueued on `before` so far.
  void order(Stream s, Stream before) {
    std::lock_guard<std::mutex> lock(mu_);
    merge(clocks_[s], Clock(clocks_[before]));
  }
  // The stream's work is done and the host knows it (what forget_stream promises).
  void finish(Stream s) {
    std::lock_guard<std::mutex> lock(mu_);
    merge(host_, clocks_[s]);
  }

  std::vector<Call> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  void clear_calls() {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.clear();
  }
  size_t count(Call::Kind k) {
    auto c = calls();
    return std::count_if(c.begin(), c.end(), [k](const Call& x) { return x.kind == k && x.ok; });
  }
  std::vector<size_t> malloc_sizes() {  // the successful ones
    std::vector<size_t> sizes;
    for (const Call& c : calls())
      if (c.kind == Call::kMalloc && c.ok) sizes.push_back(c.n);
    return sizes;
  }
  uint64_t used() {
    std::lock_guard<std::mutex> lock(mu_);
    return used_;
  }
  size_t outstanding_count() {
    std::lock_guard<std::mutex> lock(mu_);
    return outstanding_.size();
  }
  // Whether [p, p + n) lies inside one outstanding device allocation.
  bool inside(const void* p, size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = outstanding_.upper_bound(const_cast<void*>(p));
    if (it == outstanding_.begin()) return false;
    --it;
    auto lo = static_cast<const char*>(it->first);
    return static_cast<const char*>(p) >= lo && static_cast<const char*>(p) + n <= lo + it->second;
  }
  int events_alive() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_alive_;
  }
  int bad_frees() {
    std::lock_guard<std::mutex> lock(mu_);
    return bad_frees_;
  }
  void set_malloc_error(Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    malloc_error_ = std::move(s);
  }

 private:
  std::mutex mu_;
  uint64_t capacity_;
  uint64_t used_ = 0;
  std::map<void*, size_t> outstanding_;
  std::vector<Call> calls_;
  std::map<Stream, Clock> clocks_;
  std::map<Event, Clock> captures_;
  Clock host_;
  int events_alive_ = 0;
  int bad_frees_ = 0;
  Status malloc_error_;
  char* arena_;
  std::map<size_t, size_t> holes_;  // free parts of the arena: offset -> length
};

int tags[4];
Stream const S1 = &tags[1], S2 = &tags[2], S3 = &tags[3];

CachingAllocator::Block must_alloc(CachingAllocator& a, size_t n, Stream s) {
  auto r = a.allocate(n, s);
  GT_REQUIRE_OK(r);
  return *r;
}

char* at(const CachingAllocator::Block& b) { return static_cast<char*>(b.data); }
// The address n bytes into b (a void*, so that Catch prints it as an address).
void* off(const CachingAllocator::Block& b, size_t n) { return at(b) + n; }

}  // namespace

TEST_CASE("round_size rounds up to a multiple of 512, at least 512") {
  CHECK(CachingAllocator::round_size(0) == 512);
  CHECK(CachingAllocator::round_size(1) == 512);
  CHECK(CachingAllocator::round_size(512) == 512);
  CHECK(CachingAllocator::round_size(513) == 1024);
  CHECK(CachingAllocator::round_size(MiB + 1) == MiB + 512);
}

TEST_CASE("the small pool carves 2 MiB segments, the large pool 20 MiB or the request's own") {
  auto first_segment = [](size_t n) {
    FakeDevice dev;
    CachingAllocator a(dev);
    must_alloc(a, n, S1);
    return dev.malloc_sizes();
  };
  CHECK(first_segment(4 * KiB) == std::vector<size_t>{2 * MiB});
  CHECK(first_segment(MiB) == std::vector<size_t>{2 * MiB});
  CHECK(first_segment(MiB + 1) == std::vector<size_t>{20 * MiB});
  CHECK(first_segment(3 * MiB) == std::vector<size_t>{20 * MiB});
  CHECK(first_segment(10 * MiB - 512) == std::vector<size_t>{20 * MiB});
  CHECK(first_segment(10 * MiB) == std::vector<size_t>{10 * MiB});
  CHECK(first_segment(12 * MiB) == std::vector<size_t>{12 * MiB});
  CHECK(first_segment(12 * MiB + 1) == std::vector<size_t>{14 * MiB});

  FakeDevice dev;
  CachingAllocator a(dev);
  must_alloc(a, 4 * KiB, S1);
  must_alloc(a, MiB, S1);  // still small: fits the same segment
  must_alloc(a, 3 * MiB, S1);
  must_alloc(a, MiB + 1, S1);  // large: the rest of the 20 MiB segment
  must_alloc(a, 12 * MiB, S1);  // the rest of it: 17 MiB - 512
  must_alloc(a, 12 * MiB + 1, S1);  // 5 MiB - 512 left there: too small
  CHECK(dev.malloc_sizes() == std::vector<size_t>{2 * MiB, 20 * MiB, 14 * MiB});
  AllocatorStats st = a.stats();
  CHECK(st.reserved_bytes == 36 * MiB);
  CHECK(st.segments == 3);
  CHECK(st.device_mallocs == 3);
  CHECK(st.live_blocks == 6);
  CHECK(st.allocated_bytes == 4 * KiB + MiB + 3 * MiB + (MiB + 512) + 12 * MiB + (12 * MiB + 512));
}

TEST_CASE("small blocks share a segment: distinct, aligned, disjoint, inside it") {
  FakeDevice dev;
  CachingAllocator a(dev);
  std::vector<char*> ptrs;
  for (int i = 0; i < 100; ++i) {
    auto b = must_alloc(a, 4 * KiB - 7, S1);
    CHECK(b.size == 4 * KiB);
    ptrs.push_back(at(b));
  }
  REQUIRE(dev.malloc_sizes().size() == 1);
  std::sort(ptrs.begin(), ptrs.end());
  for (size_t i = 0; i < ptrs.size(); ++i) {
    CHECK(reinterpret_cast<uintptr_t>(ptrs[i]) % 512 == 0);
    CHECK(dev.inside(ptrs[i], 4 * KiB));
    if (i) CHECK(ptrs[i] >= ptrs[i - 1] + 4 * KiB);
  }
  CHECK(a.stats().allocated_bytes == 100 * 4 * KiB);
  CHECK(a.stats().peak_bytes == 100 * 4 * KiB);
}

TEST_CASE("split thresholds: 512 bytes left in the small pool, more than 1 MiB in the large") {
  FakeDevice dev;
  CachingAllocator a(dev);
  auto s1 = must_alloc(a, MiB, S1);
  auto s2 = must_alloc(a, MiB - 512, S1);  // 512 bytes remain: split
  CHECK(s2.size == MiB - 512);
  CHECK(s2.data == off(s1, MiB));
  auto s3 = must_alloc(a, 1, S1);  // those 512 bytes
  CHECK(s3.data == off(s1, 2 * MiB - 512));
  auto l = must_alloc(a, 19 * MiB, S1);  // 1 MiB would remain: not split
  CHECK(l.size == 20 * MiB);
  a.deallocate(l.data);
  auto l2 = must_alloc(a, 18 * MiB + 512, S1);  // 2 MiB - 512 remain: split
  CHECK(l2.size == 18 * MiB + 512);
  auto l3 = must_alloc(a, 1536 * KiB, S1);
  CHECK(l3.data == off(l2, 18 * MiB + 512));
  CHECK(l3.size == 2 * MiB - 512);  // 512 KiB - 512 over: kept whole
  CHECK(dev.malloc_sizes() == std::vector<size_t>{2 * MiB, 20 * MiB});
}

TEST_CASE("freed neighbours coalesce: their sum fits where they were") {
  FakeDevice dev;
  CachingAllocator a(dev);
  auto A = must_alloc(a, 64 * KiB, S1), B = must_alloc(a, 64 * KiB, S1);
  auto C = must_alloc(a, 64 * KiB, S1), D = must_alloc(a, 64 * KiB, S1);  // D keeps the rest apart
  REQUIRE(at(B) == at(A) + 64 * KiB);
  REQUIRE(at(C) == at(B) + 64 * KiB);
  a.deallocate(B.data);  // then its lower and its upper neighbour
  a.deallocate(A.data);
  a.deallocate(C.data);
  auto ABC = must_alloc(a, 192 * KiB, S1);
  CHECK(ABC.data == A.data);
  CHECK(ABC.size == 192 * KiB);
  CHECK(dev.malloc_sizes().size() == 1);
  a.deallocate(D.data);
  a.deallocate(ABC.data);
  // The whole segment is one block again: the best fit for 1 MiB starts at its base (without
  // coalescing, only the block after D would be large enough).
  CHECK(must_alloc(a, MiB, S1).data == A.data);
  CHECK(dev.malloc_sizes().size() == 1);
}

TEST_CASE("sizes that only grow reuse the same memory (no size classes)") {
  FakeDevice dev;
  CachingAllocator a(dev);
  std::vector<CachingAllocator::Block> survivors;
  for (size_t r = 1; r <= 40; ++r) {
    std::vector<CachingAllocator::Block> round;
    for (size_t base : {1000, 3000, 5000, 2000}) round.push_back(must_alloc(a, base * r, S1));
    // One block per round outlives it by a round, leaving holes the next round must reuse.
    for (auto& s : survivors) a.deallocate(s.data);
    survivors = {round[1]};
    a.deallocate(round[2].data);
    a.deallocate(round[0].data);
    a.deallocate(round[3].data);
  }
  // At most ~11000 * 40 * 2 bytes (< 1 MiB) live at once: the first segment always suffices.
  CHECK(a.stats().reserved_bytes == 2 * MiB);
  CHECK(dev.malloc_sizes().size() == 1);
}

TEST_CASE("a block freed and reallocated on the same stream needs no event") {
  FakeDevice dev;
  CachingAllocator a(dev);
  auto b = must_alloc(a, 100 * KiB, S1);
  a.deallocate(b.data);
  dev.clear_calls();
  auto c = must_alloc(a, 100 * KiB, S1);
  CHECK(c.data == b.data);
  CHECK(dev.calls().empty());
  CHECK(a.stats().cross_stream_waits == 0);
}

TEST_CASE("a block freed on S1 and claimed on S2: one event on S1, S2 waits for it") {
  FakeDevice dev;
  CachingAllocator a(dev);
  auto b = must_alloc(a, 100 * KiB, S1);
  dev.clear_calls();
  a.deallocate(b.data);
  CHECK(dev.calls().empty());  // freeing records nothing
  auto c = must_alloc(a, 100 * KiB, S2);
  CHECK(c.data == b.data);
  auto calls = dev.calls();
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].kind == Call::kRecord);
  CHECK(calls[0].b == S1);
  CHECK(calls[1].kind == Call::kWait);
  CHECK(calls[1].a == S2);
  CHECK(calls[1].b == calls[0].a);  // the event just recorded
  CHECK(a.stats().cross_stream_waits == 1);
  // Now S2's: back and forth on S2 costs nothing.
  a.deallocate(c.data);
  dev.clear_calls();
  must_alloc(a, 100 * KiB, S2);
  CHECK(dev.calls().empty());
}

TEST_CASE("a stream gets its own freed block before another stream's of the same size") {
  FakeDevice dev;
  CachingAllocator a(dev);
  auto x = must_alloc(a, 64 * KiB, S1);
  auto k1 = must_alloc(a, 512, S1);
  auto y = must_alloc(a, 64 * KiB, S2);
  auto k2 = must_alloc(a, 512, S1);
  a.deallocate(x.data);
  a.deallocate(y.data);
  dev.clear_calls();
  auto for_s2 = must_alloc(a, 64 * KiB, S2);  // x is lower in memory, but S1's
  CHECK(for_s2.data == y.data);
  auto for_s1 = must_alloc(a, 64 * KiB, S1);
  CHECK(for_s1.data == x.data);
  CHECK(dev.calls().empty());
  CHECK(a.stats().cross_stream_waits == 0);
  (void)k1;
  (void)k2;
}

TEST_CASE("a block used on two streams waits for both when a third claims it") {
  FakeDevice dev;
  CachingAllocator a(dev);
  auto b = must_alloc(a, 8 * KiB, S1);
  GT_REQUIRE_OK(a.use_on(b.data, S2));
  GT_REQUIRE_OK(a.use_on(b.data, S2));
  a.deallocate(b.data);
  dev.clear_calls();
  must_alloc(a, 8 * KiB, S3);
  std::vector<Stream> recorded, waiting;
  for (const Call& c : dev.calls()) {
    if (c.kind == Call::kRecord) recorded.push_back(c.b);
    if (c.kind == Call::kWait) waiting.push_back(c.a);
  }
  std::sort(recorded.begin(), recorded.end());
  std::vector<Stream> expected{S1, S2};
  std::sort(expected.begin(), expected.end());
  CHECK(recorded == expected);
  CHECK(waiting == std::vector<Stream>{S3, S3});
  CHECK(a.stats().cross_stream_waits == 2);
}

TEST_CASE("allocate without a stream: the first use_on claims the block") {
  FakeDevice dev;
  CachingAllocator a(dev);
  // b alone between live blocks: it merges with nothing, so its streams are its own.
  auto b = must_alloc(a, 8 * KiB, S1);
  auto f1 = must_alloc(a, MiB, S1), f2 = must_alloc(a, MiB - 8 * KiB, S1);
  a.deallocate(b.data);
  dev.clear_calls();
  auto c = must_alloc(a, 8 * KiB, nullptr);
  CHECK(c.data == b.data);
  CHECK(dev.calls().empty());  // nothing known yet
  GT_REQUIRE_OK(a.use_on(c.data, S2));
  auto calls = dev.calls();
  REQUIRE(calls.size() == 2);
  CHECK((calls[0].kind == Call::kRecord && calls[0].b == S1));
  CHECK((calls[1].kind == Call::kWait && calls[1].a == S2));
  dev.clear_calls();
  GT_REQUIRE_OK(a.use_on(c.data, S3));  // claimed already: S3 only joins the streams
  GT_REQUIRE_OK(a.use_on(nullptr, S3));
  GT_REQUIRE_OK(a.use_on(&dev, S3));  // unknown
  CHECK(dev.calls().empty());
  a.deallocate(c.data);
  CHECK(must_alloc(a, 8 * KiB, S2).data == b.data);  // S3 used it too: S2 waits for S3
  calls = dev.calls();
  REQUIRE(calls.size() == 2);
  CHECK((calls[0].kind == Call::kRecord && calls[0].b == S3));
  CHECK((calls[1].kind == Call::kWait && calls[1].a == S2));
  CHECK(a.stats().cross_stream_waits == 2);
  (void)f1;
  (void)f2;
}

TEST_CASE("forget_stream: a finished stream's blocks need no wait") {
  FakeDevice dev;
  CachingAllocator a(dev);
  auto b = must_alloc(a, 8 * KiB, S1);
  a.deallocate(b.data);
  a.forget_stream(S1);
  dev.clear_calls();
  CHECK(must_alloc(a, 8 * KiB, S2).data == b.data);
  CHECK(dev.calls().empty());

  // Used on S1 and S3: forgetting S1 leaves a block that is S3's alone, preferred by S3.
  auto c = must_alloc(a, 16 * KiB, S1);
  auto keep = must_alloc(a, 512, S2);
  GT_REQUIRE_OK(a.use_on(c.data, S3));
  a.deallocate(c.data);
  a.forget_stream(S1);
  dev.clear_calls();
  CHECK(must_alloc(a, 16 * KiB, S3).data == c.data);
  CHECK(dev.calls().empty());
  (void)keep;
}

TEST_CASE("merged blocks wait for the streams of every part") {
  FakeDevice dev;
  CachingAllocator a(dev);
  auto x = must_alloc(a, 4 * KiB, S1);
  auto y = must_alloc(a, 4 * KiB, S2);
  a.deallocate(x.data);
  a.deallocate(y.data);
  dev.clear_calls();
  auto z = must_alloc(a, 8 * KiB, S3);
  CHECK(z.data == x.data);
  CHECK(dev.count(Call::kWait) == 2);
}

TEST_CASE("out of memory: wholly free segments go back to the device and the request retries") {
  FakeDevice dev(24 * MiB);
  CachingAllocator a(dev);
  auto small = must_alloc(a, MiB, S1);      // a 2 MiB segment
  auto big = must_alloc(a, 12 * MiB, S2);   // a 12 MiB segment
  a.deallocate(small.data);                 // its segment is now wholly free, pending on S1
  void* small_segment = small.data;
  dev.clear_calls();
  auto b = must_alloc(a, 10 * MiB + 512 * KiB, S2);  // a 12 MiB segment: 26 MiB > 24
  CHECK(b.size == 10 * MiB + 512 * KiB);
  AllocatorStats st = a.stats();
  CHECK(st.retries == 1);
  CHECK(st.ooms == 0);
  CHECK(st.reserved_bytes == 24 * MiB);
  auto calls = dev.calls();
  REQUIRE(calls.size() == 5);
  CHECK((calls[0].kind == Call::kMalloc && !calls[0].ok));
  CHECK((calls[1].kind == Call::kRecord && calls[1].b == S1));  // S1's work done first ...
  CHECK((calls[2].kind == Call::kSyncEvent && calls[2].a == calls[1].a));
  CHECK((calls[3].kind == Call::kFree && calls[3].a == small_segment));  // ... then released
  CHECK((calls[4].kind == Call::kMalloc && calls[4].ok && calls[4].n == 12 * MiB));

  auto r = a.allocate(100 * MiB, S2);
  REQUIRE(!r.is_ok());
  CHECK(r.status().code() == Code::kResourceExhausted);
  INFO(r.status().message());
  CHECK(r.status().message().find("104857600") != std::string::npos);
  CHECK(r.status().message().find(std::to_string(22 * MiB + 512 * KiB)) != std::string::npos);  // allocated
  CHECK(r.status().message().find(std::to_string(24 * MiB)) != std::string::npos);  // reserved
  CHECK(a.stats().ooms == 1);
  CHECK(a.stats().retries == 2);
  // Still in business: the 12 MiB block comes back to an 11 MiB request without a malloc.
  a.deallocate(big.data);
  dev.clear_calls();
  CHECK(must_alloc(a, 11 * MiB, S2).data == big.data);
  CHECK(dev.count(Call::kMalloc) == 0);
  CHECK(dev.bad_frees() == 0);
}

TEST_CASE("while a stream captures: no other stream's block, no cross-stream claim, no trim") {
  // A wait recorded into a graph waits for what its event stands for when the graph runs, and
  // the allocator re-records its pooled events: nothing crosses streams during a capture.
  FakeDevice dev(64 * MiB);
  CachingAllocator a(dev);
  // One small segment, full: S2's block (to be freed), S1's, and S3's in between and after.
  auto other = must_alloc(a, 100 * KiB, S2);
  auto sep1 = must_alloc(a, 512, S3);
  auto own = must_alloc(a, 200 * KiB, S1);
  auto sep2 = must_alloc(a, 512, S3);
  auto fill1 = must_alloc(a, MiB, S3);
  auto fill2 = must_alloc(a, 2 * MiB - MiB - 308224, S3);
  REQUIRE(a.stats().segments == 1);
  a.deallocate(other.data);  // pending on S2: the only free block of the small pool
  a.begin_capture(S1);
  dev.clear_calls();
  auto c = must_alloc(a, 100 * KiB, nullptr);  // allocated without a stream, as kernels' are
  CHECK(c.data != other.data);  // (outside a capture: S2's block, with a wait on first use)
  CHECK(dev.count(Call::kMalloc) == 1);
  GT_REQUIRE_OK(a.use_on(c.data, S1));
  a.deallocate(own.data);  // pending on S1
  auto d = must_alloc(a, 200 * KiB, nullptr);  // S1's own block is fine: stream order
  CHECK(d.data == own.data);
  GT_REQUIRE_OK(a.use_on(d.data, S1));
  CHECK(dev.count(Call::kRecord) == 0);
  CHECK(dev.count(Call::kWait) == 0);
  CHECK(a.end_capture() == false);  // nothing was refused
  CHECK(a.stats().cross_stream_waits == 0);

  // A block of S2's taken before the capture and used on S1 inside it for the first time needs
  // a wait: refused, the block left as it was, the capture spoiled.
  auto big = must_alloc(a, 12 * MiB, S2);
  a.deallocate(big.data);
  auto late = must_alloc(a, 12 * MiB, nullptr);  // not capturing: S2's block, not claimed yet
  CHECK(late.data == big.data);
  a.begin_capture(S1);
  dev.clear_calls();
  Status refused = a.use_on(late.data, S1);
  CHECK(refused.code() == Code::kFailedPrecondition);
  CHECK(dev.count(Call::kWait) == 0);
  // Out of memory while capturing: no trim (it would wait on S1), the capture is spoiled.
  const uint64_t retries = a.stats().retries;
  auto huge = a.allocate(60 * MiB, nullptr);
  CHECK(huge.status().code() == Code::kResourceExhausted);
  CHECK(a.stats().retries == retries);
  CHECK(dev.count(Call::kSyncEvent) == 0);
  CHECK(dev.count(Call::kFree) == 0);
  CHECK(a.end_capture() == true);
  CHECK(a.end_capture() == false);  // (reported once)
  // After the capture the same claim waits for S2, as always.
  GT_REQUIRE_OK(a.use_on(late.data, S1));
  CHECK(dev.count(Call::kWait) == 1);
  CHECK(a.stats().cross_stream_waits == 1);
  for (void* p : {c.data, d.data, late.data, sep1.data, sep2.data, fill1.data, fill2.data})
    a.deallocate(p);
}

TEST_CASE("max_bytes caps what is reserved, a large request settles for its own size") {
  FakeDevice dev;
  CachingAllocator a(dev, 4 * MiB);
  auto l = must_alloc(a, 1536 * KiB, S1);  // 20 MiB is over the cap: 1.5 MiB exactly
  CHECK(l.size == 1536 * KiB);
  CHECK(dev.malloc_sizes() == std::vector<size_t>{1536 * KiB});
  CHECK(a.stats().retries == 1);
  must_alloc(a, MiB, S1);
  must_alloc(a, MiB, S1);  // the same 2 MiB segment: 3.5 MiB reserved
  auto r = a.allocate(MiB, S1);
  REQUIRE(!r.is_ok());
  CHECK(r.status().code() == Code::kResourceExhausted);
  CHECK(r.status().message().find(std::to_string(4 * MiB)) != std::string::npos);
  CHECK(a.stats().reserved_bytes == 3584 * KiB);
  CHECK(dev.used() == 3584 * KiB);
  CHECK(a.stats().ooms == 1);
}

TEST_CASE("a device failure that is not out of memory is returned as it is") {
  FakeDevice dev;
  CachingAllocator a(dev);
  dev.set_malloc_error(unavailable("context lost"));
  auto r = a.allocate(KiB, S1);
  REQUIRE(!r.is_ok());
  CHECK(r.status().code() == Code::kUnavailable);
  CHECK(a.stats().ooms == 0);
}

TEST_CASE("bad requests and frees are refused or ignored, not crashes") {
  FakeDevice dev;
  CachingAllocator a(dev);
  CHECK(a.allocate(0, S1).status().code() == Code::kInvalidArgument);
  CHECK(a.allocate(~size_t{0}, S1).status().code() == Code::kResourceExhausted);
  auto b = must_alloc(a, KiB, S1);
  a.deallocate(&dev);      // unknown
  a.deallocate(nullptr);
  a.deallocate(b.data);
  a.deallocate(b.data);    // double free
  CHECK(a.stats().allocated_bytes == 0);
  CHECK(a.stats().live_blocks == 0);
  auto x = must_alloc(a, KiB, S1), y = must_alloc(a, KiB, S1);
  CHECK(x.data != y.data);  // the block was not cached twice
}

TEST_CASE("note_workspace counts device libraries' memory, never below zero") {
  FakeDevice dev;
  CachingAllocator a(dev);
  a.note_workspace(100);
  a.note_workspace(-30);
  CHECK(a.stats().workspace_bytes == 70);
  a.note_workspace(-1000);
  CHECK(a.stats().workspace_bytes == 0);
  a.note_workspace(INT64_MIN);
  CHECK(a.stats().workspace_bytes == 0);
}

TEST_CASE("the destructor gives every segment back and destroys its events") {
  FakeDevice dev;
  {
    CachingAllocator a(dev);
    auto b = must_alloc(a, KiB, S1);
    a.deallocate(b.data);
    must_alloc(a, KiB, S2);   // an event for the hand-over
    must_alloc(a, 30 * MiB, S1);  // live at the end: released anyway
    CHECK(dev.outstanding_count() == 2);
  }
  CHECK(dev.outstanding_count() == 0);
  CHECK(dev.events_alive() == 0);
  CHECK(dev.bad_frees() == 0);
}

TEST_CASE("randomized: no overlap, exact accounting, no stream race, nothing left at the end") {
  FakeDevice dev(96 * MiB);
  CachingAllocator a(dev);
  std::mt19937_64 rng(20240611);
  const Stream streams[] = {S1, S2, S3, nullptr};
  struct Live {
    CachingAllocator::Block b;
    uint64_t life;
    Stream owner;  // the stream that claimed it (nullptr: not yet)
  };
  std::vector<Live> live;
  // Every use of device memory: a later owner of any byte of it must be ordered after it.
  struct Use {
    char* lo;
    char* hi;
    Stream s;
    uint64_t tick, life;
  };
  std::vector<Use> uses;
  uint64_t lives = 0;
  auto use = [&](const Live& l, Stream s) {
    for (const Use& u : uses)
      if (u.life != l.life && u.lo < at(l.b) + l.b.size && at(l.b) < u.hi) {
        INFO("stream race with an earlier owner's work");
        REQUIRE(dev.ordered_after(s, u.s, u.tick));
      }
    // Uses this one now covers are implied by it (clocks only grow): drop them.
    std::erase_if(uses, [&](const Use& u) {
      return u.life != l.life && at(l.b) <= u.lo && u.hi <= at(l.b) + l.b.size;
    });
    uses.push_back({at(l.b), at(l.b) + l.b.size, s, dev.work(s), l.life});
  };
  auto random_size = [&]() -> size_t {
    int kind = rng() % 100;
    if (kind < 70) return 1 + rng() % (64 * KiB);
    if (kind < 95) return 1 + rng() % MiB;
    return 1 + rng() % (24 * MiB);
  };
  for (int step = 0; step < 20000; ++step) {
    int op = rng() % 100;
    if (op < 41 || live.empty()) {
      size_t n = random_size();
      Stream s = streams[rng() % 4];
      auto r = a.allocate(n, s);
      if (!r.is_ok()) {
        REQUIRE(r.status().code() == Code::kResourceExhausted);
        continue;
      }
      REQUIRE(r->size >= CachingAllocator::round_size(n));
      REQUIRE(r->size % 512 == 0);
      REQUIRE(reinterpret_cast<uintptr_t>(r->data) % 512 == 0);
      live.push_back({*r, ++lives, s});
      if (s) use(live.back(), s);
    } else if (op < 56) {
      Live& l = live[rng() % live.size()];
      Stream s = streams[rng() % 3];
      GT_REQUIRE_OK(a.use_on(l.b.data, s));
      // After the claim, ordering the block's streams is the caller's business (as with
      // tensors shared between streams): model the event a real caller would wait on.
      if (l.owner) dev.order(s, l.owner);
      else l.owner = s;
      use(l, s);
    } else if (op < 58) {
      Stream s = streams[rng() % 3];
      dev.finish(s);
      a.forget_stream(s);
    } else if (op < 59) {
      a.trim();
    } else {
      size_t i = rng() % live.size();
      a.deallocate(live[i].b.data);
      live[i] = live.back();
      live.pop_back();
    }
    // Invariants against the fake device's and the test's own books.
    std::vector<CachingAllocator::Block> sorted;
    uint64_t allocated = 0;
    for (const Live& l : live) {
      sorted.push_back(l.b);
      allocated += l.b.size;
    }
    std::sort(sorted.begin(), sorted.end(), [](auto& x, auto& y) { return x.data < y.data; });
    for (size_t i = 0; i < sorted.size(); ++i) {
      REQUIRE(dev.inside(sorted[i].data, sorted[i].size));
      if (i) REQUIRE(at(sorted[i - 1]) + sorted[i - 1].size <= at(sorted[i]));
    }
    AllocatorStats st = a.stats();
    REQUIRE(st.allocated_bytes == allocated);
    REQUIRE(st.live_blocks == live.size());
    REQUIRE(st.reserved_bytes == dev.used());
    REQUIRE(st.segments == dev.outstanding_count());
    REQUIRE(st.peak_bytes >= st.allocated_bytes);
  }
  AllocatorStats st = a.stats();
  CHECK(st.cross_stream_waits > 0);
  CHECK(st.device_mallocs > st.segments);  // segments were trimmed and taken again
  CHECK(st.retries > 0);                   // 96 MiB run out now and then
  for (const Live& l : live) a.deallocate(l.b.data);
  a.trim();
  CHECK(dev.used() == 0);
  CHECK(dev.outstanding_count() == 0);
  CHECK(a.stats().reserved_bytes == 0);
  CHECK(dev.bad_frees() == 0);
}

TEST_CASE("threads allocate and free concurrently") {
  FakeDevice dev;
  CachingAllocator a(dev);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      Stream s = &tags[t];
      std::vector<CachingAllocator::Block> mine;
      for (int i = 0; i < 3000; ++i) {
        if (rng() % 2 || mine.empty()) {
          auto r = a.allocate(1 + rng() % (256 * KiB), s);
          if (!r.is_ok()) {
            ++failures;
            continue;
          }
          // The first and last bytes carry the owner: another thread's block overlapping
          // this one would overwrite them.
          at(*r)[0] = at(*r)[r->size - 1] = static_cast<char>(t);
          mine.push_back(*r);
        } else {
          size_t k = rng() % mine.size();
          if (at(mine[k])[0] != t || at(mine[k])[mine[k].size - 1] != t) ++failures;
          a.deallocate(mine[k].data);
          mine[k] = mine.back();
          mine.pop_back();
        }
      }
      for (auto& b : mine) a.deallocate(b.data);
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures == 0);
  AllocatorStats st = a.stats();
  CHECK(st.allocated_bytes == 0);
  CHECK(st.live_blocks == 0);
  CHECK(st.reserved_bytes == dev.used());
  a.trim();
  CHECK(dev.used() == 0);
}
