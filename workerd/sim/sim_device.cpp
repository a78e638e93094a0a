#include "workerd/sim/sim_device.h"

#include "workerd/cpu/host_memory.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <thread>

namespace gt::worker::sim {

using device::Event;
using device::Graph;
using device::Stream;
using Clock = std::chrono::steady_clock;

namespace {
constexpr size_t kAlignment = 512;  // what cudaMalloc guarantees (and more)
}  // namespace

// One stream: a FIFO and the device thread that drains it. `completed` counts finished items,
// so an event is "the stream's count when it was recorded".
struct SimDevice::SimStream {
  // A recorded piece of work: what an Item holds, without its launch time.
  struct Node {
    int64_t copy_bytes = 0;  // as Item's
    std::function<void()> work;
  };
  using Nodes = std::vector<Node>;
  struct Item {
    std::function<void()> work;
    Clock::time_point not_before;  // launch latency: enqueue time + launch_us
    int64_t copy_bytes = 0;        // > 0 for copies: the transfer time is added
    std::shared_ptr<const Nodes> graph;  // a launched graph: its nodes, instead of work
  };
  std::mutex mu;
  // Two condition variables, so that the hot path wakes no one needlessly: `work` wakes the
  // device thread (only when it may be asleep: nothing was queued), `done` wakes those waiting
  // for completed work or for room in the queue (only when there are any).
  std::condition_variable work, done;
  std::deque<Item> queue;  // waiting; the device thread takes them all at once
  size_t in_flight = 0;    // taken by the device thread and not finished
  uint64_t enqueued = 0;
  // Published after every item without the lock (the device thread takes it only to wake
  // waiters): seq_cst on both sides, so a waiter that registered is always seen, and a waiter
  // always sees the count its registration raced with.
  std::atomic<uint64_t> completed{0};
  std::atomic<int> done_waiters{0};
  bool stop = false;
  std::thread thread;
  // While capturing: what is enqueued, and why the capture is invalid ("" when it is not).
  std::unique_ptr<Nodes> capture;
  std::string invalid;

