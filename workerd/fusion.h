// Fused elementwise chains (issue 11 step 3). A chain is a run of float32 elementwise ops in which
// each op takes the previous op's result: y = exp(relu(x * a + b) * c). Run eagerly it makes one
// tensor per op, each a full pass over memory; fused, a device computes it in one pass, block by
// block, and only the last result exists. The math of every step is the eager kernel's
// (workerd/kernels/elementwise_math.h) in the same order, so results are bitwise equal.
//
// Which chains exist is decided when a hot path is defined (hot_path_store.cpp), from its
// structure; whether one runs fused is decided at each run from the actual tensors (the
// executor, executor_hot.cpp): float32 throughout, every other operand a scalar attribute or a
// tensor that broadcasts to the chain's shape (a bias, a column [m, 1]), the chain's value never
// broadcast itself. Else the chain's instructions run one by one, as eager.
#pragma once

#include <cstdint>
#include <span>

#include "gt/core/ops.h"
#include "workerd/kernels/op_traits.h"

namespace gt::worker {

struct Tensor;

// Instructions [begin, end) of a hot path.
struct FusedChain {
  uint32_t begin = 0, end = 0;
};

// The ops a chain may hold: the unary elementwise ops and add / sub / mul / div / maximum /
// minimum (pow, // and % have integer and double-exponent special cases of their own).
constexpr bool fusable_op(OpId op) {
  return is_unary_elementwise(op) || op == OpId::k_add || op == OpId::k_sub ||
         op == OpId::k_mul || op == OpId::k_div || op == OpId::k_maximum ||
         op == OpId::k_minimum;
}

enum class FusedArg : uint8_t {
  kNone,    // a unary op
  kScalar,  // a binary op with a scalar (the attribute, or a one-element tensor's value)
  kTensor,  // a binary op with a tensor that broadcasts to out's shape
};

struct FusedStep {
  OpId op;
  FusedArg arg = FusedArg::kNone;
  bool value_right = false;  // the chain's value is the right operand (s - x)
  float scalar = 0;          // kScalar, already converted to float32 as the eager kernel does
  const Tensor* operand = nullptr;  // kTensor (float32)
};

// What a device's fused-chain kernel gets (Backend::run_fused): `head` the chain's first input,
// `out` its last result (allocated; the shape and dtype of head), both float32.
struct FusedArgs {
  const Tensor& head;
  std::span<const FusedStep> steps;
  Tensor& out;
  uint64_t session;
};

}  // namespace gt::worker
