// infer_meta: one success case per op in ops.def (checked exhaustively over OpId), the error
// cases of every rule, and the dtype promotion tables written out independently of dtype.cpp.
#include <catch2/catch.hpp>

#include <array>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "libgtcore/shape_rules.h"
#include "require_ok.h"
#include "rule_test_util.h"

using namespace gt;
using namespace gt::rule_test;

namespace {

std::string meta_str(const TensorMeta& m) { return m.shape.str() + " " + dtype_name(m.dtype); }

OpAttrs ints(std::initializer_list<int64_t> v) {
  OpAttrs a;
  for (int64_t x : v) a.push_int(x);
  return a;
}

OpAttrs with_data(OpAttrs a, std::string_view d) {
  a.data = d;
  return a;
}

// Slice attributes: extents per dim and {start, step} per dim.
OpAttrs slice(Shape extents, std::initializer_list<int64_t> start_step) {
  OpAttrs a = ints(start_step);
  a.shape = extents;
  a.has_shape = true;
  return a;
}

// as_strided / strided_copy_ attributes: sizes, strides, offset.
OpAttrs strided(Shape sizes, std::vector<int64_t> strides, int64_t offset) {
  return make_strided(sizes, strides, offset);
}

OpAttrs scalar_right(double v, bool integral) {
  return make_binary_scalar(ScalarSide::kRight, v, integral);
}

OpAttrs perm(std::initializer_list<int64_t> p) {
  std::vector<int64_t> v(p);
  return make_permute(v);
}

const std::string& bytes(size_t n) {
  static std::map<size_t, std::string> cache;
  auto it = cache.find(n);
  if (it == cache.end()) it = cache.emplace(n, std::string(n, '\x5a')).first;
  return it->second;
}

struct Case {
  OpId op;
  std::vector<TensorMeta> in;
  OpAttrs attrs;
  TensorMeta want;
  std::string what;
};

// At least one success case per op; the coverage test below fails for an op without one.
std::vector<Case> success_cases() {
  std::vector<Case> c;
  auto add = [&](OpId op, std::vector<TensorMeta> in, OpAttrs a, TensorMeta want,
                 std::string what) { c.push_back({op, std::move(in), a, want, std::move(what)}); };
  using O = OpId;

  // Creation
  add(O::k_zeros, {}, make_shape_dtype({2, 3}, I64), M({2, 3}, I64), "zeros int64");
  add(O::k_zeros, {}, make_shape_dtype({}, F32), M({}, F32), "zeros 0-d");
  add(O::k_zeros, {}, make_shape_dtype({0, 5}, F32), M({0, 5}, F32), "zeros empty");
  add(O::k_ones, {}, make_shape_dtype({4}, BOOL), M({4}, BOOL), "ones bool");
  add(O::k_full, {}, make_full({3, 1}, F16, 2.5), M({3, 1}, F16), "full f16");
  add(O::k_arange, {}, make_arange(0, 10, 3, I64), M({4}, I64), "arange 0,3,6,9");
  add(O::k_arange, {}, make_arange(10, 0, -3, F32), M({4}, F32), "arange 10,7,4,1");
  add(O::k_arange, {}, make_arange(1, 2, 0.3, F32), M({4}, F32), "arange 1,1.3,1.6,1.9");
  add(O::k_arange, {}, make_arange(0, 0, 1, F32), M({0}, F32), "arange empty (start==stop)");
  add(O::k_randn, {}, make_random({2, 2}, F32, 1, 0), M({2, 2}, F32), "randn f32");
  add(O::k_rand, {}, make_random({7}, BF16, 1, 5), M({7}, BF16), "rand bf16");
  add(O::k_from_host, {}, with_data(make_shape_dtype({2, 2}, F32), bytes(16)), M({2, 2}, F32),
      "from_host all bytes");
  add(O::k_from_host, {}, with_data(make_shape_dtype({2, 2}, I64), bytes(8)), M({2, 2}, I64),
      "from_host first chunk");
  add(O::k_host_chunk, {M({4}, F32)}, with_data(ints({8}), bytes(8)), M({4}, F32),
      "host_chunk tail");
  add(O::k_host_chunk, {M({4}, F32)}, with_data(ints({16}), bytes(0)), M({4}, F32),
      "host_chunk empty at end");

  // Binary elementwise
  add(O::k_add, {M({3, 1}), M({1, 4})}, {}, M({3, 4}), "add broadcast");
  add(O::k_add, {M({2, 3}, I32)}, scalar_right(1, true), M({2, 3}, I32), "add int scalar");
  add(O::k_sub, {M({2, 3}, I32), M({3}, I64)}, {}, M({2, 3}, I64), "sub int promote");
  add(O::k_mul, {M({}, BOOL), M({5}, BOOL)}, {}, M({5}, BOOL), "mul bool");
  add(O::k_div, {M({4}, I64), M({4}, I64)}, {}, M({4}, F32), "div true division");
  add(O::k_div, {M({4}, F16), M({4}, F16)}, {}, M({4}, F16), "div f16");
  add(O::k_div, {M({4}, I32)}, scalar_right(2, true), M({4}, F32), "div int by int scalar");
  add(O::k_pow, {M({2}, F16), M({2}, BF16)}, {}, M({2}, F32), "pow f16/bf16");
  add(O::k_maximum, {M({2, 1, 3}), M({4, 1})}, {}, M({2, 4, 3}), "maximum broadcast");
  add(O::k_minimum, {M({0, 3}, I64), M({1, 3}, I64)}, {}, M({0, 3}, I64), "minimum empty");
  add(O::k_floor_divide, {M({2, 3}, I32), M({3}, I64)}, {}, M({2, 3}, I64), "floor_divide int");
  add(O::k_remainder, {M({4}, I32)}, scalar_right(2.5, false), M({4}, F32), "remainder float scalar");

  // Comparisons
  add(O::k_eq, {M({3, 1}, I64), M({1, 2}, F32)}, {}, M({3, 2}, BOOL), "eq");
  add(O::k_ne, {M({2}, BOOL), M({2}, BOOL)}, {}, M({2}, BOOL), "ne");
  add(O::k_lt, {M({5}, F16)}, scalar_right(0.5, false), M({5}, BOOL), "lt scalar");
  add(O::k_le, {M({}), M({2, 2})}, {}, M({2, 2}, BOOL), "le 0-d");
  add(O::k_gt, {M({1}, I32), M({6}, I32)}, {}, M({6}, BOOL), "gt");
  add(O::k_ge, {M({2, 1, 1}), M({3, 1})}, {}, M({2, 3, 1}, BOOL), "ge");

  // Selection
  add(O::k_where, {M({3, 1}, BOOL), M({1, 4}, F32), M({}, F16)}, {}, M({3, 4}, F32), "where");
  add(O::k_where, {M({2}, BOOL), M({2}, I32), M({2}, I64)}, {}, M({2}, I64), "where int");

  // Unary
  add(O::k_neg, {M({2, 2}, I32)}, {}, M({2, 2}, I32), "neg int");
  add(O::k_exp, {M({3}, I64)}, {}, M({3}, F32), "exp int -> float32");
  add(O::k_log, {M({3}, F16)}, {}, M({3}, F16), "log f16");
  add(O::k_sqrt, {M({3}, BOOL)}, {}, M({3}, F32), "sqrt bool -> float32");
  add(O::k_abs, {M({3}, I32)}, {}, M({3}, I32), "abs int");
  add(O::k_relu, {M({1, 2}, BF16)}, {}, M({1, 2}, BF16), "relu bf16");
  add(O::k_sigmoid, {M({4}, I32)}, {}, M({4}, F32), "sigmoid int");
  add(O::k_tanh, {M({}, F32)}, {}, M({}, F32), "tanh 0-d");
  // Every unary elementwise op of the table (a new one included): same shape; float32 from
  // integers when it computes in floating point (kUnaryFloat), else the input's dtype.
  for (int i = 0; i < kNumOps; ++i) {
    const auto op = static_cast<OpId>(i);
    if (op_rule(op) != ShapeRule::kUnarySame && op_rule(op) != ShapeRule::kUnaryFloat) continue;
    const DType want = op_rule(op) == ShapeRule::kUnaryFloat ? F32 : I32;
    add(op, {M({2, 3}, I32)}, {}, M({2, 3}, want), "unary family on int32");
    add(op, {M({0, 3}, BF16)}, {}, M({0, 3}, BF16), "unary family on empty bf16");
  }

  // Matmul: 2-D, 1-D operands, batched with broadcasting
  add(O::k_matmul, {M({2, 3}), M({3, 4})}, {}, M({2, 4}), "matmul 2-D");
  add(O::k_matmul, {M({3}), M({3})}, {}, M({}), "matmul vec.vec");
  add(O::k_matmul, {M({3}), M({3, 4})}, {}, M({4}), "matmul vec@mat");
  add(O::k_matmul, {M({2, 3}), M({3})}, {}, M({2}), "matmul mat@vec");
  add(O::k_matmul, {M({5, 1, 2, 3}), M({4, 3, 6})}, {}, M({5, 4, 2, 6}), "matmul batch bcast");
  add(O::k_matmul, {M({7, 2, 3}), M({3})}, {}, M({7, 2}), "matmul batch@vec");
  add(O::k_matmul, {M({3}), M({7, 3, 4})}, {}, M({7, 4}), "matmul vec@batch");
  add(O::k_matmul, {M({2, 3}, F16), M({3, 4}, F16)}, {}, M({2, 4}, F16), "matmul f16");
  add(O::k_matmul, {M({2, 0}), M({0, 4})}, {}, M({2, 4}), "matmul k=0");

  // Reductions
  add(O::k_sum, {M({2, 3}, I32)}, make_reduce(1, false), M({2}, I64), "sum int dim");
  add(O::k_sum, {M({2, 3})}, make_reduce(1, true), M({2, 1}), "sum keepdim");
  add(O::k_sum, {M({2, 3})}, make_reduce(-1, false), M({2}), "sum dim -1");
  add(O::k_sum, {M({2, 3})}, make_reduce(-2, true), M({1, 3}), "sum dim -2 keepdim");
  add(O::k_sum, {M({2, 3}, BOOL)}, make_reduce(kAllDims, false), M({}, I64), "sum all bool");
  add(O::k_sum, {M({2, 3})}, make_reduce(kAllDims, true), M({1, 1}), "sum all keepdim");
  add(O::k_sum, {M({0, 3})}, make_reduce(kAllDims, false), M({}), "sum all empty");
  add(O::k_sum, {M({2, 0})}, make_reduce(1, false), M({2}), "sum over empty dim");
  add(O::k_sum, {M({})}, make_reduce(0, false), M({}), "sum 0-d dim 0");
  add(O::k_sum, {M({})}, make_reduce(-1, true), M({}), "sum 0-d dim -1");
  add(O::k_mean, {M({4, 5}, BF16)}, make_reduce(0, false), M({5}, BF16), "mean bf16");
  add(O::k_mean, {M({4, 5}, F16)}, make_reduce(kAllDims, false), M({}, F16), "mean f16 all");
  add(O::k_mean, {M({0})}, make_reduce(kAllDims, false), M({}), "mean empty");
  add(O::k_max, {M({2, 3, 4}, I32)}, make_reduce(1, true), M({2, 1, 4}, I32), "max keepdim");
  add(O::k_max, {M({0, 3})}, make_reduce(1, false), M({0}), "max over non-empty dim");
  add(O::k_min, {M({2, 3}, BF16)}, make_reduce(kAllDims, false), M({}, BF16), "min all");
  add(O::k_argmax, {M({2, 3}, F16)}, make_reduce(-1, false), M({2}, I64), "argmax");
  add(O::k_argmin, {M({2, 3})}, make_reduce(kAllDims, false), M({}, I64), "argmin all");
  add(O::k_cumsum, {M({2, 3}, F16)}, make_axis(1), M({2, 3}, F16), "cumsum keeps f16");
  add(O::k_cumsum, {M({2, 3}, I32)}, make_axis(-2), M({2, 3}, I64), "cumsum int32 dim -2");
  add(O::k_cumsum, {M({4}, BOOL)}, make_axis(0), M({4}, I64), "cumsum bool -> int64");
  add(O::k_cumsum, {M({})}, make_axis(-1), M({}), "cumsum 0-d dim -1");
  add(O::k_cumsum, {M({0, 3}, BF16)}, make_axis(0), M({0, 3}, BF16), "cumsum empty");
  add(O::k_argsort, {M({2, 3}, F16)}, make_sort(1, false), M({2, 3}, I64), "argsort f16");
  add(O::k_argsort, {M({4}, BOOL)}, make_sort(-1, true), M({4}, I64), "argsort bool descending");
  add(O::k_argsort, {M({})}, make_sort(0, false), M({}, I64), "argsort 0-d");
  add(O::k_argsort, {M({0, 3}, I32)}, make_sort(0, false), M({0, 3}, I64), "argsort empty");

  // Layout
  add(O::k_reshape, {M({2, 3}, I32)}, make_reshape({3, 2}), M({3, 2}, I32), "reshape");
  add(O::k_reshape, {M({})}, make_reshape({1, 1}), M({1, 1}), "reshape 0-d");
  add(O::k_reshape, {M({0, 3})}, make_reshape({5, 0}), M({5, 0}), "reshape empty");
  add(O::k_permute, {M({2, 3, 4}, F16)}, perm({2, 0, 1}), M({4, 2, 3}, F16), "permute");
  add(O::k_permute, {M({})}, perm({}), M({}), "permute 0-d");
  add(O::k_slice, {M({10}, I64)}, slice({3}, {2, 3}), M({3}, I64), "slice 2,5,8");
  add(O::k_slice, {M({4, 6})}, slice({2, 3}, {1, 2, 5, -2}), M({2, 3}), "slice 2-D neg step");
  add(O::k_slice, {M({10})}, slice({0}, {100, 1}), M({0}), "slice empty, start unchecked");
  add(O::k_slice, {M({10})}, slice({1}, {9, kI64Max}), M({1}), "slice huge step");
  add(O::k_cat, {M({2, 3}), M({4, 3})}, make_axis(0), M({6, 3}), "cat axis 0");
  add(O::k_cat, {M({2, 3}), M({2, 5}), M({2, 0})}, make_axis(-1), M({2, 8}), "cat axis -1");
  add(O::k_cat, {M({2}, I32), M({3}, F16)}, make_axis(0), M({5}, F16), "cat promote");
  add(O::k_cat, {M({2, 2})}, make_axis(1), M({2, 2}), "cat single");
  // (every accepted and refused form of the strided views: test_strided_rules.cpp)
  add(O::k_as_strided, {M({2, 3}, BF16)}, strided({3, 2}, {1, 3}, 0), M({3, 2}, BF16),
      "as_strided transpose");

  // Types and in-place
  add(O::k_cast, {M({2, 3})}, make_cast(I64), M({2, 3}, I64), "cast");
  add(O::k_copy_, {M({2, 3}, F16), M({3}, F32)}, {}, M({2, 3}, F16), "copy_ broadcast src");
  add(O::k_copy_, {M({2, 3}), M({2, 3}, I64)}, {}, M({2, 3}), "copy_ same shape");
  add(O::k_strided_copy_, {M({4, 5}, I32), M({4}, I32)}, strided({4}, {5}, 2), M({4, 5}, I32),
      "strided_copy_ a column");

  // masked_fill, clamp, var, logsumexp, expand
  add(O::k_masked_fill, {M({2, 3}, I32), M({3}, BOOL)}, make_fill_value(1.5), M({2, 3}, I32),
      "masked_fill keeps x's dtype");
  add(O::k_masked_fill, {M({3}), M({2, 1}, BOOL)}, make_fill_value(0), M({2, 3}),
      "masked_fill broadcasts both");
  add(O::k_clamp, {M({4}, F16)}, make_clamp(-1.0, 1.0, false), M({4}, F16), "clamp f16");
  add(O::k_clamp, {M({4}, I64)}, make_clamp(0.0, std::nullopt, true), M({4}, I64),
      "clamp int, integral min");
  add(O::k_clamp, {M({4}, I32)}, make_clamp(std::nullopt, 2.5, false), M({4}, F32),
      "clamp int, float max -> float32");
  // torch.clamp: an integer bound lifts a bool x to int64 (only a bool result is refused)
  add(O::k_clamp, {M({4}, BOOL)}, make_clamp(0.0, 1.0, true), M({4}, I64), "clamp bool, int bounds");
  add(O::k_clamp, {M({4}, BOOL)}, make_clamp(0.5, std::nullopt, false), M({4}, F32),
      "clamp bool, float bound");
  add(O::k_var, {M({3, 4})}, make_var(1, false, 1), M({3}), "var dim");
  add(O::k_var, {M({3, 4}, BF16)}, make_var(kAllDims, true, 0), M({1, 1}, BF16), "var all keepdim");
  add(O::k_var, {M({3, 4}, F16)}, make_var(-2, true, 2.5), M({1, 4}, F16), "var f16 keepdim");
  add(O::k_var, {M({0})}, make_var(0, false, 1), M({}), "var empty");
  add(O::k_logsumexp, {M({3, 4})}, make_reduce(-1, true), M({3, 1}), "logsumexp keepdim");
  add(O::k_logsumexp, {M({3, 4}, I64)}, make_reduce(kAllDims, false), M({}, F32), "logsumexp int");
  add(O::k_logsumexp, {M({0, 2}, F16)}, make_reduce(0, false), M({2}, F16), "logsumexp empty dim");
  add(O::k_expand, {M({3, 1}, I64)}, make_reshape({2, 3, 4}), M({2, 3, 4}, I64), "expand");
  add(O::k_expand, {M({})}, make_reshape({2, 2}), M({2, 2}), "expand 0-d");
  add(O::k_expand, {M({1, 4})}, make_reshape({0, 4}), M({0, 4}), "expand to empty");

  // Indexing
  add(O::k_index_select, {M({5, 3}, F16), M({7}, I64)}, make_axis(0), M({7, 3}, F16),
      "index_select rows");
  add(O::k_index_select, {M({5, 3}), M({}, I32)}, make_axis(-1), M({5, 1}), "index_select 0-d index");
  add(O::k_index_select, {M({5, 3}), M({0}, I64)}, make_axis(0), M({0, 3}), "index_select empty");
  add(O::k_gather, {M({5, 3}), M({2, 3}, I64)}, make_axis(1), M({2, 3}), "gather");
  add(O::k_gather, {M({5, 3}, BOOL), M({9, 1}, I32)}, make_axis(0), M({9, 1}, BOOL), "gather long dim");
  add(O::k_gather, {M({}), M({}, I64)}, make_axis(0), M({}), "gather 0-d");
  add(O::k_scatter_add, {M({5, 3}), M({2, 3}, I64), M({2, 4})}, make_axis(0), M({5, 3}),
      "scatter_add src larger than index");
  add(O::k_index_add, {M({5, 3}, I32), M({4}, I64), M({5, 4}, I32)}, make_axis(1),
      M({5, 3}, I32), "index_add dim 1");
  add(O::k_one_hot, {M({2, 3}, I64)}, make_num_classes(4), M({2, 3, 4}, I64), "one_hot");
  add(O::k_one_hot, {M({0}, I32)}, make_num_classes(0), M({0, 0}, I64), "one_hot empty");
  return c;
}

struct ErrCase {
  OpId op;
  std::vector<TensorMeta> in;
  OpAttrs attrs;
  std::string what;
};

std::vector<ErrCase> error_cases() {
  std::vector<ErrCase> c;
  auto add = [&](OpId op, std::vector<TensorMeta> in, OpAttrs a, std::string what) {
    c.push_back({op, std::move(in), a, std::move(what)});
  };
  using O = OpId;
  OpAttrs bad_dtype;
  bad_dtype.dtype = static_cast<DType>(9);

  // Arity
  add(O::k_add, {M({2}), M({2}), M({2})}, {}, "add with 3 inputs");
  add(O::k_add, {}, {}, "add with no inputs");
  add(O::k_neg, {}, {}, "neg with no inputs");
  add(O::k_matmul, {M({2, 2})}, {}, "matmul with 1 input");
  add(O::k_where, {M({2}, BOOL), M({2})}, {}, "where with 2 inputs");
  add(O::k_cat, {}, make_axis(0), "cat with no inputs");
  add(O::k_zeros, {M({2})}, make_shape_dtype({2}, F32), "zeros with an input");
  add(O::k_cast, {M({2})}, bad_dtype, "invalid dtype");

  // Creation
  add(O::k_zeros, {}, {}, "zeros without shape");
  add(O::k_zeros, {}, make_shape_dtype({2, -1}, F32), "zeros negative dim");
  add(O::k_ones, {}, make_shape_dtype({1 << 30, 1 << 30}, F32), "ones too many elements");
  add(O::k_full, {}, make_shape_dtype({2}, F32), "full without value");
  add(O::k_randn, {}, make_random({2}, I64, 1, 0), "randn int64");
  add(O::k_rand, {}, make_random({2}, BOOL, 1, 0), "rand bool");
  add(O::k_rand, {}, make_shape_dtype({2}, F32), "rand without seed/counter");
  add(O::k_from_host, {}, with_data(make_shape_dtype({2, 2}, F32), bytes(17)),
      "from_host too much data");
  add(O::k_host_chunk, {M({4})}, with_data(ints({12}), bytes(8)), "host_chunk overrun");
  add(O::k_host_chunk, {M({4})}, with_data(ints({-1}), bytes(1)), "host_chunk negative offset");
  add(O::k_host_chunk, {M({4})}, with_data(ints({17}), bytes(0)), "host_chunk offset past end");
  add(O::k_host_chunk, {M({4})}, with_data({}, bytes(4)), "host_chunk without offset");
  add(O::k_arange, {}, make_arange(0, 10, 0, F32), "arange step 0");
  add(O::k_arange, {}, make_arange(5, 0, 1, I32), "arange step away from the end");
  add(O::k_arange, {}, make_arange(0, 5, -0.5, F32), "arange negative step away from the end");
  add(O::k_arange, {}, make_arange(0, std::numeric_limits<double>::infinity(), 1, F32),
      "arange infinite stop");
  add(O::k_arange, {}, make_arange(std::numeric_limits<double>::quiet_NaN(), 1, 1, F32),
      "arange NaN start");
  add(O::k_arange, {}, make_arange(0, 3, 1, BOOL), "arange bool");
  add(O::k_arange, {}, make_arange(0, 1e300, 1, F32), "arange too many");
  add(O::k_arange, {}, make_cast(F32), "arange without reals");

  // Binary / compare / where
  add(O::k_add, {M({2, 3}), M({4})}, {}, "add broadcast mismatch");
  add(O::k_mul, {M({2, 3}), M({3, 2})}, {}, "mul broadcast mismatch");
  add(O::k_eq, {M({5}), M({4})}, {}, "eq broadcast mismatch");
  add(O::k_add, {M({2}), M({2})}, scalar_right(1, true), "two tensors and a scalar");
  add(O::k_add, {M({2})}, {}, "one tensor and no scalar");
  add(O::k_add, {M({2})}, make_binary_scalar(ScalarSide::kNone, 1, true),
      "one tensor, scalar side none");
  add(O::k_sub, {M({2}, BOOL), M({2}, BOOL)}, {}, "sub bool");
  // torch refuses `-` with any bool operand, whatever the result dtype
  add(O::k_sub, {M({2}, F32), M({2}, BOOL)}, {}, "sub float - bool");
  add(O::k_sub, {M({2}, BOOL)}, scalar_right(1, true), "sub bool - int scalar");
  add(O::k_sub, {M({2}, I32)}, make_binary_scalar(ScalarSide::kLeft, 1, ScalarKind::kBool, 1),
      "sub bool scalar - int");
  {
    OpAttrs bad = scalar_right(1, true);
    bad.ints[1] = 3;
    add(O::k_add, {M({2})}, bad, "bad scalar kind");
  }
  add(O::k_pow, {M({2}, I32)}, make_binary_scalar(ScalarSide::kRight, 0x1p40, true, int64_t{1} << 40),
      "pow int32 exponent beyond int32");
  add(O::k_pow, {M({2}, F16)}, scalar_right(70000, false), "pow f16 exponent beyond f16");
  add(O::k_pow, {M({2}, BOOL), M({2}, BOOL)}, {}, "pow bool");
  add(O::k_where, {M({2}, F32), M({2}), M({2})}, {}, "where non-bool cond");
  add(O::k_where, {M({2}, I64), M({2}), M({2})}, {}, "where int cond");
  add(O::k_where, {M({3}, BOOL), M({2}), M({2})}, {}, "where broadcast mismatch cond");
  add(O::k_where, {M({2}, BOOL), M({2}), M({3})}, {}, "where broadcast mismatch y");

  // Unary
  add(O::k_neg, {M({2}, BOOL)}, {}, "neg bool");
  add(O::k_relu, {M({2}, BOOL)}, {}, "relu bool");
  add(O::k_abs, {M({2}, BOOL)}, {}, "abs bool");  // torch: "abs_cpu" not implemented for 'Bool'

  // Matmul
  add(O::k_matmul, {M({2, 3}), M({4, 5})}, {}, "matmul k mismatch");
  add(O::k_matmul, {M({3}), M({4})}, {}, "matmul vec k mismatch");
  add(O::k_matmul, {M({3}), M({4, 5})}, {}, "matmul vec@mat k mismatch");
  add(O::k_matmul, {M({2, 2, 3}), M({3, 3, 4})}, {}, "matmul batch mismatch");
  add(O::k_matmul, {M({}), M({3})}, {}, "matmul 0-d");
  add(O::k_matmul, {M({2, 2}, BOOL), M({2, 2}, BOOL)}, {}, "matmul bool");
  // torch.matmul does not promote
  add(O::k_matmul, {M({2, 3}, F16), M({3, 4}, F32)}, {}, "matmul f16 @ f32");
  add(O::k_matmul, {M({2, 3}, I32), M({3, 4}, I64)}, {}, "matmul int32 @ int64");

  // Reductions
  add(O::k_sum, {M({2, 3})}, make_reduce(2, false), "sum dim 2 of rank 2");
  add(O::k_sum, {M({2, 3})}, make_reduce(-3, false), "sum dim -3 of rank 2");
  add(O::k_mean, {M({})}, make_reduce(1, false), "mean dim 1 of 0-d");
  add(O::k_sum, {M({2, 3})}, ints({0}), "sum without keepdim");
  add(O::k_max, {M({0, 3})}, make_reduce(kAllDims, false), "max of empty");
  add(O::k_min, {M({2, 0})}, make_reduce(1, true), "min over empty dim");
  add(O::k_max, {M({0, 3})}, make_reduce(0, false), "max over empty dim 0");
  add(O::k_argmax, {M({0})}, make_reduce(kAllDims, false), "argmax of empty");
  add(O::k_argmin, {M({3, 0})}, make_reduce(-1, false), "argmin over empty dim");
  // torch: mean and var need a floating input; argmax/argmin refuse bool
  add(O::k_mean, {M({4, 5}, I64)}, make_reduce(0, false), "mean int");
  add(O::k_mean, {M({4, 5}, BOOL)}, make_reduce(kAllDims, false), "mean bool");
  add(O::k_var, {M({3, 4}, I32)}, make_var(-2, true, 2.5), "var int");
  add(O::k_argmax, {M({3}, BOOL)}, make_reduce(kAllDims, false), "argmax bool");
  add(O::k_argmin, {M({3}, BOOL)}, make_reduce(0, false), "argmin bool");
  add(O::k_cumsum, {M({2, 3})}, make_axis(2), "cumsum dim 2 of rank 2");
  add(O::k_cumsum, {M({2, 3})}, make_axis(-3), "cumsum dim -3 of rank 2");
  add(O::k_cumsum, {M({})}, make_axis(1), "cumsum dim 1 of 0-d");
  add(O::k_cumsum, {M({2, 3})}, {}, "cumsum without dim");
  add(O::k_argsort, {M({2, 3})}, make_sort(2, false), "argsort dim 2 of rank 2");
  add(O::k_argsort, {M({2, 3})}, make_axis(1), "argsort without descending");
  add(O::k_argsort, {M({2, 3})}, [] {
    OpAttrs a = make_sort(1, true);
    a.ints[1] = 7;  // from the wire: neither 0 nor 1
    return a;
  }(), "argsort descending 7");

  // Layout
  add(O::k_reshape, {M({2, 3})}, make_reshape({4, 2}), "reshape numel mismatch");
  add(O::k_reshape, {M({2, 3})}, make_reshape({6, 0}), "reshape to empty");
  add(O::k_reshape, {M({2, 3})}, {}, "reshape without shape");
  add(O::k_reshape, {M({2, 3})}, make_reshape({-2, -3}), "reshape negative dims");
  add(O::k_permute, {M({2, 3, 4})}, perm({0, 0, 1}), "permute duplicate");
  add(O::k_permute, {M({2, 3, 4})}, perm({0, 1, 3}), "permute out of range");
  add(O::k_permute, {M({2, 3, 4})}, perm({-1, 0, 1}), "permute negative");
  add(O::k_permute, {M({2, 3, 4})}, perm({1, 0}), "permute too few");
  add(O::k_permute, {M({2, 3})}, perm({1, 0, 2}), "permute too many");
  add(O::k_slice, {M({10})}, slice({4}, {2, 3}), "slice 2,5,8,11 overruns");
  add(O::k_slice, {M({10})}, slice({1}, {10, 1}), "slice start == size");
  add(O::k_slice, {M({10})}, slice({1}, {-1, 1}), "slice negative start");
  add(O::k_slice, {M({10})}, slice({6}, {9, -2}), "slice 9..-1 step -2 overruns");
  add(O::k_slice, {M({10})}, slice({1}, {0, 0}), "slice step 0");
  add(O::k_slice, {M({10})}, slice({2}, {0, kI64Max}), "slice huge step overruns");
  // A hostile step of INT64_MIN: refused, but note rule_slice computes -step (signed overflow,
  // reported by UBSan; see the report to the lead).
  add(O::k_slice, {M({10})}, slice({2}, {5, std::numeric_limits<int64_t>::min()}),
      "slice step INT64_MIN overruns");
  add(O::k_slice, {M({10})}, slice({1, 1}, {0, 1}), "slice extent rank mismatch");
  add(O::k_slice, {M({10})}, slice({1}, {0}), "slice missing step");
  add(O::k_slice, {M({10})}, ints({0, 1}), "slice without extents");
  add(O::k_cat, {M({2, 3}), M({3, 4})}, make_axis(0), "cat shape mismatch");
  add(O::k_cat, {M({2, 3}), M({2, 3, 1})}, make_axis(0), "cat rank mismatch");
  add(O::k_cat, {M({}), M({})}, make_axis(0), "cat 0-d");
  add(O::k_cat, {M({2, 3}), M({2, 3})}, make_axis(2), "cat axis out of range");
  add(O::k_cat, {M({2, 3}), M({2, 3})}, make_axis(-3), "cat axis -3");
  add(O::k_cat, {M({2, 3}), M({2, 3})}, {}, "cat without axis");

  // copy_
  add(O::k_copy_, {M({3}), M({2, 3})}, {}, "copy_ source larger than destination");
  add(O::k_copy_, {M({2, 3}), M({4})}, {}, "copy_ incompatible");

  // Strided views (the rest: test_strided_rules.cpp)
  add(O::k_as_strided, {M({2, 3})}, strided({3, 2}, {1, 4}, 0), "as_strided reaches past the end");
  add(O::k_as_strided, {M({6})}, strided({3}, {-1}, 1), "as_strided reaches before the start");
  add(O::k_as_strided, {M({6})}, strided({3}, {}, 0), "as_strided without a stride");
  add(O::k_strided_copy_, {M({4, 5}), M({5})}, strided({4}, {5}, 2), "strided_copy_ source shape");
  add(O::k_strided_copy_, {M({4, 5}), M({4}, F16)}, strided({4}, {5}, 2),
      "strided_copy_ source dtype");

  // masked_fill, clamp, var, logsumexp, expand
  add(O::k_masked_fill, {M({2, 3}), M({2, 3}, I64)}, make_fill_value(0), "masked_fill int mask");
  add(O::k_masked_fill, {M({2, 3}), M({4}, BOOL)}, make_fill_value(0), "masked_fill mismatch");
  add(O::k_masked_fill, {M({2, 3}), M({3}, BOOL)}, {}, "masked_fill without value");
  add(O::k_clamp, {M({2})}, make_clamp(std::nullopt, std::nullopt, false), "clamp no bounds");
  add(O::k_clamp, {M({2}, BOOL)},
      make_clamp(ClampBound{1, ScalarKind::kBool, 1}, ClampBound{1, ScalarKind::kBool, 1}),
      "clamp bool with bool bounds (a bool result)");
  add(O::k_clamp, {M({2}, I32)}, make_clamp(ClampBound{0x1p40, ScalarKind::kInt, int64_t{1} << 40},
                                            std::nullopt),
      "clamp int32 with a bound beyond int32");
  add(O::k_clamp, {M({2})}, make_clamp(std::nullopt, -1e39, false), "clamp f32 bound beyond f32");
  {
    OpAttrs bad = make_clamp(0.0, std::nullopt, true);
    bad.ints[2] = 3;
    add(O::k_clamp, {M({2})}, bad, "clamp bad bounds kind");
  }
  add(O::k_clamp, {M({2})}, ints({1, 1, 0}), "clamp without reals");
  add(O::k_var, {M({2, 3})}, make_reduce(1, false), "var without correction");
  add(O::k_var, {M({2, 3})}, make_var(1, false, std::numeric_limits<double>::quiet_NaN()),
      "var NaN correction");
  add(O::k_var, {M({2, 3})}, make_var(2, false, 1), "var dim out of range");
  add(O::k_logsumexp, {M({2, 3})}, make_reduce(-3, false), "logsumexp dim -3");
  add(O::k_expand, {M({2, 3})}, make_reshape({3}), "expand to fewer dims");
  add(O::k_expand, {M({2, 3})}, make_reshape({2, 4}), "expand non-1 dim");
  add(O::k_expand, {M({2, 1})}, make_reshape({2, -1}), "expand negative dim");
  add(O::k_expand, {M({2, 1})}, {}, "expand without shape");

  // Indexing
  add(O::k_index_select, {M({5, 3}), M({2}, F32)}, make_axis(0), "index_select float index");
  add(O::k_index_select, {M({5, 3}), M({2}, BOOL)}, make_axis(0), "index_select bool index");
  add(O::k_index_select, {M({5, 3}), M({2, 1}, I64)}, make_axis(0), "index_select 2-d index");
  add(O::k_index_select, {M({5, 3}), M({2}, I64)}, make_axis(2), "index_select dim 2");
  add(O::k_index_select, {M({}), M({1}, I64)}, make_axis(0), "index_select 0-d input");
  add(O::k_index_select, {M({5, 3}), M({2}, I64)}, {}, "index_select without dim");
  add(O::k_gather, {M({5, 3}), M({2}, I64)}, make_axis(0), "gather rank mismatch");
  add(O::k_gather, {M({5, 3}), M({2, 4}, I64)}, make_axis(0), "gather index larger off dim");
  add(O::k_gather, {M({5, 3}), M({2, 3}, I32)}, make_axis(-3), "gather dim -3");
  add(O::k_gather, {M({5, 3}), M({2, 3}, F16)}, make_axis(0), "gather float index");
  add(O::k_scatter_add, {M({5, 3}), M({2, 3}, I64), M({2, 3}, F16)}, make_axis(0),
      "scatter_add src dtype");
  add(O::k_scatter_add, {M({5, 3}), M({2, 3}, I64), M({2, 2})}, make_axis(0),
      "scatter_add src smaller than index");
  add(O::k_scatter_add, {M({5, 3}), M({2, 3}, I64), M({6})}, make_axis(0), "scatter_add src rank");
  add(O::k_scatter_add, {M({5, 3}), M({2, 4}, I64), M({2, 4})}, make_axis(0),
      "scatter_add index larger than x off dim");
  add(O::k_scatter_add, {M({5, 3}), M({2, 3}, I64)}, make_axis(0), "scatter_add without src");
  add(O::k_index_add, {M({5, 3}), M({4}, I64), M({4, 3})}, make_axis(1), "index_add src shape");
  add(O::k_index_add, {M({5, 3}), M({4}, I64), M({4, 3}, I64)}, make_axis(0), "index_add src dtype");
  add(O::k_index_add, {M({5, 3}), M({2, 2}, I64), M({4, 3})}, make_axis(0), "index_add 2-d index");
  add(O::k_one_hot, {M({3}, F32)}, make_num_classes(4), "one_hot float labels");
  add(O::k_one_hot, {M({3}, I64)}, make_num_classes(-1), "one_hot unresolved num_classes");
  add(O::k_one_hot, {M({3}, I64)}, {}, "one_hot without num_classes");
  add(O::k_one_hot, {M({1 << 20, 1 << 20}, I64)}, make_num_classes(1 << 20), "one_hot too large");
  add(O::k_one_hot, {M({1, 1, 1, 1, 1, 1, 1, 1}, I64)}, make_num_classes(2), "one_hot rank 9");
  return c;
}

}  // namespace