  // Waits on `done` (lock held) until pred(), counted so that the device thread notifies.
  template <class Pred>
  void wait_done(std::unique_lock<std::mutex>& lk, Pred pred) {
    ++done_waiters;
    done.wait(lk, pred);
    --done_waiters;
  }
  void finished_one() {
    ++completed;
    if (done_waiters.load() > 0) {
      std::lock_guard<std::mutex> lk(mu);
      done.notify_all();
    }
  }
};

namespace {
using SimStreamItem = SimDevice::SimStream::Item;
using SimNode = SimDevice::SimStream::Node;

// A lost device drops its queued kernels and copies; waits and host functions still run, so
// whoever waits for a completion hears of the loss instead of hanging. `not_before`: the
// launch latency's end (a graph's nodes have none of their own).
void run_work(const SimDeviceOptions& opts_, const std::atomic<bool>& lost_, int64_t copy_bytes,
              Clock::time_point not_before, const std::function<void()>& work) {
  const bool device_work = copy_bytes >= 0;
  if (device_work && lost_.load()) return;
  auto start = not_before;
  if (copy_bytes > 0 && opts_.gbps > 0)
    start += std::chrono::nanoseconds(
        static_cast<int64_t>(static_cast<double>(copy_bytes) / opts_.gbps));
  if (device_work && start > Clock::now()) std::this_thread::sleep_until(start);
  const auto began = Clock::now();
  if (!device_work || !lost_.load()) work();
  if (copy_bytes == 0 && opts_.kernel_us > 0)  // a kernel's device time
    std::this_thread::sleep_until(began + std::chrono::microseconds(opts_.kernel_us));
}

void run_item(const SimDeviceOptions& opts, const std::atomic<bool>& lost, SimStreamItem& item) {
  if (!item.graph) {
    run_work(opts, lost, item.copy_bytes, item.not_before, item.work);
    return;
  }
  // One launch latency for the whole graph, then its nodes back to back.
  if (item.not_before > Clock::now()) std::this_thread::sleep_until(item.not_before);
  for (const SimNode& n : *item.graph) run_work(opts, lost, n.copy_bytes, Clock::now(), n.work);
}

// Queues an item (the stream's lock is held).
Status push_locked(SimDevice::SimStream& st, SimStreamItem&& item) {
  if (st.stop) return invalid_argument("sim stream is being destroyed");
  const bool idle = st.queue.empty();  // else the device thread looks again before sleeping
  st.queue.push_back(std::move(item));
  ++st.enqueued;
  if (idle) st.work.notify_one();
  return Status::ok();
}

// Waiting for, querying or recording on a capturing stream (device_api.h): an error that
// invalidates the capture. The stream's lock is held.
Status invalidate_locked(SimDevice::SimStream& st, const char* call) {
  if (st.invalid.empty()) st.invalid = fmt::format("{} on the capturing stream", call);
  return failed_precondition("{} on a stream that is capturing a graph (the capture is now invalid)",
                             call);
}

// The host time of a launch call: spent on the caller's thread, as the CUDA runtime spends it
// (a spin: sleeping has too coarse a granularity for microseconds).
void spend_host_us(int64_t us) {
  if (us <= 0) return;
  const auto until = Clock::now() + std::chrono::microseconds(us);
  while (Clock::now() < until) {
  }
}

// Nodes of the same kind: a kernel, a copy, or a wait / host function.
int node_kind(const SimNode& n) { return n.copy_bytes < 0 ? -1 : n.copy_bytes == 0 ? 0 : 1; }

}  // namespace

struct SimDevice::SimGraph {
  std::shared_ptr<const SimStream::Nodes> nodes;  // replaced by an update; launches keep theirs
};

struct SimDevice::SimEvent {
  std::shared_ptr<SimStream> stream;  // null: never recorded (complete)
  uint64_t target = 0;                // done when stream->completed >= target
};

SimDevice::SimDevice(SimDeviceOptions opts) : opts_(opts) {
  if (opts_.max_queued == 0) opts_.max_queued = 1;
}

SimDevice::~SimDevice() {
  std::unordered_map<const void*, std::shared_ptr<SimStream>> streams;
  {
    std::lock_guard<std::mutex> lk(mu_);
    streams.swap(streams_);
  }
  for (auto& [h, s] : streams) {
    {
      std::lock_guard<std::mutex> lk(s->mu);
      s->stop = true;
    }
    s->work.notify_all();
    s->done.notify_all();
    if (s->thread.joinable()) s->thread.join();
  }
  for (auto& [p, n] : allocations_) std::free(reinterpret_cast<void*>(p));
}

Status SimDevice::sticky_error() const {
  if (!lost_.load()) return Status::ok();
  std::lock_guard<std::mutex> lk(mu_);
  return internal_error("sim device lost: {}", lost_why_);
}

void SimDevice::inject_sticky_error(const std::string& why) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (lost_.load()) return;
    lost_why_ = why;
    lost_ = true;
  }
}

