// Devices (gt/device.h): parsing, the per-thread pin, the signal scope that pins ops to a worker,
// Tensor::to(device), and the TensorOptions forms of the factories.
#include "gt/device.h"

#include <algorithm>
#include <charconv>
#include <deque>
#include <mutex>
#include <set>

#include "gt/autograd.h"
#include "gt/tensor.h"
#include "libgtclient/run_op.h"
#include "libgtclient/session.h"

namespace gt {

namespace {

[[noreturn]] void bad_device(std::string_view spec, const std::string& why) {
  throw Error("device: invalid device '" + std::string(spec) + "'" + (why.empty() ? "" : ": " + why) +
              " (expected \"auto\", \"cpu\", \"cuda\" or \"cuda:N\", N a worker id)");
}

}  // namespace

Device::Device(DeviceType type, int index) : type_(type), index_(index) {
  if (index < -1) throw Error("device: index must be non-negative, got " + std::to_string(index));
  if (index >= 0 && type != kCUDA)
    throw Error(std::string("device: only cuda devices take an index (cuda:N names worker N), got ") +
                (type == kCPU ? "cpu:" : "auto:") + std::to_string(index));
}

Device::Device(std::string_view spec) : type_(kAuto), index_(-1) {
  std::string_view name = spec.substr(0, spec.find(':'));
  if (name == "cuda") type_ = kCUDA;
  else if (name == "cpu") type_ = kCPU;
  else if (name != "auto") bad_device(spec, "");
  if (name.size() == spec.size()) return;
  std::string_view num = spec.substr(name.size() + 1);
  int idx = -1;
  auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), idx);
  if (num.empty() || ec != std::errc() || end != num.data() + num.size() || idx < 0)
    bad_device(spec, "the index must be a non-negative integer");
  if (type_ != kCUDA) bad_device(spec, "only cuda devices take an index");
  index_ = idx;
}

std::string Device::str() const {
  std::string s = type_ == kCUDA ? "cuda" : type_ == kCPU ? "cpu" : "auto";
  if (index_ >= 0) s += ":" + std::to_string(index_);
  return s;
}

DeviceGuard::DeviceGuard(const Device& device)
    : saved_worker_(detail::thread_pin().worker), saved_force_(detail::thread_pin().force) {
  detail::Pin next{device.worker(), false};
  if (next.worker >= 0) detail::device_scope(next.worker);  // refuses a worker that does not exist
  detail::thread_pin() = next;
}

DeviceGuard::~DeviceGuard() { detail::thread_pin() = detail::Pin{saved_worker_, saved_force_}; }

namespace cuda {
int device_count() { return static_cast<int>(detail::Session::get().worker_stats().size()); }
bool is_available() { return device_count() > 0; }
void synchronize() { gt::synchronize(); }
}  // namespace cuda

namespace detail {

Pin& thread_pin() {
  thread_local Pin pin;
  return pin;
}

const std::string& device_scope(int32_t worker) {
  // Registered once per session (a new session after shutdown registers again).
  static std::mutex mu;
  static uint64_t session = 0;
  static std::set<int32_t> known;
  static std::deque<std::string> names;  // names[w]; a deque keeps references valid as it grows
  Session& s = Session::get();
  std::lock_guard<std::mutex> lk(mu);
  if (session != s.session_id()) {
    session = s.session_id();
    known.clear();
  }
  if (static_cast<size_t>(worker) >= names.size())
    for (size_t w = names.size(); w <= static_cast<size_t>(worker); ++w)
      names.push_back("gt.device:cuda:" + std::to_string(w));
  if (!known.count(worker)) {
    std::vector<WorkerStats> ws = s.worker_stats();
    std::sort(ws.begin(), ws.end(), [](const auto& a, const auto& b) { return a.worker_id < b.worker_id; });
    std::string ids;
    bool found = false;
    for (const auto& w : ws) {
      found = found || static_cast<int32_t>(w.worker_id) == worker;
      ids += (ids.empty() ? "" : ", ") + std::to_string(w.worker_id);
    }
    if (!found)
      throw Error(Code::kInvalidArgument,
                  "device cuda:" + std::to_string(worker) + ": no such worker (GT has " +
                      (ids.empty() ? std::string("no workers") : "workers " + ids) + ")");
    Session::ConfigEntry e;
    e.name = names[worker];
    e.has_shard = true;
    e.workers = {static_cast<uint32_t>(worker)};
    s.register_config(e);
    known.insert(worker);
  }
  return names[worker];
}

}  // namespace detail