TEST_CASE("infer_meta success cases give the expected shape and dtype", "[shape_rules]") {
  for (const auto& c : success_cases()) {
    INFO(op_name(c.op) << ": " << c.what);
    auto r = infer(c.op, c.in, c.attrs);
    INFO("status: " << r.status().to_string());
    GT_REQUIRE_OK(r);
    CHECK(meta_str(*r) == meta_str(c.want));
  }
}

TEST_CASE("every op in ops.def has a success case", "[shape_rules]") {
  auto cases = success_cases();
  for (int i = 0; i < kNumOps; ++i) {
    OpId op = static_cast<OpId>(i);
    bool found = false;
    for (const auto& c : cases) found = found || c.op == op;
    INFO("op " << op_name(op) << " (wire id " << op_wire_id(op) << ") has no success case");
    CHECK(found);
  }
}

TEST_CASE("infer_meta error cases are refused with INVALID_ARGUMENT", "[shape_rules]") {
  for (const auto& c : error_cases()) {
    INFO(op_name(c.op) << ": " << c.what);
    auto r = infer(c.op, c.in, c.attrs);
    REQUIRE_FALSE(r.is_ok());
    INFO("status: " << r.status().to_string());
    CHECK(r.status().code() == Code::kInvalidArgument);
    CHECK_FALSE(r.status().message().empty());
  }
}

