// Tensor handles: lifetime (free on last handle), the single op path (run_op), accessors,
// host upload/fetch and the session-level free functions.
#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "gt/tensor.h"
#include "libgtclient/autograd_node.h"
#include "libgtclient/run_op.h"
#include "libgtclient/view.h"
#include "libgtclient/session.h"
#include "libgtcore/shape_rules.h"

namespace gt::detail {
// Defined by the session implementation: true while the process-wide session exists and has not
// been shut down. Handles dying after that (e.g. in static destructors) free nothing.
bool session_alive();
}  // namespace gt::detail

namespace gt {

TensorImpl::~TensorImpl() {
  if (grad_fn) autograd::detail::adopt_output(*this);  // its node may still need the value
  if (id == 0) return;
  try {
    if (detail::session_alive()) detail::Session::get().free(id);
  } catch (...) {
    // A free that cannot be queued (session torn down, connection lost) frees nothing: the
    // dispatcher frees every tensor of a session that goes away.
  }
}

std::vector<int64_t> Tensor::sizes() const {
  const Shape& s = shape();
  return {s.begin(), s.end()};
}

int64_t Tensor::size(int64_t d) const {
  const Shape& s = shape();
  if (s.rank() == 0)
    throw Error("size: dimension specified as " + std::to_string(d) +
                " but tensor has no dimensions");
  auto nd = normalize_dim(d, s.rank(), "size");
  if (!nd) throw Error(nd.status().message());
  return s[*nd];
}

namespace detail {
namespace {

// Prefixes the op's name when the shape rule's message does not already start with it.
std::string op_error(OpId op, const std::string& message) {
  std::string name = op_name(op);
  if (message.rfind(name + ":", 0) == 0) return message;
  return name + ": " + message;
}

}  // namespace

std::optional<int64_t> checked_exact(const Scalar& s, const char* op) {
  if (!s.is_integral()) return std::nullopt;
  if (!s.exact_int())
    throw Error(std::string(op) + ": value " + std::to_string(s.to_double()) +
                " cannot be converted to int64 without overflow");
  return s.exact_int();
}

Tensor run_op(OpId op, const OpAttrs& attrs, std::span<const Tensor* const> inputs) {
  constexpr size_t kInline = 4;
  std::array<TensorMeta, kInline> meta_buf;
  std::array<uint64_t, kInline> id_buf{};
  std::vector<TensorMeta> meta_vec;
  std::vector<uint64_t> id_vec;
  std::span<TensorMeta> metas(meta_buf.data(), std::min(inputs.size(), kInline));
  std::span<uint64_t> ids(id_buf.data(), std::min(inputs.size(), kInline));
  if (inputs.size() > kInline) {
    meta_vec.resize(inputs.size());
    id_vec.resize(inputs.size());
    metas = meta_vec;
    ids = id_vec;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor* t = inputs[i];
    if (t == nullptr || !t->defined())
      throw Error(Code::kFailedPrecondition, std::string(op_name(op)) + ": input " + std::to_string(i) +
                  " is an undefined tensor");
    refresh_if_stale(*t);  // a view whose base was written since: its value first
    metas[i] = t->impl()->meta;
    ids[i] = t->impl()->id;
  }
  Result<TensorMeta> meta = infer_meta(op, metas, attrs);
  if (!meta) throw Error(meta.status().code(), op_error(op, meta.status().message()));

  const bool in_place = is_in_place(op);
  if (in_place) {
    bool writes_grad = false;  // the written value would require grad (split/chunk parts refuse)
    for (size_t i = 1; i < inputs.size(); ++i)
      writes_grad = writes_grad || (is_floating(metas[0].dtype) && inputs[i]->requires_grad());
    check_view_write(*inputs[0], op_name(op), writes_grad);
    autograd::detail::check_in_place(op, inputs);
  }

  // The result's device (gt/device.h): the first pinned input's, or the thread's pin for a
  // creation (or for every op while Tensor::to forces one). When some input lives elsewhere, the
  // op runs inside the device's signal scope, so the dispatcher moves those inputs there.
  int32_t device = -1;
  for (const Tensor* t : inputs)
    if (t->impl()->device >= 0) {
      device = t->impl()->device;
      break;
    }
  bool elsewhere = false;
  for (const Tensor* t : inputs) elsewhere = elsewhere || t->impl()->device != device;
  if (const Pin& pin = thread_pin(); pin.worker >= 0 && (pin.force || inputs.empty()) && !in_place) {
    elsewhere = elsewhere || device != pin.worker || inputs.empty();
    device = pin.worker;
  }
  if (in_place) device = inputs[0]->impl()->device;
  const bool scoped = device >= 0 && !in_place && (elsewhere || in_signal_scope());

  Session& session = Session::get();
  if (scoped) session.signal_enter(device_scope(device), "", false);
  uint64_t id = 0;
  try {
    id = session.emit(op, attrs, ids);
  } catch (...) {
    if (scoped) session.signal_exit(device_scope(device));
    throw;
  }
  if (scoped) session.signal_exit(device_scope(device));
  if (in_place) {
    autograd::detail::record_in_place(op, attrs, inputs);
    // A view's write reaches its base with one strided_copy_, which bumps the shared version
    // (the view counts as up to date until then); anything else bumps its own.
    if (inputs[0]->impl()->view) write_back_view(*inputs[0]);
    else ++inputs[0]->impl()->version;
    return *inputs[0];
  }
  if (id == 0) throw Error(std::string(op_name(op)) + ": the session returned no result id");
  Tensor out(std::make_shared<TensorImpl>(id, *meta));
  out.impl()->device = device;
  if (is_grad_enabled()) autograd::detail::record(op, attrs, inputs, out);
  return out;
}

Tensor from_host_bytes(const TensorMeta& meta, std::string_view bytes) {
  if (static_cast<int64_t>(bytes.size()) != meta.nbytes())
    throw Error("from_host: " + std::to_string(bytes.size()) + " bytes for a " +
                dtype_name(meta.dtype) + " " + meta.shape.str() + " tensor of " +
                std::to_string(meta.nbytes()) + " bytes");
  const size_t step = Session::get().upload_chunk_bytes();
  OpAttrs attrs = make_shape_dtype(meta.shape, meta.dtype);
  attrs.data = bytes.substr(0, std::min(bytes.size(), step));
  Tensor t = run_op(OpId::k_from_host, attrs, {});
  for (size_t off = step; off < bytes.size(); off += step) {
    OpAttrs chunk;
    chunk.push_int(static_cast<int64_t>(off));
    chunk.data = bytes.substr(off, std::min(step, bytes.size() - off));
    run_op(OpId::k_host_chunk, chunk, {&t});
  }
  return t;
}

size_t Session::upload_chunk_bytes() const { return kHostChunkBytes; }

// Here, not in session_global.cpp: the key function of Session's vtable, which test fakes link
// without the remote session.
void Session::fetch_into(uint64_t id, const TensorMeta& meta, void* dst) {
  HostTensor h = fetch(id);
  if (static_cast<int64_t>(h.bytes.size()) != meta.nbytes())
    throw Error(Code::kDataLoss, "fetch: got " + std::to_string(h.bytes.size()) + " bytes for a " +
                                     dtype_name(meta.dtype) + " " + meta.shape.str() +
                                     " tensor of " + std::to_string(meta.nbytes()) + " bytes")
        .set_deferred();
  if (!h.bytes.empty()) std::memcpy(dst, h.bytes.data(), h.bytes.size());
}

std::shared_ptr<const char> Session::fetch_shared(uint64_t id, const TensorMeta& meta) {
  const auto n = static_cast<size_t>(std::max<int64_t>(meta.nbytes(), 0));
  std::shared_ptr<char[]> buf(new char[std::max<size_t>(n, 1)]);  // not zero-filled: all written
  fetch_into(id, meta, buf.get());
  const char* data = buf.get();
  return std::shared_ptr<const char>(std::move(buf), data);
}

std::shared_ptr<const char> fetch_shared(const Tensor& t) {
  refresh_if_stale(t);
  return Session::get().fetch_shared(t.id(), t.meta());
}

std::string fetch_bytes(const Tensor& t) {
  // Received straight into the string (fetch_into), not assembled elsewhere and copied.
  std::string bytes(static_cast<size_t>(std::max<int64_t>(t.meta().nbytes(), 0)), '\0');
  fetch_into(t, bytes.data(), bytes.size());
  return bytes;
}

void fetch_into(const Tensor& t, void* dst, size_t nbytes) {
  const TensorMeta& meta = t.meta();
  if (static_cast<int64_t>(nbytes) != meta.nbytes())
    throw Error(Code::kInvalidArgument, "fetch: a buffer of " + std::to_string(nbytes) +
                                            " bytes for a " + dtype_name(meta.dtype) + " " +
                                            meta.shape.str() + " tensor of " +
                                            std::to_string(meta.nbytes()) + " bytes");
  refresh_if_stale(t);
  Session::get().fetch_into(t.id(), meta, dst);
}

Shape to_shape(const Dims& dims, const char* what) {
  if (dims.size() > static_cast<size_t>(kMaxRank))
    throw Error(std::string(what) + ": rank " + std::to_string(dims.size()) +
                " exceeds the maximum of " + std::to_string(kMaxRank));
  Shape s;
  for (int64_t d : dims) s.push_back(d);
  return s;
}

int64_t normalize_dim_or_throw(int64_t dim, int64_t rank, const char* what) {
  auto d = normalize_dim(dim, static_cast<int>(rank), what);
  if (!d) throw Error(d.status().message());
  return *d;
}

Shape from_vector_shape(const Dims& dims, size_t n_values) {
  if (dims.size() > static_cast<size_t>(kMaxRank))
    throw Error("from_vector: rank " + std::to_string(dims.size()) + " exceeds the maximum of " +
                std::to_string(kMaxRank));
  Shape s;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = dims[i];
    if (d == -1) {
      if (infer >= 0) throw Error("from_vector: only one dimension can be inferred");
      infer = static_cast<int>(i);
    } else if (d < 0) {
      throw Error("from_vector: invalid shape dimension " + std::to_string(d));
    } else {
      if (d != 0 && known > kMaxNumel / d)
        throw Error("from_vector: shape has too many elements");
      known *= d;
    }
    s.push_back(d);
  }
  const int64_t n = static_cast<int64_t>(n_values);
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      throw Error("from_vector: shape " + s.str() + " is invalid for " + std::to_string(n) +
                  " values");
    s[infer] = n / known;
  }
  Status st = check_shape_size(s, DType::kFloat32);
  if (!st.is_ok()) throw Error("from_vector: " + st.message());
  if (s.numel() != n)
    throw Error("from_vector: shape " + s.str() + " needs " + std::to_string(s.numel()) +
                " values, got " + std::to_string(n));
  return s;
}

}  // namespace detail

void connect(const std::string& address) { detail::Session::connect(address); }

void synchronize() { detail::Session::get().synchronize(); }

std::vector<WorkerStats> worker_stats() { return detail::Session::get().worker_stats(); }

void manual_seed(uint64_t seed) { detail::Session::get().manual_seed(seed); }

std::string Tensor::to_bytes() const { return detail::fetch_bytes(*this); }

Tensor from_bytes(Dims shape, DType dtype, std::string_view bytes) {
  return detail::from_host_bytes(TensorMeta{detail::to_shape(shape, "from_bytes"), dtype}, bytes);
}

int64_t wrap_dim(int64_t dim, int64_t rank, const char* what) {
  return detail::normalize_dim_or_throw(dim, rank, what);
}

}  // namespace gt
