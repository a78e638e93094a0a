// The one path every op of the client takes (private to libgtclient and its tests: the public
// headers expose the ops, not the wire attributes).
#pragma once

#include <initializer_list>
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

}  // namespace gt::detail