// shape_rules.h promises "an error naming the op and what is wrong". Several paths return the
// bare Status of a shared helper (broadcast_shapes, check_shape_size) without the op name, e.g.
// add([2,3],[4]) -> "shapes [2, 3] and [4] cannot be broadcast together ...",
// zeros([2,-1]) -> "negative dimension in shape [2, -1]". Reported to the lead; remove
//  once infer_meta prefixes those messages with the op name.
TEST_CASE("infer_meta errors name the op", "[shape_rules]") {
  for (const auto& c : error_cases()) {
    auto r = infer(c.op, c.in, c.attrs);
    if (r.is_ok()) continue;  // reported by the test above
    INFO(c.what << ": " << r.status().message());
    CHECK_THAT(r.status().message(), Catch::Contains(op_name(c.op)));
  }
}

TEST_CASE("error messages say what is wrong", "[shape_rules]") {
  auto msg = [](OpId op, std::vector<TensorMeta> in, OpAttrs a) {
    auto r = infer(op, in, a);
    REQUIRE_FALSE(r.is_ok());
    return r.status().message();
  };
  CHECK_THAT(msg(OpId::k_add, {M({2, 3}), M({4})}, {}), Catch::Contains("[2, 3]") &&
                                                            Catch::Contains("[4]"));
  CHECK_THAT(msg(OpId::k_matmul, {M({2, 3}), M({4, 5})}, {}),
             Catch::Contains("matmul") && Catch::Contains("3 != 4"));
  CHECK_THAT(msg(OpId::k_where, {M({2}), M({2}), M({2})}, {}),
             Catch::Contains("where") && Catch::Contains("bool"));
  CHECK_THAT(msg(OpId::k_sum, {M({2, 3})}, make_reduce(5, false)),
             Catch::Contains("sum") && Catch::Contains("dim 5"));
  CHECK_THAT(msg(OpId::k_reshape, {M({2, 3})}, make_reshape({4, 2})),
             Catch::Contains("reshape") && Catch::Contains("[4, 2]"));
  CHECK_THAT(msg(OpId::k_permute, {M({2, 3})}, perm({1, 1})), Catch::Contains("permute"));
  CHECK_THAT(msg(OpId::k_cat, {M({2, 3}), M({3, 4})}, make_axis(0)),
             Catch::Contains("cat") && Catch::Contains("[3, 4]"));
  CHECK_THAT(msg(OpId::k_slice, {M({10})}, slice({1}, {10, 1})),
             Catch::Contains("slice") && Catch::Contains("start 10"));
}