Result<void*> SimDevice::malloc(size_t bytes) {
  GT_RETURN_IF_ERROR(sticky_error());
  if (bytes == 0) return invalid_argument("sim malloc of 0 bytes");
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (rounded > opts_.memory_bytes - std::min(in_use_, opts_.memory_bytes))
      return resource_exhausted("sim device out of memory: {} bytes requested, {} of {} in use",
                                bytes, in_use_, opts_.memory_bytes);
    in_use_ += rounded;
  }
  // The simulated device memory is the host's: a large block the host cannot back is refused
  // here, and committed at once, as the CPU worker does (host_memory.h), so that the OOM killer
  // never ends the worker later.
  auto refuse = [&](const char* why) -> Status {
    std::lock_guard<std::mutex> lk(mu_);
    in_use_ -= rounded;
    return resource_exhausted("sim device out of memory: {} bytes requested ({})", bytes, why);
  };
  static const HostMemoryGuard guard = HostMemoryGuard::system();
  if (rounded >= guard.large && guard.available) {
    const std::optional<uint64_t> avail = guard.available();
    if (avail && (*avail < guard.headroom || rounded > *avail - guard.headroom))
      return refuse("the host has too little memory available");
  }
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) return refuse("the host has no room");
  if (rounded >= guard.large && !commit_pages(p, rounded)) {
    std::free(p);
    return refuse("the host could not commit the pages");
  }
  std::memset(p, 0xff, rounded);  // uninitialized device memory is not zero
  std::lock_guard<std::mutex> lk(mu_);
  allocations_.emplace(reinterpret_cast<uintptr_t>(p), rounded);
  return p;
}

void SimDevice::free(void* p) {
  if (p == nullptr) return;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = allocations_.find(reinterpret_cast<uintptr_t>(p));
    if (it == allocations_.end()) return;  // not ours (cudaFree would fail): ignore
    in_use_ -= it->second;
    allocations_.erase(it);
  }
  std::free(p);
}

// Host staging memory is ordinary memory here (CUDA pins it).
Result<void*> SimDevice::host_alloc(size_t bytes) {
  void* p = std::malloc(std::max<size_t>(bytes, 1));
  if (p == nullptr) return resource_exhausted("sim host_alloc: no room for {} bytes", bytes);
  return p;
}

void SimDevice::host_free(void* p) { std::free(p); }

uint64_t SimDevice::bytes_in_use() const {
  std::lock_guard<std::mutex> lk(mu_);
  return in_use_;
}

bool SimDevice::is_device_pointer(const void* p) const {
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lk(mu_);
  auto it = allocations_.upper_bound(a);
  if (it == allocations_.begin()) return false;
  --it;
  return a < it->first + it->second;
}

Result<Stream> SimDevice::create_stream() {
  GT_RETURN_IF_ERROR(sticky_error());
  auto s = std::make_shared<SimStream>();
  SimStream* raw = s.get();
  raw->thread = std::thread([this, raw] {
    std::deque<SimStream::Item> batch;
    while (true) {
      {
        std::unique_lock<std::mutex> lk(raw->mu);
        raw->in_flight = 0;
        if (raw->done_waiters.load() > 0) raw->done.notify_all();  // room in the queue
        raw->work.wait(lk, [&] { return raw->stop || !raw->queue.empty(); });
        if (raw->queue.empty()) return;  // stopped and drained
        batch.swap(raw->queue);
        raw->in_flight = batch.size();
      }
      for (SimStream::Item& item : batch) {
        run_item(opts_, lost_, item);
        item.work = nullptr;  // what it captured goes before the count says it is done
        item.graph.reset();
        raw->finished_one();
      }
      batch.clear();
    }
  });
  std::lock_guard<std::mutex> lk(mu_);
  streams_.emplace(raw, std::move(s));
  return static_cast<Stream>(raw);
}

SimDevice::SimStream* SimDevice::stream_of(Stream s) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = streams_.find(s);
  return it == streams_.end() ? nullptr : it->second.get();
}

void SimDevice::destroy_stream(Stream s) {
  std::shared_ptr<SimStream> st;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = streams_.find(s);
    if (it == streams_.end()) return;
    st = std::move(it->second);
    streams_.erase(it);
  }
  {
    std::lock_guard<std::mutex> lk(st->mu);
    st->stop = true;  // the thread drains what is queued, then ends
  }
  st->work.notify_all();
  st->done.notify_all();
  if (st->thread.get_id() == std::this_thread::get_id())
    st->thread.detach();  // destroyed from its own work item: let it finish by itself
  else if (st->thread.joinable())
    st->thread.join();
  // Events recorded on it keep the SimStream alive (shared_ptr) and read its final count.
}

