#include "workerd/peer/nccl_peer_link.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "gt/core/dtype.h"
#include "gt/core/fnv.h"
#include "workerd/cuda/cuda_check.h"
#include "workerd/peer/staged_peer_link.h"

namespace gt::worker {

namespace {

using Clock = std::chrono::steady_clock;

// Tags of the link's own TCP messages: the dispatcher's tags count up from small numbers, so
// the top bits are free and an instruction's header/bootstrap never meet its data messages
// (which the staged fallback sends on the plain tag).
constexpr uint64_t kHeaderTagBit = uint64_t{1} << 63;
constexpr uint64_t kBootstrapTagBit = uint64_t{1} << 62;

// Header words (int64 each), one row per member after the all_gather.
enum HeaderWord { kMagic, kDType, kNumel, kDeviceHash, kCommPrint, kWords };
constexpr int64_t kHeaderMagic = 0x314e5447;  // "GTN1"

// libnccl.so.2, loaded at run time: it is too big to ship in the device bundle and a worker
// without it must still start (and fall back to the staged TCP link).
struct Nccl {
  decltype(&::ncclGetVersion) GetVersion = nullptr;
  decltype(&::ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&::ncclCommInitRankConfig) CommInitRankConfig = nullptr;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&::ncclCommAbort) CommAbort = nullptr;
  decltype(&::ncclGetErrorString) GetErrorString = nullptr;
  decltype(&::ncclGetLastError) GetLastError = nullptr;  // optional
  decltype(&::ncclAllReduce) AllReduce = nullptr;
  decltype(&::ncclAllGather) AllGather = nullptr;
  decltype(&::ncclReduceScatter) ReduceScatter = nullptr;
  decltype(&::ncclSend) Send = nullptr;
  decltype(&::ncclRecv) Recv = nullptr;
  decltype(&::ncclGroupStart) GroupStart = nullptr;
  decltype(&::ncclGroupEnd) GroupEnd = nullptr;
  int version = 0;
  bool loaded = false;
};

const Nccl& nccl() {
  static const Nccl lib = [] {
    Nccl n;
    void* h = ::dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      spdlog::debug("NCCL: cannot load libnccl.so.2: {}", ::dlerror());
      return n;
    }
    bool ok = true;
    auto sym = [&](auto& fn, const char* name, bool required = true) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(h, name));
      if (!fn && required) {
        spdlog::warn("NCCL: libnccl.so.2 lacks {}", name);
        ok = false;
      }
    };
    sym(n.GetVersion, "ncclGetVersion");
    sym(n.GetUniqueId, "ncclGetUniqueId");
    sym(n.CommInitRankConfig, "ncclCommInitRankConfig");
    sym(n.CommGetAsyncError, "ncclCommGetAsyncError");
    sym(n.CommAbort, "ncclCommAbort");
    sym(n.GetErrorString, "ncclGetErrorString");
    sym(n.GetLastError, "ncclGetLastError", false);
    sym(n.AllReduce, "ncclAllReduce");
    sym(n.AllGather, "ncclAllGather");
    sym(n.ReduceScatter, "ncclReduceScatter");
    sym(n.Send, "ncclSend");
    sym(n.Recv, "ncclRecv");
    sym(n.GroupStart, "ncclGroupStart");
    sym(n.GroupEnd, "ncclGroupEnd");
    if (ok && n.GetVersion(&n.version) != ncclSuccess) ok = false;
    // bfloat16 and non-blocking communicators need NCCL 2.14 or newer.
    if (ok && n.version < 21400) {
      spdlog::warn("NCCL: version {} is older than 2.14", n.version);
      ok = false;
    }
    n.loaded = ok;
    return n;
  }();
  return lib;
}

ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::kFloat32: return ncclFloat32;
    case DType::kFloat16: return ncclFloat16;
    case DType::kBFloat16: return ncclBfloat16;
    case DType::kInt32: return ncclInt32;
    case DType::kInt64: return ncclInt64;
    case DType::kBool: return ncclUint8;
    case DType::kFloat64: return ncclFloat64;
    case DType::kInt8: return ncclInt8;
    case DType::kUInt8: return ncclUint8;
  }
  return ncclUint8;
}

// Bools are 0/1 bytes: their sum is `or` (max) like the CPU collectives, min is `and`.
ncclRedOp_t nccl_op(ReduceKind k, DType d) {
  switch (k) {
    case ReduceKind::kSum: return d == DType::kBool ? ncclMax : ncclSum;
    case ReduceKind::kMax: return ncclMax;
    case ReduceKind::kMin: return ncclMin;
  }
  return ncclSum;
}

