// Devices, as PyTorch users write them (gt::Device("cuda:1"), t.to(device), TensorOptions).
//
// In GT a device names a worker: "cuda:N" pins a tensor to worker N (a GPU, or a CPU worker on a
// box without GPUs), and every op on pinned tensors runs there. "auto" — also what "cuda" without
// an index and "cpu" mean — leaves the choice to the dispatcher (the session's home worker, or a
// signal scope's placement). A tensor's device is the worker it is pinned to, else auto:
//   - factories given a device (or inside a DeviceGuard) create there;
//   - an op's result is pinned where its first pinned input is; inputs living elsewhere (unpinned,
//     or pinned to another worker) are moved there by the dispatcher, never through the client
//     (PyTorch raises on mixed devices; GT moves, as its signal scopes do);
//   - t.to(device) copies a tensor worker to worker (differentiable); to an unpinned device, and
//     t.cpu(), it returns t itself: GT values reach the host from any worker (.item(), .numpy()).
// A pinned op inside a sharding signal scope runs on its device, not the scope's workers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gt/dtype.h"

namespace gt {

enum class DeviceType : uint8_t { kAuto, kCPU, kCUDA };
inline constexpr DeviceType kAuto = DeviceType::kAuto;
inline constexpr DeviceType kCPU = DeviceType::kCPU;
inline constexpr DeviceType kCUDA = DeviceType::kCUDA;

class Device {
 public:
  Device(DeviceType type = kAuto, int index = -1);  // NOLINT: implicit as torch::Device
  // "auto", "cpu", "cuda", "cuda:N" (N a worker id); anything else throws gt::Error.
  Device(std::string_view spec);  // NOLINT: implicit as torch::Device
  Device(const char* spec) : Device(std::string_view(spec)) {}  // NOLINT
  Device(const std::string& spec) : Device(std::string_view(spec)) {}  // NOLINT

  DeviceType type() const { return type_; }
  int index() const { return index_; }  // -1: none
  bool has_index() const { return index_ >= 0; }
  bool is_cuda() const { return type_ == kCUDA; }
  bool is_cpu() const { return type_ == kCPU; }
  // The worker this device pins tensors to, or -1 (the dispatcher's choice).
  int worker() const { return type_ == kCUDA ? index_ : -1; }
  std::string str() const;  // "cuda:1", "cuda", "cpu", "auto"

  friend bool operator==(const Device& a, const Device& b) {
    return a.type_ == b.type_ && a.index_ == b.index_;
  }

 private:
  DeviceType type_;
  int index_;
};

// Factory options in torch::TensorOptions' builder style:
//   gt::zeros({2, 3}, gt::TensorOptions().dtype(gt::kFloat16).device("cuda:1"))
//   gt::randn({4}, gt::Device("cuda:0"))
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(Device d) : device_(d) {}        // NOLINT: implicit as torch's
  TensorOptions(DeviceType t) : device_(t) {}    // NOLINT
  TensorOptions dtype(DType d) const { TensorOptions o = *this; o.dtype_ = d; return o; }
  TensorOptions device(Device d) const { TensorOptions o = *this; o.device_ = d; return o; }
  TensorOptions requires_grad(bool on) const { TensorOptions o = *this; o.requires_grad_ = on; return o; }

  std::optional<DType> dtype_opt() const { return dtype_; }
  DType dtype_or(DType d) const { return dtype_.value_or(d); }
  std::optional<Device> device_opt() const { return device_; }
  bool requires_grad() const { return requires_grad_; }

 private:
  std::optional<DType> dtype_;
  std::optional<Device> device_;
  bool requires_grad_ = false;
};

// While alive, ops that create tensors from nothing (factories, uploads) on this thread create
// them on `device` (torch's `with torch.device(...)`); an unpinned device restores the default.
class DeviceGuard {
 public:
  explicit DeviceGuard(const Device& device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int saved_worker_;
  bool saved_force_;
};

namespace cuda {
// The devices GT can pin tensors to: its registered workers (one per GPU; CPU workers count too,
// so scripts written for CUDA run unchanged on a CPU-only GT). Asks the dispatcher.
int device_count();
bool is_available();  // device_count() > 0
void synchronize();   // gt::synchronize(): everything queued so far has executed
}  // namespace cuda

}  // namespace gt