// Waits even on a lost device (its queue drains quickly: kernels are dropped), so that the
// host functions queued before the call have run when it returns.
Status SimDevice::synchronize_stream(Stream s) {
  SimStream* st = stream_of(s);
  if (st == nullptr) return invalid_argument("synchronize: unknown sim stream");
  std::unique_lock<std::mutex> lk(st->mu);
  if (st->capture) return invalidate_locked(*st, "synchronize_stream");
  const uint64_t target = st->enqueued;
  st->wait_done(lk, [&] { return st->completed >= target; });
  lk.unlock();
  return sticky_error();
}

// Every stream's queue as it is now, waited for with the stream held (one destroyed meanwhile
// drains what it had before its thread ends).
Status SimDevice::synchronize_device() {
  std::vector<std::shared_ptr<SimStream>> all;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& [raw, st] : streams_) all.push_back(st);
  }
  for (auto& st : all) {
    std::unique_lock<std::mutex> lk(st->mu);
    const uint64_t target = st->enqueued;
    st->wait_done(lk, [&] { return st->completed >= target; });
  }
  return sticky_error();
}

size_t SimDevice::live_streams() const {
  std::lock_guard<std::mutex> lk(mu_);
  return streams_.size();
}

Result<bool> SimDevice::stream_idle(Stream s) {
  SimStream* st = stream_of(s);
  if (st == nullptr) return invalid_argument("stream_idle: unknown sim stream");
  std::lock_guard<std::mutex> lk(st->mu);
  if (st->capture) return invalidate_locked(*st, "stream_idle");
  return st->completed.load() >= st->enqueued;
}

Result<Event> SimDevice::create_event() {
  GT_RETURN_IF_ERROR(sticky_error());
  auto e = std::make_shared<SimEvent>();
  SimEvent* raw = e.get();
  std::lock_guard<std::mutex> lk(mu_);
  events_.emplace(raw, std::move(e));
  return static_cast<Event>(raw);
}

void SimDevice::destroy_event(Event e) {
  std::lock_guard<std::mutex> lk(mu_);
  events_.erase(e);
}

Status SimDevice::record_event(Event e, Stream s) {
  GT_RETURN_IF_ERROR(sticky_error());
  std::lock_guard<std::mutex> lk(mu_);
  auto ev = events_.find(e);
  auto st = streams_.find(s);
  if (ev == events_.end() || st == streams_.end())
    return invalid_argument("record_event: unknown sim event or stream");
  std::lock_guard<std::mutex> slk(st->second->mu);
  if (st->second->capture) return invalidate_locked(*st->second, "record_event");
  ev->second->stream = st->second;
  ev->second->target = st->second->enqueued;
  return Status::ok();
}

Result<SimDevice::Capture> SimDevice::capture_of(Event e) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto ev = events_.find(e);
  if (ev == events_.end()) return invalid_argument("unknown sim event");
  return Capture{ev->second->stream, ev->second->target};
}

Result<bool> SimDevice::event_done(Event e) {
  GT_RETURN_IF_ERROR(sticky_error());
  GT_ASSIGN_OR_RETURN(Capture c, capture_of(e));
  if (!c.stream) return true;
  std::lock_guard<std::mutex> lk(c.stream->mu);
  return c.stream->completed >= c.target;
}

Status SimDevice::synchronize_event(Event e) {
  GT_ASSIGN_OR_RETURN(Capture c, capture_of(e));
  if (!c.stream) return Status::ok();
  std::unique_lock<std::mutex> lk(c.stream->mu);
  c.stream->wait_done(lk, [&] { return c.stream->completed >= c.target; });
  lk.unlock();
  return sticky_error();
}