// A tensor split at `axis` into outer x extent x inner (inner in bytes).
struct AxisSplit {
  uint64_t outer = 1, inner = 1;
  AxisSplit(const TensorMeta& m, int axis) {
    inner = dtype_size(m.dtype);
    for (int i = 0; i < axis; ++i) outer *= static_cast<uint64_t>(m.shape[i]);
    for (int i = axis + 1; i < m.shape.rank(); ++i) inner *= static_cast<uint64_t>(m.shape[i]);
  }
};

std::string join_ids(const std::vector<uint32_t>& ids) {
  std::string s;
  for (uint32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

char* at(void* p, uint64_t off) { return static_cast<char*>(p) + off; }
const char* at(const void* p, uint64_t off) { return static_cast<const char*>(p) + off; }

// A host tensor over a vector's bytes (the Storage owns nothing).
struct HostTensor {
  std::vector<int64_t> words;
  Tensor t;
  HostTensor(std::initializer_list<int64_t> dims, size_t n) : words(n, 0) {
    t.meta.dtype = DType::kInt64;
    t.meta.shape = Shape(dims);
    const size_t bytes = n * sizeof(int64_t);
    t.storage = std::make_shared<Storage>(words.data(), bytes, bytes, nullptr);
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------------

struct NcclPeerLink::Impl {
  struct Comm {
    ncclComm_t comm = nullptr;
    uint64_t print = 0;  // hash of the unique id: members compare it in the header
  };
  // One instruction's deadline and the reset generation it started in.
  struct Clockwork {
    Clock::time_point deadline;
    uint64_t gen;
  };

  Impl(PeerLink& t, Backend& d, SessionStreams& st, NcclPeerLinkOptions o)
      : tcp(t), device(d), streams(st), staged(t, d), opts(o) {}

  PeerLink& tcp;
  Backend& device;
  SessionStreams& streams;  // the device's session streams (the CUDA backend's)
  StagedPeerLink staged;
  NcclPeerLinkOptions opts;
  int64_t device_hash = 0;
  size_t max_pitch = 0;
  cudaEvent_t done = nullptr;

  std::mutex mu;  // everything below; run() holds it for the whole instruction
  bool has_self = false;
  uint32_t self = 0;
  std::map<std::vector<uint32_t>, Comm> comms;  // by sorted member ids
  std::set<std::vector<uint32_t>> staged_sets;  // member sets found sharing a GPU (logged once)
  std::atomic<uint64_t> reset_gen{0};
  std::atomic<uint64_t> sent{0}, received{0};

  Status init();
  Status run(CommId c, const CommGroup& g, const Tensor* input, Tensor* out, uint64_t session);
  Status check(CommId c, const CommGroup& g, const Tensor* input, const Tensor* out) const;
  Status execute(CommId c, const CommGroup& g, const std::vector<uint32_t>& key, Comm& cm,
                 const Tensor* input, Tensor* out, uint64_t session, const Clockwork& cw);
  Result<Comm*> communicator(const std::vector<uint32_t>& key, bool rebuild, uint64_t tag,
                             uint64_t session, const Clockwork& cw);
  Status settle(const std::vector<uint32_t>& key, ncclComm_t comm, ncclResult_t r,
                const char* what, const Clockwork& cw);
  Status wait_stream(const std::vector<uint32_t>& key, ncclComm_t comm, cudaStream_t s,
                     const char* what, const Clockwork& cw);
  Status nccl_error(ncclComm_t comm, ncclResult_t r, const char* what) const;
  Status copy2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                size_t height, cudaStream_t s) const;
  void abort(const std::vector<uint32_t>& key);
  void abort_all();
};

Status NcclPeerLink::Impl::init() {
  GT_CUDA_CHECK(cudaSetDevice(streams.device_ordinal()));
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, streams.device_ordinal()) != cudaSuccess)
    return internal_error("NCCL link: cannot read the GPU's properties");
  // The GPU's UUID names it across hosts and containers (a PCI bus id repeats between hosts and
  // changes with CUDA_VISIBLE_DEVICES-style remapping); the header compares these between
  // members: the same UUID is the same GPU, which NCCL cannot give two ranks.
  device_hash = static_cast<int64_t>(fnv1a(prop.uuid.bytes, sizeof prop.uuid.bytes) >> 1);
  int pitch = 0;
  cudaDeviceGetAttribute(&pitch, cudaDevAttrMaxPitch, streams.device_ordinal());
  max_pitch = pitch > 0 ? static_cast<size_t>(pitch) : 0;
  if (cudaEventCreateWithFlags(&done, cudaEventDisableTiming) != cudaSuccess)
    return internal_error("NCCL link: cannot create a CUDA event");
  return Status::ok();
}

Status NcclPeerLink::Impl::nccl_error(ncclComm_t comm, ncclResult_t r, const char* what) const {
  const Nccl& n = nccl();
  const char* last = comm && n.GetLastError ? n.GetLastError(comm) : nullptr;
  return internal_error("NCCL {} failed: {}{}{}", what, n.GetErrorString(r),
                        last && *last ? ": " : "", last ? last : "");
}

void NcclPeerLink::Impl::abort(const std::vector<uint32_t>& key) {
  auto it = comms.find(key);
  if (it == comms.end()) return;
  // Abort, not destroy: it never waits for the other members (one may be gone).
  if (it->second.comm) nccl().CommAbort(it->second.comm);
  comms.erase(it);
}

void NcclPeerLink::Impl::abort_all() {
  for (auto& [key, c] : comms)
    if (c.comm) nccl().CommAbort(c.comm);
  comms.clear();
}

// A non-blocking communicator's call may return ncclInProgress: poll until it settles, within
// the instruction's deadline. Any failure leaves the communicator unusable: it is aborted.
Status NcclPeerLink::Impl::settle(const std::vector<uint32_t>& key, ncclComm_t comm,
                                  ncclResult_t r, const char* what, const Clockwork& cw) {
  const Nccl& n = nccl();
  auto sleep = std::chrono::microseconds(20);
  while (r == ncclInProgress) {
    if (reset_gen != cw.gen) {
      abort(key);
      return unavailable("NCCL {}: the peer link was reset", what);
    }
    if (Clock::now() >= cw.deadline) {
      abort(key);
      return deadline_exceeded("NCCL {}: no progress within {} ms (a member missing?)", what,
                               opts.timeout_ms);
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min<std::chrono::microseconds>(sleep * 2, std::chrono::milliseconds(2));
    if (n.CommGetAsyncError(comm, &r) != ncclSuccess) r = ncclInternalError;
  }
  if (r == ncclSuccess) return Status::ok();
  Status st = nccl_error(comm, r, what);
  abort(key);
  return st;
}

// Waits for the NCCL work queued on `s`, watching the communicator for errors, so a member
// that died mid-collective costs one deadline instead of a hung stream.
Status NcclPeerLink::Impl::wait_stream(const std::vector<uint32_t>& key, ncclComm_t comm,
                                       cudaStream_t s, const char* what, const Clockwork& cw) {
  if (cudaEventRecord(done, s) != cudaSuccess) {
    abort(key);
    return internal_error("NCCL {}: cannot record an event on the session's stream", what);
  }
  auto sleep = std::chrono::microseconds(10);
  while (true) {
    cudaError_t e = cudaEventQuery(done);
    if (e == cudaSuccess) return Status::ok();
    if (e != cudaErrorNotReady) {
      abort(key);
      return internal_error("NCCL {}: CUDA error {} while waiting", what, cudaGetErrorString(e));
    }
    ncclResult_t r = ncclSuccess;
    if (nccl().CommGetAsyncError(comm, &r) == ncclSuccess && r != ncclSuccess &&
        r != ncclInProgress) {
      Status st = nccl_error(comm, r, what);
      abort(key);
      return st;
    }
    if (reset_gen != cw.gen || Clock::now() >= cw.deadline) {
      const bool reset = reset_gen != cw.gen;
      // Abort makes the stuck kernels return; buffers freed meanwhile are safe, since the
      // allocator orders their next use after this stream's work.
      abort(key);
      if (reset) return unavailable("NCCL {}: the peer link was reset", what);
      return deadline_exceeded("NCCL {}: not finished within {} ms (a member missing?)", what,
                               opts.timeout_ms);
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min<std::chrono::microseconds>(sleep * 2, std::chrono::milliseconds(1));
  }
}

// Rows of `height` runs of `width` bytes between pitched buffers on `s`.
Status NcclPeerLink::Impl::copy2d(void* dst, size_t dpitch, const void* src, size_t spitch,
                                  size_t width, size_t height, cudaStream_t s) const {
  if (width == 0 || height == 0) return Status::ok();
  if (height == 1 || (dpitch == width && spitch == width)) {
    GT_CUDA_CHECK(cudaMemcpyAsync(dst, src, width * height, cudaMemcpyDeviceToDevice, s));
    return Status::ok();
  }
  if (dpitch < max_pitch && spitch < max_pitch) {
    GT_CUDA_CHECK(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height,
                                    cudaMemcpyDeviceToDevice, s));
    return Status::ok();
  }
  // Pitches beyond what the copy engine takes: rows are then huge, so per-row copies are cheap.
  for (size_t i = 0; i < height; ++i)
    GT_CUDA_CHECK(cudaMemcpyAsync(at(dst, i * dpitch), at(src, i * spitch), width,
                                  cudaMemcpyDeviceToDevice, s));
  return Status::ok();
}

Result<NcclPeerLink::Impl::Comm*> NcclPeerLink::Impl::communicator(
    const std::vector<uint32_t>& key, bool rebuild, uint64_t tag, uint64_t session,
    const Clockwork& cw) {
  if (!rebuild) return &comms.at(key);
  abort(key);  // whatever this member held, the group disagreed about it
  const Nccl& n = nccl();
  const int nranks = static_cast<int>(key.size());
  const int rank = static_cast<int>(std::find(key.begin(), key.end(), self) - key.begin());
  // The unique id travels from the lowest id to the others over the TCP link; a root that
  // cannot make one sends a poisoned id instead, so nobody waits for it.
  HostTensor id({static_cast<int64_t>(sizeof(ncclUniqueId) / 8)}, sizeof(ncclUniqueId) / 8);
  static_assert(sizeof(ncclUniqueId) % 8 == 0);
  CommGroup bg;
  bg.tag = tag | kBootstrapTagBit;
  if (rank == 0) {
    ncclUniqueId uid;
    ncclResult_t r = n.GetUniqueId(&uid);
    Status made = r == ncclSuccess ? Status::ok() : nccl_error(nullptr, r, "GetUniqueId");
    if (made.is_ok()) {
      std::memcpy(id.words.data(), &uid, sizeof uid);
    } else {
      id.t.storage.reset();
      id.t.poison = std::make_shared<const ErrorRecord>(
          ErrorRecord{"nccl bootstrap", made.message(), fmt::format("worker {}", self), made.code()});
    }
    Status sent_all = Status::ok();
    for (size_t k = 1; k < key.size(); ++k) {  // every member gets its message, even after a failure
      bg.peer = key[k];
      Status st = tcp.run(CommId::k_send, bg, &id.t, nullptr, session);
      if (sent_all.is_ok()) sent_all = st;
    }
    GT_RETURN_IF_ERROR(made);
    GT_RETURN_IF_ERROR(sent_all);
  } else {
    bg.peer = key[0];
    GT_RETURN_IF_ERROR(tcp.run(CommId::k_recv, bg, nullptr, &id.t, session));
    if (id.t.poison)
      return unavailable("NCCL bootstrap: worker {} could not create the communicator: {}", key[0],
                         id.t.poison->message);
  }
  ncclUniqueId uid;
  std::memcpy(&uid, id.words.data(), sizeof uid);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // init and calls return at once; settle() polls against the deadline
  Comm c;
  c.print = fnv1a(&uid, sizeof uid) | 1;
  ncclResult_t r = n.CommInitRankConfig(&c.comm, nranks, uid, rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    Status st = nccl_error(c.comm, r, "CommInitRankConfig");
    if (c.comm) n.CommAbort(c.comm);
    return st;
  }
  Comm& slot = comms[key] = c;
  GT_RETURN_IF_ERROR(settle(key, c.comm, r, "CommInitRankConfig", cw));
  spdlog::info("NCCL: communicator for workers [{}] ready (rank {} of {})", join_ids(key), rank,
               nranks);
  return &slot;
}

Status NcclPeerLink::Impl::check(CommId c, const CommGroup& g, const Tensor* input,
                                 const Tensor* out) const {
  const bool collective = c != CommId::k_send && c != CommId::k_recv;
  if (collective && (g.self_index < 0 || static_cast<size_t>(g.self_index) >= g.workers.size() ||
                     g.workers[static_cast<size_t>(g.self_index)] != self))
    return internal_error("this worker ({}) is not at its place in the group", self);
  if (!collective && g.peer == self) return internal_error("a worker cannot exchange with itself");
  if (collective && c != CommId::k_all_reduce && g.extents.size() != g.workers.size())
    return internal_error("one extent per group member expected");
  if (c != CommId::k_recv &&
      (!input || !input->storage ||
       input->storage->bytes() < static_cast<size_t>(input->meta.nbytes())))
    return internal_error("input storage does not hold its tensor");
  if (c == CommId::k_send) return Status::ok();
  if (!out || !out->storage || out->storage->bytes() < static_cast<size_t>(out->meta.nbytes()))
    return internal_error("result storage is missing or too small");
  if (collective) {
    TensorMeta in_meta = input->meta;
    auto want = infer_comm_meta(c, std::span<const TensorMeta>(&in_meta, 1), OpAttrs{}, g);
    if (!want.is_ok()) return want.status();
    if (!(*want == out->meta))
      return internal_error("result meta {} does not match the collective's {}",
                            out->meta.shape.str(), want->shape.str());
  }
  return Status::ok();
}

Status NcclPeerLink::Impl::run(CommId c, const CommGroup& g, const Tensor* input, Tensor* out,
                               uint64_t session) {
  std::lock_guard<std::mutex> lk(mu);
  if (!has_self) return failed_precondition("the peer link does not know this worker's id yet");
  const Clockwork cw{Clock::now() + std::chrono::milliseconds(opts.timeout_ms), reset_gen.load()};
  const char* name = comm_name(c);
  const bool collective = c != CommId::k_send && c != CommId::k_recv;

  // Who takes part: the group in its order (collectives) or the pair in id order (send/recv).
  std::vector<uint32_t> members =
      collective ? g.workers : std::vector<uint32_t>{std::min(self, g.peer), std::max(self, g.peer)};
  std::vector<uint32_t> key = members;
  std::sort(key.begin(), key.end());
  const bool distinct = std::adjacent_find(key.begin(), key.end()) == key.end();

  std::shared_ptr<const ErrorRecord> poison = out ? out->poison : nullptr;
  if (!poison && input && input->poison) poison = input->poison;
  Status local = Status::ok();
  if (!poison) local = check(c, g, input, out);
  if (local.is_ok() && !distinct) local = internal_error("a worker appears twice in the group");
  if (!local.is_ok())
    poison = std::make_shared<const ErrorRecord>(
        ErrorRecord{name, local.message(), fmt::format("worker {}", self), local.code()});

  // 1. The header exchange (see the header file): poison travels here as a TCP marker.
  const auto me = std::find(members.begin(), members.end(), self);
  if (me == members.end()) return internal_error("{}: this worker is not in its group", name);
  CommGroup hg;
  hg.workers = members;
  hg.extents.assign(members.size(), 1);
  hg.tag = g.tag | kHeaderTagBit;
  hg.self_index = static_cast<int>(me - members.begin());
  const int64_t n_members = static_cast<int64_t>(members.size());
  HostTensor hin({1, kWords}, kWords);
  HostTensor hout({n_members, kWords}, static_cast<size_t>(n_members * kWords));
  auto held = comms.find(key);
  if (poison) {
    hin.t.storage.reset();
    hin.t.poison = poison;
  } else {
    const TensorMeta& m = c == CommId::k_recv ? out->meta : input->meta;
    hin.words[kMagic] = kHeaderMagic;
    hin.words[kDType] = static_cast<int64_t>(m.dtype);
    hin.words[kNumel] = m.shape.numel();
    hin.words[kDeviceHash] = device_hash;
    hin.words[kCommPrint] = held != comms.end() ? static_cast<int64_t>(held->second.print) : 0;
  }
  Status st = tcp.run(CommId::k_all_gather, hg, &hin.t, &hout.t, session);
  if (!local.is_ok()) return local;
  if (!st.is_ok()) return st;
  if (hout.t.poison) {  // some member (maybe this one) is poisoned: nobody runs NCCL
    if (out) {
      out->poison = hout.t.poison;
      out->storage.reset();
    }
    return Status::ok();
  }

  // 2. Decisions every member takes alike from the same rows.
  auto row = [&](size_t k, HeaderWord w) { return hout.words[k * kWords + w]; };
  bool same_print = true, shared_gpu = false;
  for (size_t k = 0; k < members.size(); ++k) {
    if (row(k, kMagic) != kHeaderMagic)
      return internal_error("{}: worker {} sent a malformed NCCL header", name, members[k]);
    if (row(k, kDType) != row(0, kDType))
      return internal_error("{}: members disagree about the dtype", name);
    same_print = same_print && row(k, kCommPrint) != 0 && row(k, kCommPrint) == row(0, kCommPrint);
    for (size_t j = 0; j < k; ++j) shared_gpu = shared_gpu || row(j, kDeviceHash) == row(k, kDeviceHash);
  }
  // Element counts: what each member contributes must fit the others' buffers.
  if (c == CommId::k_all_gather) {
    const AxisSplit s(out->meta, g.axis);
    const uint64_t per = s.outer * s.inner / dtype_size(out->meta.dtype);
    for (size_t k = 0; k < members.size(); ++k)
      if (static_cast<uint64_t>(row(k, kNumel)) != per * static_cast<uint64_t>(g.extents[k]))
        return internal_error("{}: worker {} contributes {} elements, its extent says otherwise",
                              name, members[k], row(k, kNumel));
  } else {
    for (size_t k = 0; k < members.size(); ++k)
      if (row(k, kNumel) != row(0, kNumel))
        return internal_error("{}: members disagree about the element count", name);
  }
  if (shared_gpu) {
    if (!opts.staged_fallback)
      return failed_precondition(
          "{}: two members of [{}] run on one GPU, which NCCL cannot serve (peer_transport: "
          "use auto or tcp)", name, join_ids(key));
    // Operators (and device-check.sh) must be able to see that NCCL was not used, and why.
    if (staged_sets.insert(key).second)
      spdlog::info("NCCL: workers [{}] share a GPU, which NCCL cannot serve; they exchange "
                   "through host buffers (staged TCP)", join_ids(key));
    return staged.run(c, g, input, out, session);
  }
  const bool rebuild = !same_print || held == comms.end() ||
                       static_cast<int64_t>(held->second.print) != row(0, kCommPrint);
  // NCCL binds a communicator to the calling thread's current device: make it ours (the
  // executor thread may not have touched the GPU yet).
  GT_RETURN_IF_ERROR(streams.native_stream(session).status());
  GT_ASSIGN_OR_RETURN(Comm * cm, communicator(key, rebuild, g.tag, session, cw));
  // 3. The data, over NCCL.
  return execute(c, g, key, *cm, input, out, session, cw);
}

Status NcclPeerLink::Impl::execute(CommId c, const CommGroup& g, const std::vector<uint32_t>& key,
                                   Comm& cm, const Tensor* input, Tensor* out, uint64_t session,
                                   const Clockwork& cw) {
  const Nccl& n = nccl();
  const char* name = comm_name(c);
  const ncclComm_t comm = cm.comm;  // `cm` dies with an abort: keep the handle
  GT_ASSIGN_OR_RETURN(void* native, streams.native_stream(session));
  const auto s = static_cast<cudaStream_t>(native);
  if (input) {
    GT_RETURN_IF_ERROR(streams.use_on_session(input->storage->data(), session));
  }
  if (out && out->storage) {
    GT_RETURN_IF_ERROR(streams.use_on_session(out->storage->data(), session));
  }
  auto rank_of = [&](uint32_t w) {
    return static_cast<int>(std::find(key.begin(), key.end(), w) - key.begin());
  };
  const void* in = input ? input->storage->data() : nullptr;
  void* o = out && out->storage ? out->storage->data() : nullptr;
  std::shared_ptr<Storage> temp;  // freed after the wait below, on this stream
  auto scratch = [&](uint64_t bytes) -> Result<char*> {
    GT_ASSIGN_OR_RETURN(temp, device.alloc(bytes));
    GT_RETURN_IF_ERROR(streams.use_on_session(temp->data(), session));
    return static_cast<char*>(temp->data());
  };
  auto call = [&](ncclResult_t r, const char* what) { return settle(key, comm, r, what, cw); };

  const int nm = static_cast<int>(c == CommId::k_send || c == CommId::k_recv ? 2 : g.workers.size());
  const int r = g.self_index;
  switch (c) {
    case CommId::k_send: {
      const uint64_t bytes = static_cast<uint64_t>(input->meta.nbytes());
      if (bytes == 0) return Status::ok();
      GT_RETURN_IF_ERROR(call(n.Send(in, bytes, ncclUint8, rank_of(g.peer), comm, s), "Send"));
      GT_RETURN_IF_ERROR(wait_stream(key, comm, s, name, cw));
      sent += bytes;
      return Status::ok();
    }
    case CommId::k_recv: {
      const uint64_t bytes = static_cast<uint64_t>(out->meta.nbytes());
      if (bytes == 0) return Status::ok();
      GT_RETURN_IF_ERROR(call(n.Recv(o, bytes, ncclUint8, rank_of(g.peer), comm, s), "Recv"));
      GT_RETURN_IF_ERROR(wait_stream(key, comm, s, name, cw));
      received += bytes;
      return Status::ok();
    }
    case CommId::k_all_reduce: {
      const uint64_t numel = static_cast<uint64_t>(input->meta.shape.numel());
      if (numel == 0) return Status::ok();
      const DType dt = input->meta.dtype;
      GT_RETURN_IF_ERROR(call(n.AllReduce(in, o, numel, nccl_type(dt), nccl_op(g.reduce, dt), comm, s),
                              "AllReduce"));
      GT_RETURN_IF_ERROR(wait_stream(key, comm, s, name, cw));
      const uint64_t moved = static_cast<uint64_t>(input->meta.nbytes()) * 2 * (nm - 1) / nm;
      sent += moved;  // what a ring moves per member
      received += moved;
      return Status::ok();
    }
    default: break;
  }

  // all_gather / reduce_scatter: shards along `axis` are `outer` runs of extent x inner bytes.
  // NCCL works on contiguous rank-ordered chunks, so other axes (and a group order that is not
  // the id order) go through a packed buffer and strided copies on the stream.
  const bool gather = c == CommId::k_all_gather;
  const TensorMeta& full = gather ? out->meta : input->meta;
  const AxisSplit sp(full, g.axis);
  std::vector<uint64_t> off(static_cast<size_t>(nm) + 1, 0);
  bool equal = true, ordered = true;
  for (int k = 0; k < nm; ++k) {
    off[k + 1] = off[k] + static_cast<uint64_t>(g.extents[k]);
    equal = equal && g.extents[k] == g.extents[0];
    ordered = ordered && rank_of(g.workers[k]) == k;
  }
  const uint64_t total = off[nm];
  const uint64_t row = total * sp.inner;                       // one outer row of the full tensor
  auto run_bytes = [&](int k) { return static_cast<uint64_t>(g.extents[k]) * sp.inner; };
  auto block = [&](int k) { return sp.outer * run_bytes(k); };  // member k's shard
  const uint64_t full_bytes = sp.outer * row;
  if (full_bytes == 0) return Status::ok();

  if (gather) {
    // Packed by group position: block k at outer * off[k] * inner (== out itself when outer is 1).
    char* packed = static_cast<char*>(o);
    if (sp.outer > 1) {
      GT_ASSIGN_OR_RETURN(packed, scratch(full_bytes));
    }
    auto pos = [&](int k) { return sp.outer * off[k] * sp.inner; };
    if (equal && ordered) {
      GT_RETURN_IF_ERROR(call(n.AllGather(in, packed, block(r), ncclUint8, comm, s), "AllGather"));
    } else {  // uneven shards or a reordered group: point to point inside one NCCL group
      GT_RETURN_IF_ERROR(copy2d(packed + pos(r), block(r), in, block(r), block(r), 1, s));
      GT_RETURN_IF_ERROR(call(n.GroupStart(), "GroupStart"));
      ncclResult_t queued = ncclSuccess;  // calls inside a group are only queued
      auto keep = [&](ncclResult_t x) {
        if (queued == ncclSuccess && x != ncclInProgress) queued = x;
      };
      for (int k = 0; k < nm; ++k) {
        if (k == r) continue;
        const int peer = rank_of(g.workers[k]);
        if (block(r) > 0) keep(n.Send(in, block(r), ncclUint8, peer, comm, s));
        if (block(k) > 0) keep(n.Recv(packed + pos(k), block(k), ncclUint8, peer, comm, s));
      }
      ncclResult_t ended = n.GroupEnd();  // always closes the group, even after a failed call
      GT_RETURN_IF_ERROR(call(queued, "Send/Recv"));
      GT_RETURN_IF_ERROR(call(ended, "GroupEnd"));
    }
    if (sp.outer > 1)
      for (int k = 0; k < nm; ++k)
        GT_RETURN_IF_ERROR(copy2d(at(o, off[k] * sp.inner), row, packed + pos(k), run_bytes(k),
                                  run_bytes(k), sp.outer, s));
    GT_RETURN_IF_ERROR(wait_stream(key, comm, s, name, cw));
    sent += block(r) * static_cast<uint64_t>(nm - 1);
    received += full_bytes - block(r);
    return Status::ok();
  }

  // reduce_scatter: always a sum, like the CPU collectives.
  const DType dt = input->meta.dtype;
  const uint64_t es = dtype_size(dt);
  const ncclRedOp_t op = nccl_op(ReduceKind::kSum, dt);
  if (equal) {
    // Chunk for NCCL rank q = block of the member at that rank, contiguous.
    const char* send = static_cast<const char*>(in);
    if (sp.outer > 1 || !ordered) {
      GT_ASSIGN_OR_RETURN(char* packed, scratch(full_bytes));
      for (int k = 0; k < nm; ++k)
        GT_RETURN_IF_ERROR(copy2d(packed + static_cast<uint64_t>(rank_of(g.workers[k])) * block(k),
                                  run_bytes(k), at(in, off[k] * sp.inner), row, run_bytes(k),
                                  sp.outer, s));
      send = packed;
    }
    GT_RETURN_IF_ERROR(call(n.ReduceScatter(send, o, block(r) / es, nccl_type(dt), op, comm, s),
                            "ReduceScatter"));
  } else {
    // Uneven shards: NCCL's reduce-scatter wants equal chunks. Reduce everything, keep ours.
    GT_ASSIGN_OR_RETURN(char* reduced, scratch(full_bytes));
    GT_RETURN_IF_ERROR(call(n.AllReduce(in, reduced, full_bytes / es, nccl_type(dt), op, comm, s),
                            "AllReduce"));
    GT_RETURN_IF_ERROR(copy2d(o, run_bytes(r), reduced + off[r] * sp.inner, row, run_bytes(r),
                              sp.outer, s));
  }
  GT_RETURN_IF_ERROR(wait_stream(key, comm, s, name, cw));
  sent += full_bytes - block(r);
  received += block(r) * static_cast<uint64_t>(nm - 1);
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------

bool NcclPeerLink::available() { return nccl().loaded; }

Result<std::unique_ptr<NcclPeerLink>> NcclPeerLink::create(PeerLink& tcp, Backend& device,
                                                           NcclPeerLinkOptions opts) {
  SessionStreams* streams = device.session_streams();
  if (!streams) return failed_precondition("the NCCL peer link needs a CUDA backend");
  if (!available())
    return unavailable("NCCL is not available (libnccl.so.2 >= 2.14 not found on the library path)");
  // NCCL_COMM_BLOCKING=1 overrides the config's non-blocking init (NCCL's envConfigOverride):
  // a communicator's init would then block until every rank joins, past the deadline that
  // settle() keeps, and a missing peer would hang the executor (and the I/O thread behind its
  // lock). Refused with the reason; the staged link serves instead (peer_transport auto).
  if (const char* b = std::getenv("NCCL_COMM_BLOCKING"); b && std::string_view(b) == "1")
    return failed_precondition(
        "NCCL_COMM_BLOCKING=1 is set: the NCCL link needs non-blocking communicator init for "
        "its timeouts (unset it)");
  auto impl = std::make_unique<Impl>(tcp, device, *streams, opts);
  GT_RETURN_IF_ERROR(impl->init());
  spdlog::info("peer link: NCCL {} on {}", nccl().version, device.device_name());
  return std::unique_ptr<NcclPeerLink>(new NcclPeerLink(std::move(impl)));
}

NcclPeerLink::NcclPeerLink(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

NcclPeerLink::~NcclPeerLink() {
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->abort_all();
  if (impl_->done) cudaEventDestroy(impl_->done);
}

std::string NcclPeerLink::address() const { return impl_->tcp.address(); }

void NcclPeerLink::set_self(uint32_t worker_id) {
  impl_->tcp.set_self(worker_id);
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->self = worker_id;
  impl_->has_self = true;
}

void NcclPeerLink::set_peers(const std::map<uint32_t, std::string>& addresses) {
  impl_->tcp.set_peers(addresses);
}

Status NcclPeerLink::run(CommId comm, const CommGroup& group, const Tensor* input, Tensor* out,
                         uint64_t session) {
  return impl_->run(comm, group, input, out, session);
}

void NcclPeerLink::reset() {
  ++impl_->reset_gen;  // a run in progress gives up at its next poll
  impl_->tcp.reset();
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->abort_all();
}

// Communicators belong to worker groups, not sessions: they stay.
void NcclPeerLink::end_session(uint64_t session) { impl_->tcp.end_session(session); }

PeerStats NcclPeerLink::stats() const {
  PeerStats s = impl_->tcp.stats();  // headers and the staged fallback
  s.bytes_sent += impl_->sent;
  s.bytes_received += impl_->received;
  return s;
}

}  // namespace gt::worker
