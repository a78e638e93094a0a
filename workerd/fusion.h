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
//
// A chain may also begin with a cast of its head to float32 (a float16 or int tensor's
// `.float()`) and end with a cast of its value to another dtype (`.half()`, `.to(bf16)`: mixed
// precision), on a device that fuses casts: the kernel converts the head's block as it reads it
// and the value's block as it writes it, with the eager cast's conversion. A cast from float32 to
// float32 inside a chain is its value unchanged (eagerly a copy).
//
// A chain may end in a reduction of its value to one element (sum or mean over every element,
// nothing else reading the value): its tail. The fused kernel then feeds its blocks, in order, to
// the summation the eager reduction uses (the cascade of cpu/cascade_sum.h), so the result is
// bitwise eager's, and only the reduction's one-element result is made. That summation is
// sequential: a chain with a tail runs on one thread, so a tail is fused only up to
// kMaxFusedTailElements (beyond, the chain keeps its threads and the reduction runs after it).
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "gt/core/ops.h"
#include "gt/core/shape.h"
#include "workerd/kernels/op_traits.h"

namespace gt::worker {

struct Tensor;

// Instructions [begin, end) of a hot path; with `tail`, instruction end - 1 is the reduction.
struct FusedChain {
  uint32_t begin = 0, end = 0;
  bool tail = false;
};

enum class FusedTail : uint8_t { kNone, kSum, kMean };

// The reductions a chain may end in.
constexpr bool tail_op(OpId op) { return op == OpId::k_sum || op == OpId::k_mean; }
constexpr int64_t kMaxFusedTailElements = int64_t{1} << 17;

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

// How a step's tensor operand lines up with the chain's elements; both fused kernels (the CPU's
// blocked pass, the generated device programs) follow this one rule (operand_broadcast).
enum class OperandMode : uint8_t {
  kOne,     // one element (a [1] or [1, 1] tensor)
  kSame,    // the chain's shape: element i
  kRepeat,  // the chain's trailing dims (a bias): element i % period
  kGather,  // any other broadcast (a column [m, 1]): through per-dim strides, 0 where broadcast
};
struct OperandBroadcast {
  OperandMode mode = OperandMode::kOne;
  int64_t period = 0;  // kSame, kRepeat: the operand's elements
  int rank = 0;        // kGather: the chain's dims and the operand's strides over them
  std::array<int64_t, kMaxRank> dims{}, strides{};
};
// `operand` broadcasts to `out` (checked by Backend::run_fused).
OperandBroadcast operand_broadcast(const Shape& operand, const Shape& out);

struct FusedStep {
  OpId op;
  FusedArg arg = FusedArg::kNone;
  bool value_right = false;  // the chain's value is the right operand (s - x)
  float scalar = 0;          // kScalar, already converted to float32 as the eager kernel does
  const Tensor* operand = nullptr;  // kTensor (float32)
};

// A 2-D transpose (permute [1, 0]) folded into the matmul that reads it (issue 11 step 3,
// "preplan"): a GEMM reads either operand transposed, so the permutes autograd puts before a
// Linear layer's matmuls (x @ W^T, x^T @ g) copy nothing. Found when a path is defined
// (hot_path_store.cpp): an operand's permute read by the matmul alone and freed after it, its
// input not freed nor written in place before the matmul. At each run (executor_fold.cpp) the
// permute is skipped where the tensors are 2-D float32 and the device runs the GEMM
// (Backend::run_matmul_t); else it runs as written, at the matmul at the latest. The GEMM packs
// either layout into the same panels, so results are bitwise eager's (tested). (Writing a
// transposed result directly -- dW = (x^T g)^T as g^T x -- swaps the GEMM's m and n, which
// changes OpenBLAS's summation: not bitwise, so not done.)
struct TransposeFold {
  uint32_t matmul = 0;
  int32_t a_from = -1, b_from = -1;  // the permute whose result is operand a / b (-1: none)
};

// What a device's transposed GEMM gets (Backend::run_matmul_t): out = op(a) @ op(b), op(t) = t^T
// where ta / tb. All 2-D float32; out allocated.
struct TransposedMatmul {
  const Tensor& a;
  bool ta;
  const Tensor& b;
  bool tb;
  Tensor& out;
  uint64_t session;
};

// What a device's fused-chain kernel gets (Backend::run_fused): `head` the chain's first input,
// `out` its last result (allocated; the shape of head -- or one element, the tail's reduction
// of it). Both float32, but on a device that fuses casts (Backend::fuses_chain_casts): a head of
// another dtype is cast to float32 before the first step, and an out of another dtype (no tail)
// takes the value cast to it after the last step, as the eager cast kernel converts (steps may
// then be empty: a chain of casts alone).
struct FusedArgs {
  const Tensor& head;
  std::span<const FusedStep> steps;
  Tensor& out;
  uint64_t session;
  FusedTail tail = FusedTail::kNone;
};

}  // namespace gt::worker