Status SimDevice::stream_wait_event(Stream s, Event e) {
  GT_RETURN_IF_ERROR(sticky_error());
  GT_ASSIGN_OR_RETURN(Capture c, capture_of(e));  // the capture at the time of this call
  if (!c.stream) return Status::ok();
  return enqueue(s, -1, [c] {
    std::unique_lock<std::mutex> lk(c.stream->mu);
    c.stream->wait_done(lk, [&] { return c.stream->completed >= c.target || c.stream->stop; });
  });
}

// copy_bytes: > 0 a copy (launch latency + transfer time), 0 a kernel (launch latency), < 0 a
// wait or host function (neither).
Status SimDevice::enqueue(Stream s, int64_t copy_bytes, std::function<void()> work) {
  if (copy_bytes >= 0) GT_RETURN_IF_ERROR(sticky_error());
  SimStream* st = stream_of(s);
  if (st == nullptr) return invalid_argument("unknown sim stream");
  std::unique_lock<std::mutex> lk(st->mu);
  if (st->capture) {  // recorded, to run when the graph is launched
    st->capture->push_back(SimStream::Node{copy_bytes, std::move(work)});
    lk.unlock();
    spend_host_us(opts_.capture_cpu_us);
    return Status::ok();
  }
  if (copy_bytes >= 0 && opts_.launch_cpu_us > 0) {
    lk.unlock();
    spend_host_us(opts_.launch_cpu_us);
    lk.lock();
  }
  SimStream::Item item;
  item.work = std::move(work);
  item.copy_bytes = copy_bytes;
  item.not_before = Clock::now();
  if (copy_bytes >= 0) item.not_before += std::chrono::microseconds(opts_.launch_us);
  // A full launch queue blocks the caller, as CUDA's does.
  st->wait_done(lk, [&] {
    return st->stop || st->queue.size() + st->in_flight < opts_.max_queued;
  });
  return push_locked(*st, std::move(item));
}

Status SimDevice::register_host(void* p, size_t bytes) {
  GT_RETURN_IF_ERROR(sticky_error());
  if (p == nullptr || bytes == 0) return invalid_argument("register_host: nothing to register");
  std::lock_guard<std::mutex> lk(mu_);
  if (!registered_.emplace(p, bytes).second)
    return invalid_argument("register_host: already registered");  // (cudaHostRegister's too)
  return Status::ok();
}

void SimDevice::unregister_host(void* p) {
  std::lock_guard<std::mutex> lk(mu_);
  registered_.erase(p);
}

uint64_t SimDevice::registered_host_bytes() const {
  std::lock_guard<std::mutex> lk(mu_);
  uint64_t n = 0;
  for (const auto& [p, bytes] : registered_) n += bytes;
  return n;
}

Status SimDevice::begin_capture(Stream s) {
  GT_RETURN_IF_ERROR(sticky_error());
  SimStream* st = stream_of(s);
  if (st == nullptr) return invalid_argument("begin_capture: unknown sim stream");
  std::lock_guard<std::mutex> lk(st->mu);
  if (st->capture) return failed_precondition("begin_capture: the stream is already capturing");
  st->capture = std::make_unique<SimStream::Nodes>();
  st->invalid.clear();
  return Status::ok();
}

Result<Graph> SimDevice::end_capture(Stream s, Graph reuse) {
  SimStream* st = stream_of(s);
  if (st == nullptr) return invalid_argument("end_capture: unknown sim stream");
  std::unique_ptr<SimStream::Nodes> nodes;
  std::string invalid;
  {
    std::lock_guard<std::mutex> lk(st->mu);
    if (!st->capture) return failed_precondition("end_capture: the stream is not capturing");
    nodes = std::move(st->capture);
    invalid.swap(st->invalid);
  }
  GT_RETURN_IF_ERROR(sticky_error());
  std::lock_guard<std::mutex> lk(mu_);
  ++captures_ended_;
  if (invalid.empty() && opts_.fail_capture_every != 0 &&
      captures_ended_ % opts_.fail_capture_every == 0)
    invalid = "injected (fail_capture_every)";
  if (!invalid.empty()) return failed_precondition("graph capture invalidated: {}", invalid);
  std::shared_ptr<const SimStream::Nodes> recorded = std::move(nodes);
  auto old = graphs_.find(reuse);
  if (old != graphs_.end()) {
    const SimStream::Nodes& was = *old->second->nodes;
    bool same = was.size() == recorded->size();
    for (size_t i = 0; same && i < was.size(); ++i)
      same = node_kind(was[i]) == node_kind((*recorded)[i]);
    if (same) {  // an update: the same executable graph, the new arguments
      old->second->nodes = std::move(recorded);
      return reuse;
    }
  }
  // A new one (made before the old one goes, so that its handle differs, as on CUDA).
  auto g = std::make_unique<SimGraph>();
  g->nodes = std::move(recorded);
  Graph handle = g.get();
  if (old != graphs_.end()) graphs_.erase(old);
  graphs_.emplace(handle, std::move(g));
  return handle;
}