TEST_CASE("matmul_shape directly", "[shape_rules]") {
  struct C {
    Shape a, b;
    bool ok;
    Shape want;
  };
  std::vector<C> cs = {
      {{2, 3}, {3, 4}, true, {2, 4}},
      {{3}, {3}, true, {}},
      {{1, 3}, {3, 1}, true, {1, 1}},
      {{8, 1, 4, 5}, {1, 7, 5, 2}, true, {8, 7, 4, 2}},
      {{2, 1, 1, 1, 1, 1, 4, 5}, {3, 1, 1, 1, 1, 5, 2}, true, {2, 3, 1, 1, 1, 1, 4, 2}},
      {{2, 3}, {2, 3}, false, {}},
      {{2, 3, 4}, {3, 4, 5}, false, {}},
      {{}, {}, false, {}},
  };
  for (const auto& c : cs) {
    INFO(c.a.str() << " @ " << c.b.str());
    auto r = matmul_shape(c.a, c.b);
    REQUIRE(r.is_ok() == c.ok);
    if (c.ok) CHECK(r->str() == c.want.str());
  }
}

TEST_CASE("matmul carries at most a float32 precision 0..2 (set_float32_matmul_precision)",
          "[shape_rules]") {
  const std::vector<TensorMeta> ab = {M({2, 3}), M({3, 4})};
  for (MatmulPrecision p :
       {MatmulPrecision::kHighest, MatmulPrecision::kHigh, MatmulPrecision::kMedium}) {
    const OpAttrs a = make_matmul(p);
    CHECK(a.n_ints == (p == MatmulPrecision::kHighest ? 0 : 1));  // the default sends nothing
    CHECK(a.matmul_precision() == p);
    auto r = infer_meta(OpId::k_matmul, ab, a);
    REQUIRE(r.is_ok());
    CHECK(r->shape.str() == Shape{2, 4}.str());
  }
  auto refused = [&](const OpAttrs& a) {
    auto r = infer_meta(OpId::k_matmul, ab, a);
    return !r.is_ok() && r.status().code() == Code::kInvalidArgument &&
           r.status().message().find("precision") != std::string::npos;
  };
  OpAttrs three, negative, two, real;
  three.push_int(3);
  negative.push_int(-1);
  two.push_int(1);
  two.push_int(1);
  real.push_real(1.0);
  CHECK(refused(three));
  CHECK(refused(negative));
  CHECK(refused(two));
  CHECK(refused(real));
}