Device Tensor::device() const {
  int32_t w = checked().device;
  return w >= 0 ? Device(kCUDA, w) : Device(kAuto);
}

Tensor Tensor::to(const Device& device, std::optional<DType> dtype) const {
  const int32_t w = device.worker();
  const DType dt = dtype.value_or(this->dtype());
  if (w < 0 || w == checked().device) return to(dt);
  detail::device_scope(w);
  detail::PinScope pin(w, /*force=*/true);
  return cast(dt);  // cast inside the pin: the dispatcher moves the input, then converts there
}

Tensor Tensor::to(const TensorOptions& options) const {
  return options.device_opt() ? to(*options.device_opt(), options.dtype_opt())
                              : to(options.dtype_or(dtype()));
}

Tensor Tensor::cuda(std::optional<int> index) const {
  return index ? to(Device(kCUDA, *index)) : *this;
}

void detail::move_in_place(const Tensor& t, const Device& device, std::optional<DType> dtype) {
  TensorImpl& impl = *t.impl();
  if (impl.view || impl.grad_fn)
    throw Error("to: only a leaf that is not a view moves in place (got " +
                std::string(impl.view ? "a view" : "a result of " + t.grad_fn_name()) + ")");
  Tensor moved;
  {
    NoGradGuard no_grad;
    moved = t.to(device, dtype);
  }
  if (moved.impl() != t.impl()) {
    // The new value's id becomes t's; the old id goes with `moved`, freed when it dies.
    TensorImpl& m = *moved.impl();
    std::swap(impl.id, m.id);
    std::swap(impl.meta, m.meta);
    std::swap(impl.device, m.device);
    ++impl.version;
  }
  if (impl.grad) move_in_place(Tensor(impl.grad), device, dtype);
}

// ---- factories with TensorOptions -------------------------------------------------------------

namespace {

// Runs `make` with the options' device pinned for its creations, then applies requires_grad.
template <typename F>
Tensor with_options(const TensorOptions& o, F&& make) {
  std::optional<DeviceGuard> guard;
  if (o.device_opt()) guard.emplace(*o.device_opt());
  Tensor t = make();
  if (o.requires_grad()) t.requires_grad_(true);
  return t;
}

}  // namespace

Tensor zeros(Dims shape, const TensorOptions& o) {
  return with_options(o, [&] { return zeros(std::move(shape), o.dtype_or(kFloat32)); });
}
Tensor ones(Dims shape, const TensorOptions& o) {
  return with_options(o, [&] { return ones(std::move(shape), o.dtype_or(kFloat32)); });
}
Tensor empty(Dims shape, const TensorOptions& o) {
  return with_options(o, [&] { return empty(std::move(shape), o.dtype_or(kFloat32)); });
}
Tensor randn(Dims shape, const TensorOptions& o) {
  return with_options(o, [&] { return randn(std::move(shape), o.dtype_or(kFloat32)); });
}
Tensor rand(Dims shape, const TensorOptions& o) {
  return with_options(o, [&] { return rand(std::move(shape), o.dtype_or(kFloat32)); });
}
Tensor full(Dims shape, Scalar value, const TensorOptions& o) {
  return with_options(o, [&] { return full(std::move(shape), value, o.dtype_opt()); });
}
Tensor arange(Scalar end, const TensorOptions& o) {
  return with_options(o, [&] { return arange(0, end, 1, o.dtype_opt()); });
}
Tensor arange(Scalar start, Scalar end, Scalar step, const TensorOptions& o) {
  return with_options(o, [&] { return arange(start, end, step, o.dtype_opt()); });
}
Tensor randint(int64_t low, int64_t high, Dims shape, const TensorOptions& o) {
  return with_options(o, [&] { return randint(low, high, std::move(shape), o.dtype_or(kInt64)); });
}
Tensor eye(int64_t n, const TensorOptions& o) {
  return with_options(o, [&] { return eye(n, std::nullopt, o.dtype_or(kFloat32)); });
}
Tensor linspace(double start, double end, int64_t steps, const TensorOptions& o) {
  return with_options(o, [&] { return linspace(start, end, steps, o.dtype_or(kFloat32)); });
}
Tensor tensor(const TensorLiteral& data, const TensorOptions& o) {
  return with_options(o, [&] { return tensor(data, o.dtype_opt()); });
}

}  // namespace gt
