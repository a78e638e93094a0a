// Which kernel family an op belongs to, derived from its shape rule in libgtcore/include/gt/core/ops.def (never
// from a hand-kept list), and for_each_op() to register or dispatch over every op at compile
// time. Compiled by g++ and by nvcc (C++17), host side; the device code only uses it in
// constant expressions.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "gt/core/ops.h"

namespace gt::worker {

using gt::op_rule;  // gt/core/ops.h: an op's shape rule as a constant expression

// Unary elementwise: kUnarySame keeps the dtype (computed in compute_t), kUnaryFloat computes in
// float32 and gives a floating input's dtype, else float32.
constexpr bool is_unary_elementwise(OpId op) {
  return op_rule(op) == ShapeRule::kUnarySame || op_rule(op) == ShapeRule::kUnaryFloat;
}
constexpr bool unary_keeps_dtype(OpId op) { return op_rule(op) == ShapeRule::kUnarySame; }

// Binary elementwise with broadcasting and an optional scalar operand: arithmetic (operands in
// the output dtype), true division (the same, always floating) and comparisons (-> bool).
constexpr bool is_binary_elementwise(OpId op) {
  return op_rule(op) == ShapeRule::kArith || op_rule(op) == ShapeRule::kTrueDiv ||
         op_rule(op) == ShapeRule::kCompare;
}
constexpr bool is_comparison(OpId op) { return op_rule(op) == ShapeRule::kCompare; }
constexpr bool is_true_division(OpId op) { return op_rule(op) == ShapeRule::kTrueDiv; }

template <OpId kOp>
using OpConstant = std::integral_constant<OpId, kOp>;

namespace detail {
template <class F, size_t... I>
constexpr void for_each_op(F& f, std::index_sequence<I...>) {
  (f(OpConstant<static_cast<OpId>(I)>{}), ...);
}
}  // namespace detail

// Calls f(OpConstant<op>{}) for every op of ops.def, so `decltype(c)::value` is a constant
// expression inside f (e.g. `if constexpr (is_unary_elementwise(decltype(c)::value))`).
template <class F>
constexpr void for_each_op(F&& f) {
  detail::for_each_op(f, std::make_index_sequence<static_cast<size_t>(kNumOps)>{});
}

}  // namespace gt::worker