TEST_CASE("reductions over every dim of a rank-4 tensor", "[shape_rules]") {
  Shape x{2, 3, 4, 5};
  for (int64_t dim = -4; dim < 4; ++dim)
    for (bool keep : {false, true}) {
      int d = static_cast<int>(dim < 0 ? dim + 4 : dim);
      Shape want;
      for (int i = 0; i < 4; ++i) {
        if (i != d) want.push_back(x[i]);
        else if (keep) want.push_back(1);
      }
      auto r = infer(OpId::k_max, {M(x)}, make_reduce(dim, keep));
      INFO("dim " << dim << " keepdim " << keep);
      GT_REQUIRE_OK(r);
      CHECK(r->shape.str() == want.str());
    }
  CHECK_FALSE(infer(OpId::k_max, {M(x)}, make_reduce(4, false)).is_ok());
  CHECK_FALSE(infer(OpId::k_max, {M(x)}, make_reduce(-5, false)).is_ok());
}

TEST_CASE("integer ** negative integer scalar is refused like PyTorch", "[shape_rules][pow]") {
  auto pw = [](TensorMeta x, ScalarSide side, double v, bool integral) {
    std::optional<int64_t> exact;
    if (integral) exact = static_cast<int64_t>(v);
    return infer(OpId::k_pow, {x}, make_binary_scalar(side, v, integral, exact));
  };
  for (DType d : {I64, I32}) {
    auto r = pw(M({3}, d), ScalarSide::kRight, -1, true);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().message() == "Integers to negative integer powers are not allowed.");
    CHECK_FALSE(pw(M({3}, d), ScalarSide::kRight, -2, true).is_ok());
    GT_CHECK_OK(pw(M({3}, d), ScalarSide::kRight, 0, true));
    GT_CHECK_OK(pw(M({3}, d), ScalarSide::kRight, 2, true));
    CHECK(pw(M({3}, d), ScalarSide::kRight, -1, false)->dtype == F32);  // float exponent
    GT_CHECK_OK(pw(M({3}, d), ScalarSide::kLeft, -2, true));          // (-2) ** x
  }
  GT_CHECK_OK(pw(M({3}, F32), ScalarSide::kRight, -1, true));
  // Without the exact integer (an older client): the double decides.
  CHECK_FALSE(infer(OpId::k_pow, {M({3}, I64)},
                    make_binary_scalar(ScalarSide::kRight, -3, true)).is_ok());
  // Tensor exponents are computed (torch gives 0 for 2 ** -1 there too).
  GT_CHECK_OK(infer(OpId::k_pow, {M({3}, I64), M({3}, I64)}));
}

