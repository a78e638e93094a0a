// The op table, generated from ops.def: the OpId enum, names, wire ids and the table hash
// exchanged in the handshake so mismatched builds refuse each other.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "gt/core/op_id.h"

namespace gt {

// Which instruction attributes an op takes (decoded and checked in op_attrs.h).
enum class AttrKind : uint8_t {
  kNone,
  kShapeDType,  // shape, dtype
  kFull,        // shape, dtype, reals[0] = fill value
  kArange,      // dtype, reals = {start, stop, step}
  kRandom,      // shape, dtype (floating), ints = {seed, counter}
  kHostData,    // shape, dtype, data = first chunk of the row-major bytes
  kHostChunk,   // ints = {byte offset}, data = bytes written there
  kBinary,      // optional scalar operand: ints = {mode, ScalarKind[, exact int]}, reals = {scalar}
  kReduce,      // ints = {dim or kAllDims, keepdim}
  kShape,       // shape = target (no -1: the client resolves it)
  kDims,        // ints = permutation
  kSlice,       // shape = output extents, ints = {start_d, step_d} per dim
  kAxis,        // ints = {axis}
  kDType,       // dtype
  kFillValue,   // reals = {value}[, ints = {exact int}] (must fit the input's dtype)
  kClamp,       // ints = {has_min, has_max, bounds ScalarKind[, exact min, exact max]},
                // reals = {min, max}; the result is promote_with_scalar(input, bounds kind)
  kVar,         // ints = {dim or kAllDims, keepdim}, reals = {correction} (torch.var's)
  kNumClasses,  // ints = {num_classes} (>= 0, resolved by the client)
  kStrided,     // shape = sizes, ints = {offset, stride_0, ..., stride_{r-1}} (elements)
  kMatmul,      // ints = {} or {float32 precision}: 0 highest (default), 1 high (TF32 allowed),
                // 2 medium (bfloat16 allowed) -- torch.set_float32_matmul_precision's levels
  kSort,        // ints = {dim, descending (0 or 1)}
};

// Shape/dtype rules (implemented in shape_rules.cpp).
enum class ShapeRule : uint8_t {
  kCreate, kCreateFloat, kArange, kInPlace,
  kArith, kTrueDiv, kCompare, kWhere,
  kUnarySame, kUnaryFloat,
  kMatmul,
  kReduceSum, kReduceMean, kReduceSame, kReduceIndex,
  kReshape, kPermute, kSlice, kCat,
  kCast, kCopyInto,
  kMaskedFill, kClamp,
  kReduceVar, kReduceFloat,  // floating result: a floating input's dtype, else float32
  kExpand,
  kIndexSelect, kGather, kScatterAdd, kIndexAdd, kOneHot,
  kCumsum,  // the input's shape; sum's dtype rule (floating keeps its dtype, else int64)
  kAsStrided,    // shape = the sizes, the input's dtype; every position inside the input
  kStridedInto,  // in place into input 0; input 1 has the sizes and input 0's dtype
  kArgsort,      // the input's shape, int64: a permutation of 0..n-1 along a valid dim
};


inline constexpr int kNumOps = 0
#define GT_OP(name, wire, arity, attrs, rule) +1
#include "gt/core/ops.def"
#undef GT_OP
    ;

struct OpInfo {
  OpId id;
  const char* name;
  uint32_t wire_id;
  int arity;  // -1: variadic (>= 1)
  AttrKind attrs;
  ShapeRule rule;
};

const OpInfo& op_info(OpId op);
inline const char* op_name(OpId op) { return op_info(op).name; }
// Maps a wire id to the op; nullopt for ids this build does not know.
std::optional<OpId> op_from_wire(uint32_t wire_id);
std::optional<OpId> op_from_name(std::string_view name);
inline uint32_t op_wire_id(OpId op) { return op_info(op).wire_id; }
// FNV-1a over every row of ops.def: builds that disagree on the table refuse each other.
uint64_t op_table_hash();

namespace detail {
inline constexpr ShapeRule kOpRules[] = {
#define GT_OP(name, wire, arity, attrs, rule) ShapeRule::rule,
#include "gt/core/ops.def"
#undef GT_OP
};
}  // namespace detail

// An op's shape rule as a constant expression (op_info(op).rule is not one): kernels and
// tests choose their code from it at compile time. Generated from ops.def like op_info.
constexpr ShapeRule op_rule(OpId op) { return detail::kOpRules[static_cast<size_t>(op)]; }

// Op families used by backends and the dispatcher.
bool is_creation(OpId op);
bool is_in_place(OpId op);  // writes into its first input instead of producing a new tensor

}  // namespace gt
