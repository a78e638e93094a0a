// The one path every op of the client takes (private to libgtclient and its tests: the public
// headers expose the ops, not the wire attributes).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <span>

#include "gt/tensor.h"
#include "libgtcore/op_attrs.h"

namespace gt::detail {

// Runs the shape rule (throwing gt::Error naming the op on a user error), queues the
// instruction and wraps the result. In-place ops return *inputs[0].
Tensor run_op(OpId op, const OpAttrs& attrs, std::span<const Tensor* const> inputs);
inline Tensor run_op(OpId op, const OpAttrs& attrs, std::initializer_list<const Tensor*> inputs) {
  return run_op(op, attrs, std::span<const Tensor* const>(inputs.begin(), inputs.size()));
}

// The worker this thread's ops are pinned to (gt/device.h): ops with no inputs go to `worker`
// (a DeviceGuard, a factory's device); with `force`, every op does (Tensor::to).
struct Pin {
  int32_t worker = -1;
  bool force = false;
};
Pin& thread_pin();
class PinScope {
 public:
  PinScope(int32_t worker, bool force) : saved_(thread_pin()) { thread_pin() = Pin{worker, force}; }
  ~PinScope() { thread_pin() = saved_; }
  PinScope(const PinScope&) = delete;
  PinScope& operator=(const PinScope&) = delete;

 private:
  Pin saved_;
};
// The name of the signal scope that pins ops to `worker`: registered with the session on first
// use, after checking with the dispatcher that the worker exists (throws gt::Error otherwise).
const std::string& device_scope(int32_t worker);
// Whether a signal scope (the user's, or a backward pass's) is entered: pinned ops then run
// inside their device's scope, which is innermost.
bool in_signal_scope();

// A number operand's promotion category (bool < integer < float).
inline ScalarKind scalar_kind(const Scalar& s) {
  return s.is_bool() ? ScalarKind::kBool : s.is_integral() ? ScalarKind::kInt : ScalarKind::kFloat;
}

// The scalar's exact integer, for an integral one; throws when an integral scalar does not fit
// int64 (an unsigned value of 2^63 or more), as PyTorch refuses such a Python int ("Overflow
// when unpacking long") rather than rounding it.
std::optional<int64_t> checked_exact(const Scalar& s, const char* op);

// Float-only composites (softmax, layer_norm, gelu, losses) refuse integer and bool inputs,
// as PyTorch's kernels do ("not implemented for 'Long'"), instead of computing in float32.
inline void require_floating(const Tensor& x, const char* op, const char* what = "input") {
  if (!is_floating(x.dtype()))
    throw Error(std::string(op) + ": " + what + " must have a floating point dtype, got " +
                dtype_name(x.dtype()));
}

}  // namespace gt::detail