TEST_CASE("fill values an integer dtype cannot hold are refused", "[shape_rules][full]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  auto full = [](double v, DType d, std::optional<int64_t> exact = std::nullopt) {
    return infer(OpId::k_full, {}, make_full({2}, d, v, exact));
  };
  for (DType d : {I64, I32}) {
    INFO(dtype_name(d));
    for (double v : {nan, inf, -inf, 1e30, -1e30}) {
      auto r = full(v, d);
      REQUIRE_FALSE(r.is_ok());
      CHECK_THAT(r.status().message(), Catch::Contains("full") && Catch::Contains(dtype_name(d)));
    }
    GT_CHECK_OK(full(2.7, d));
    GT_CHECK_OK(full(-2.7, d));
    auto mf = infer(OpId::k_masked_fill, {M({3}, d), M({3}, BOOL)}, make_fill_value(nan));
    REQUIRE_FALSE(mf.is_ok());
    CHECK_THAT(mf.status().message(), Catch::Contains("masked_fill"));
    GT_CHECK_OK(infer(OpId::k_masked_fill, {M({3}, d), M({3}, BOOL)}, make_fill_value(-5)));
  }
  GT_CHECK_OK(full(nan, F32));
  GT_CHECK_OK(full(inf, BF16));
  GT_CHECK_OK(full(nan, BOOL));  // torch: True
  GT_CHECK_OK(full(-9223372036854775808.0, I64));
  CHECK_FALSE(full(9223372036854775808.0, I64).is_ok());
  GT_CHECK_OK(full(2147483647.0, I32));
  CHECK_FALSE(full(2147483648.0, I32).is_ok());
  GT_CHECK_OK(full(0, I64, kI64Max));  // exact integers: int64 holds any
  CHECK_FALSE(full(0, I32, int64_t{1} << 40).is_ok());
  GT_CHECK_OK(infer(OpId::k_masked_fill, {M({3}, F32), M({3}, BOOL)}, make_fill_value(nan)));
}