Status SimDevice::launch_graph(Graph g, Stream s) {
  GT_RETURN_IF_ERROR(sticky_error());
  std::shared_ptr<const SimStream::Nodes> nodes;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = graphs_.find(g);
    if (it == graphs_.end()) return invalid_argument("launch_graph: unknown sim graph");
    nodes = it->second->nodes;
  }
  SimStream* st = stream_of(s);
  if (st == nullptr) return invalid_argument("launch_graph: unknown sim stream");
  spend_host_us(opts_.launch_cpu_us);
  SimStream::Item item;
  item.graph = std::move(nodes);
  item.not_before = Clock::now() + std::chrono::microseconds(opts_.launch_us);
  std::unique_lock<std::mutex> lk(st->mu);
  if (st->capture) return invalidate_locked(*st, "launch_graph");
  st->wait_done(lk, [&] {
    return st->stop || st->queue.size() + st->in_flight < opts_.max_queued;
  });
  return push_locked(*st, std::move(item));
}

void SimDevice::destroy_graph(Graph g) {
  std::lock_guard<std::mutex> lk(mu_);
  graphs_.erase(g);  // a queued launch holds its nodes
}

size_t SimDevice::graphs() const {
  std::lock_guard<std::mutex> lk(mu_);
  return graphs_.size();
}

Status SimDevice::copy_to_device(void* dst, const void* src, size_t n, Stream s) {
  if (!is_device_pointer(dst) || !is_device_pointer(static_cast<char*>(dst) + n - 1))
    return invalid_argument("copy_to_device: destination is not sim device memory");
  return enqueue(s, static_cast<int64_t>(n), [dst, src, n] { std::memcpy(dst, src, n); });
}

Status SimDevice::copy_to_host(void* dst, const void* src, size_t n, Stream s) {
  if (!is_device_pointer(src) || !is_device_pointer(static_cast<const char*>(src) + n - 1))
    return invalid_argument("copy_to_host: source is not sim device memory");
  return enqueue(s, static_cast<int64_t>(n), [dst, src, n] { std::memcpy(dst, src, n); });
}

Status SimDevice::copy_on_device(void* dst, const void* src, size_t n, Stream s) {
  if (!is_device_pointer(src) || !is_device_pointer(dst))
    return invalid_argument("copy_on_device: not sim device memory");
  return enqueue(s, static_cast<int64_t>(n), [dst, src, n] { std::memmove(dst, src, n); });
}

Status SimDevice::fill_zero(void* dst, size_t n, Stream s) {
  if (!is_device_pointer(dst)) return invalid_argument("fill_zero: not sim device memory");
  return enqueue(s, 0, [dst, n] { std::memset(dst, 0, n); });
}

Status SimDevice::launch_host_func(Stream s, std::function<void()> fn) {
  return enqueue(s, -1, std::move(fn));
}

Status SimDevice::launch(Stream s, std::function<void()> kernel) {
  return enqueue(s, 0, std::move(kernel));
}

}  // namespace gt::worker::sim
