// Finite-difference gradient checks, driven by the op table: every op of ops.def must be either
// differentiable (then it needs at least one case below, and each case's graph must contain it)
// or explicitly not differentiable (then a result built from inputs that require grad must not
// require grad). Plus gradients of the composites (functional.h) against finite differences.
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "ag_test_util.h"
#include "tests/reference/unary_methods.h"
#include "tests/reference/unary_reference.h"

using agt::GradCase;
using agt::GradInput;
using gt::OpId;
using gt::Tensor;
using In = std::vector<Tensor>;
namespace F = gt::nn::functional;

namespace {

GradInput V(std::vector<int64_t> shape, uint32_t seed) {
  return GradInput{shape, agt::spread_values(agt::numel(shape), seed)};
}
GradInput P(std::vector<int64_t> shape, uint32_t seed, double lo = 0.5, double hi = 2.0) {
  return GradInput{shape, agt::positive_values(agt::numel(shape), seed, lo, hi)};
}
// Given values that require grad.
GradInput Vals(std::vector<int64_t> shape, std::vector<double> v) { return GradInput{shape, std::move(v)}; }
GradInput Const(std::vector<int64_t> shape, std::vector<double> v, gt::DType dt) {
  return GradInput{shape, std::move(v), false, dt};
}
// Multiples of 1/8 in [-3, 3]: exact in float16/bfloat16, and so are +-0.25 steps from them.
GradInput Eighths(std::vector<int64_t> shape, uint32_t seed, gt::DType dt = gt::kFloat32) {
  std::vector<double> v = agt::spread_values(agt::numel(shape), seed, -3, 3, true, 0.125);
  for (double& x : v) x = std::round(x * 8) / 8;
  return GradInput{shape, v, true, dt};
}

std::map<OpId, std::vector<GradCase>> op_cases() {
  std::map<OpId, std::vector<GradCase>> m;
  auto add = [&m](OpId op, GradCase c) { m[op].push_back(std::move(c)); };

  // ---- binary arithmetic (tensor-tensor with broadcasting, and scalar forms) ----
  add(OpId::k_add, {"add", {V({2, 3}, 1), V({2, 3}, 2)}, [](const In& x) { return x[0] + x[1]; }});
  add(OpId::k_add, {"add bcast [2,3]+[3]", {V({2, 3}, 3), V({3}, 4)},
                    [](const In& x) { return x[0] + x[1]; }});
  add(OpId::k_add, {"add bcast [2,1]+[1,3]", {V({2, 1}, 5), V({1, 3}, 6)},
                    [](const In& x) { return x[0] + x[1]; }});
  add(OpId::k_add, {"add scalar", {V({2, 3}, 7)}, [](const In& x) { return 2.0 + (x[0] + 1.5); }});
  add(OpId::k_add, {"add same tensor twice", {V({2, 3}, 8)}, [](const In& x) { return x[0] + x[0]; }});

  add(OpId::k_sub, {"sub", {V({2, 3}, 9), V({2, 3}, 10)}, [](const In& x) { return x[0] - x[1]; }});
  add(OpId::k_sub, {"sub bcast", {V({2, 3}, 11), V({2, 1}, 12)},
                    [](const In& x) { return x[0] - x[1]; }});
  add(OpId::k_sub, {"sub scalar both sides", {V({2, 3}, 13)},
                    [](const In& x) { return 3.0 - (x[0] - 0.5); }});

  add(OpId::k_mul, {"mul", {V({2, 3}, 14), V({2, 3}, 15)}, [](const In& x) { return x[0] * x[1]; }});
  add(OpId::k_mul, {"mul bcast", {V({2, 3}, 16), V({3}, 17)},
                    [](const In& x) { return x[0] * x[1]; }});
  add(OpId::k_mul, {"mul scalar", {V({2, 3}, 18)}, [](const In& x) { return x[0] * 2.5; }});
  add(OpId::k_mul, {"mul x*x", {V({2, 3}, 19)}, [](const In& x) { return x[0] * x[0]; }});

  add(OpId::k_div, {"div", {V({2, 3}, 20), P({2, 3}, 21)}, [](const In& x) { return x[0] / x[1]; }});
  add(OpId::k_div, {"div bcast", {V({2, 3}, 22), P({3}, 23)},
                    [](const In& x) { return x[0] / x[1]; }});
  add(OpId::k_div, {"div scalar right", {V({2, 3}, 24)}, [](const In& x) { return x[0] / 4.0; }});
  add(OpId::k_div, {"div scalar left", {P({2, 3}, 25)}, [](const In& x) { return 2.0 / x[0]; }});

  add(OpId::k_pow, {"pow tensor^tensor", {P({2, 3}, 26), V({2, 3}, 27)},
                    [](const In& x) { return gt::pow(x[0], x[1]); }});
  add(OpId::k_pow, {"pow bcast", {P({2, 3}, 28), V({3}, 29)},
                    [](const In& x) { return gt::pow(x[0], x[1]); }});
  add(OpId::k_pow, {"pow x^3", {V({2, 3}, 30)}, [](const In& x) { return gt::pow(x[0], 3); }});
  add(OpId::k_pow, {"pow x^0.5", {P({2, 3}, 31)}, [](const In& x) { return gt::pow(x[0], 0.5); }});
  add(OpId::k_pow, {"pow 2^x", {V({2, 3}, 32)}, [](const In& x) { return gt::pow(2.0, x[0]); }});
  add(OpId::k_pow, {"pow x^0", {V({2, 3}, 33)}, [](const In& x) { return gt::pow(x[0], 0.0) + x[0]; }});

  add(OpId::k_maximum, {"maximum", {V({2, 3}, 34), V({2, 3}, 35)},
                        [](const In& x) { return gt::maximum(x[0], x[1]); }});
  add(OpId::k_maximum, {"maximum bcast", {V({2, 3}, 36), V({3}, 37)},
                        [](const In& x) { return gt::maximum(x[0], x[1]); }});
  add(OpId::k_maximum, {"maximum scalar", {V({2, 3}, 38)},
                        [](const In& x) { return gt::maximum(x[0], 0.2); }});
  add(OpId::k_minimum, {"minimum", {V({2, 3}, 39), V({2, 3}, 40)},
                        [](const In& x) { return gt::minimum(x[0], x[1]); }});
  add(OpId::k_minimum, {"minimum bcast", {V({2, 1}, 41), V({2, 3}, 42)},
                        [](const In& x) { return gt::minimum(x[0], x[1]); }});
  add(OpId::k_minimum, {"minimum scalar", {V({2, 3}, 43)},
                        [](const In& x) { return gt::minimum(x[0], -0.1); }});

  // remainder away from its jumps (a / b never near an integer): a in (0.1, 0.9), b in (1, 2).
  add(OpId::k_remainder, {"remainder", {Vals({2, 3}, {0.3, 0.5, 0.7, 0.2, 0.8, 0.45}), Vals({2, 3}, {1.2, 1.5, 1.9, 1.1, 1.3, 1.7})},
                          [](const In& x) { return x[0] % x[1]; }});
  add(OpId::k_remainder, {"remainder negative", {Vals({2, 3}, {-0.3, -0.5, 0.7, -0.2, -0.8, 2.45}), Vals({3}, {1.2, 1.5, 1.9})},
                          [](const In& x) { return gt::remainder(x[0], x[1]); }});
  add(OpId::k_remainder, {"remainder scalar left", {Vals({2, 3}, {1.2, 1.5, 1.9, 1.1, 1.3, 1.7})},
                          [](const In& x) { return 2.5 % x[0]; }});
  add(OpId::k_where, {"where", {Const({2, 3}, {1, 0, 1, 0, 0, 1}, gt::kBool), V({2, 3}, 44), V({3}, 45)},
                      [](const In& x) { return gt::where(x[0], x[1], x[2]); }});
  add(OpId::k_where, {"where scalar branch", {Const({2, 3}, {0, 1, 1, 0, 1, 0}, gt::kBool), V({2, 3}, 46)},
                      [](const In& x) { return gt::where(x[0], 0.5, x[1]); }});

  // ---- unary ----
  add(OpId::k_neg, {"neg", {V({2, 3}, 47)}, [](const In& x) { return -x[0]; }});
  add(OpId::k_exp, {"exp", {V({2, 3}, 48)}, [](const In& x) { return x[0].exp(); }});
  add(OpId::k_exp, {"exp (result dropped before backward)", {V({2, 3}, 49)},
                    [](const In& x) { return (x[0] * 0.5).exp() * 2.0; }});
  add(OpId::k_log, {"log", {P({2, 3}, 50)}, [](const In& x) { return x[0].log(); }});
  add(OpId::k_sqrt, {"sqrt", {P({2, 3}, 51)}, [](const In& x) { return x[0].sqrt(); }});
  add(OpId::k_abs, {"abs", {V({2, 3}, 52)}, [](const In& x) { return x[0].abs(); }});
  add(OpId::k_relu, {"relu", {V({2, 3}, 53)}, [](const In& x) { return x[0].relu(); }});
  add(OpId::k_sigmoid, {"sigmoid", {V({2, 3}, 54)}, [](const In& x) { return x[0].sigmoid(); }});
  add(OpId::k_tanh, {"tanh", {V({2, 3}, 55)}, [](const In& x) { return x[0].tanh(); }});
  // Every unary op of the table through its public method, on inputs inside its reference
  // domain (tests/reference/unary_reference.h), so a new unary op is checked with no new case.
  uint32_t family_seed = 900;
  for (OpId op : gt::reference::unary_ops()) {
    auto ref = gt::reference::unary_reference(op);
    auto method = gt::reference::unary_methods().find(gt::op_name(op));
    if (!ref || method == gt::reference::unary_methods().end()) continue;  // test_unary_where fails
    const auto fn = method->second;
    GradInput in = ref->lo >= 0 ? P({2, 3}, family_seed++, std::max(ref->lo, 0.5), std::min(ref->hi, 2.0))
                                : V({2, 3}, family_seed++);
    add(op, {std::string(gt::op_name(op)) + " (unary family)", {in},
             [fn](const In& x) { return fn(x[0]); }});
  }

  // ---- matmul ----
  auto mm = [](const In& x) { return gt::matmul(x[0], x[1]); };
  add(OpId::k_matmul, {"matmul 2d", {V({2, 3}, 56), V({3, 4}, 57)}, mm});
  add(OpId::k_matmul, {"matmul 1d x 2d", {V({3}, 58), V({3, 2}, 59)}, mm});
  add(OpId::k_matmul, {"matmul 2d x 1d", {V({2, 3}, 60), V({3}, 61)}, mm});
  add(OpId::k_matmul, {"matmul 1d x 1d", {V({3}, 62), V({3}, 63)}, mm});
  add(OpId::k_matmul, {"matmul batched", {V({2, 2, 3}, 64), V({2, 3, 2}, 65)}, mm});
  add(OpId::k_matmul, {"matmul batched x 2d", {V({2, 2, 3}, 66), V({3, 2}, 67)}, mm});
  add(OpId::k_matmul, {"matmul batch broadcast", {V({2, 1, 2, 3}, 68), V({3, 3, 2}, 69)}, mm});
  add(OpId::k_matmul, {"matmul 1d x batched", {V({3}, 70), V({2, 3, 2}, 71)}, mm});

  // ---- reductions ----
  add(OpId::k_sum, {"sum all", {V({2, 3}, 72)}, [](const In& x) { return x[0].sum(); }});
  add(OpId::k_sum, {"sum dim", {V({2, 3}, 73)}, [](const In& x) { return x[0].sum(1); }});
  add(OpId::k_sum, {"sum dim keepdim", {V({2, 3}, 74)}, [](const In& x) { return x[0].sum(0, true); }});
  add(OpId::k_sum, {"sum 3d dim -1", {V({2, 2, 3}, 75)}, [](const In& x) { return x[0].sum(-1); }});
  add(OpId::k_mean, {"mean all", {V({2, 3}, 76)}, [](const In& x) { return x[0].mean(); }});
  add(OpId::k_mean, {"mean dim keepdim", {V({2, 3}, 77)},
                     [](const In& x) { return x[0].mean(1, true); }});
  add(OpId::k_mean, {"mean dim 0", {V({3, 2}, 78)}, [](const In& x) { return x[0].mean(0); }});
  add(OpId::k_max, {"max all", {V({2, 3}, 79)}, [](const In& x) { return x[0].max(); }});
  add(OpId::k_max, {"max dim", {V({2, 3}, 80)}, [](const In& x) { return std::get<0>(x[0].max(1)); }});
  add(OpId::k_max, {"max dim keepdim", {V({3, 2}, 81)}, [](const In& x) { return std::get<0>(x[0].max(0, true)); }});
  add(OpId::k_min, {"min all", {V({2, 3}, 82)}, [](const In& x) { return x[0].min(); }});
  add(OpId::k_min, {"min dim", {V({2, 3}, 83)}, [](const In& x) { return std::get<0>(x[0].min(-1, true)); }});

  // ---- layout ----
  add(OpId::k_reshape, {"reshape", {V({2, 3}, 84)}, [](const In& x) { return x[0].reshape({3, 2}); }});
  add(OpId::k_reshape, {"unsqueeze/flatten", {V({2, 3}, 85)},
                        [](const In& x) { return x[0].unsqueeze(1).flatten(); }});
  add(OpId::k_permute, {"permute 3d", {V({2, 3, 2}, 86)},
                        [](const In& x) { return x[0].permute({2, 0, 1}); }});
  add(OpId::k_permute, {"transpose", {V({2, 3}, 87)}, [](const In& x) { return x[0].t(); }});
  add(OpId::k_slice, {"slice step 1", {V({2, 5}, 88)},
                      [](const In& x) { return x[0].slice(1, 1, 4); }});
  add(OpId::k_slice, {"slice step 2", {V({2, 5}, 89)},
                      [](const In& x) { return x[0].slice(1, 0, 5, 2); }});
  add(OpId::k_slice, {"slice step 2 from 1", {V({2, 6}, 90)},
                      [](const In& x) { return x[0].slice(1, 1, gt::None, 2); }});
  add(OpId::k_slice, {"slice reversed", {V({2, 4}, 91)},
                      [](const In& x) { return x[0].slice(1, gt::None, gt::None, -1); }});
  add(OpId::k_slice, {"slice step -2", {V({2, 5}, 92)},
                      [](const In& x) { return x[0].slice(1, 4, 0, -2); }});
  add(OpId::k_slice, {"slice step 3 middle dim", {V({2, 7, 2}, 93)},
                      [](const In& x) { return x[0].slice(1, 1, 7, 3); }});
  add(OpId::k_slice, {"slice two dims", {V({3, 5}, 94)}, [](const In& x) {
                        return x[0].index({gt::Slice(0, 2), gt::Slice(1, gt::None, 2)});
                      }});
  add(OpId::k_slice, {"select", {V({3, 2}, 95)}, [](const In& x) { return x[0].select(0, 1); }});
  add(OpId::k_cat, {"cat 3 on dim 1", {V({2, 2}, 96), V({2, 3}, 97), V({2, 1}, 98)},
                    [](const In& x) { return gt::cat({x[0], x[1], x[2]}, 1); }});
  add(OpId::k_cat, {"cat with a constant", {V({1, 3}, 99), Const({2, 3}, {1, 2, 3, 4, 5, 6}, gt::kFloat32)},
                    [](const In& x) { return gt::cat({x[1], x[0]}, 0); }});

  // ---- dtype and in-place ----
  GradCase c16{"cast f32 -> f16 -> f32", {Eighths({2, 3}, 100)},
               [](const In& x) { return x[0].cast(gt::kFloat16).cast(gt::kFloat32); }};
  c16.eps = 0.25;
  add(OpId::k_cast, c16);
  GradCase cbf{"cast f32 -> bf16 (* 2)", {Eighths({2, 3}, 101)},
               [](const In& x) { return x[0].cast(gt::kBFloat16) * 2.0; }};
  cbf.eps = 0.25;
  add(OpId::k_cast, cbf);
  GradCase half_leaf{"cast of a float16 leaf", {Eighths({2, 3}, 102, gt::kFloat16)},
                     [](const In& x) { return x[0].cast(gt::kFloat32) * 3.0; }};
  half_leaf.eps = 0.25;
  add(OpId::k_cast, half_leaf);

  add(OpId::k_copy_, {"copy_ broadcast into zeros", {V({3}, 103)}, [](const In& x) {
                        Tensor d = gt::zeros({2, 3});
                        d.copy_(x[0]);
                        return d;
                      }});
  add(OpId::k_copy_, {"copy_ over a non-leaf", {V({2, 3}, 104), V({2, 3}, 105)}, [](const In& x) {
                        Tensor d = x[1] * 2.0;
                        d.copy_(x[0]);
                        return d + x[1];
                      }});
  GradCase copy_cast{"copy_ into float16", {Eighths({2, 3}, 106)}, [](const In& x) {
                       Tensor d = gt::zeros({2, 3}, gt::kFloat16);
                       d.copy_(x[0]);
                       return d * 2.0;
                     }};
  copy_cast.eps = 0.25;
  add(OpId::k_copy_, copy_cast);

  // ---- masked_fill, clamp, expand, var, logsumexp, cumsum ----
  const gt::DType B = gt::kBool, I64 = gt::kInt64;
  add(OpId::k_masked_fill, {"masked_fill", {V({2, 3}, 120), Const({2, 3}, {1, 0, 0, 1, 0, 1}, B)},
                            [](const In& x) { return x[0].masked_fill(x[1], -5.0); }});
  add(OpId::k_masked_fill, {"masked_fill broadcast mask", {V({2, 3}, 121), Const({3}, {0, 1, 0}, B)},
                            [](const In& x) { return x[0].masked_fill(x[1], 2.0); }});
  add(OpId::k_masked_fill, {"masked_fill mask broadcasts x", {V({3}, 122), Const({2, 1}, {1, 0}, B)},
                            [](const In& x) { return x[0].masked_fill(x[1], 0.0); }});
  // The inputs are multiples of 1/64 and the bounds halfway between two of them, so with
  // eps = 1/256 no perturbation crosses a bound (the gradient is 1 inside [min, max], 0 outside).
  std::vector<GradCase> clamps = {
      {"clamp both", {V({2, 4}, 123)}, [](const In& x) { return x[0].clamp(-63.5 / 64, 64.5 / 64); }},
      {"clamp min", {V({2, 4}, 124)}, [](const In& x) { return x[0].clamp_min(32.5 / 64); }},
      {"clamp max", {V({2, 4}, 125)}, [](const In& x) { return x[0].clamp_max(-31.5 / 64); }}};
  for (GradCase& c : clamps) {
    c.eps = 1.0 / 256;
    add(OpId::k_clamp, c);
  }
  add(OpId::k_expand, {"expand [3,1] -> [2,3,4]", {V({3, 1}, 126)},
                       [](const In& x) { return x[0].expand({2, 3, 4}); }});
  add(OpId::k_expand, {"expand -1 and 0-d", {V({1, 3}, 127), V({}, 128)},
                       [](const In& x) { return x[0].expand({2, -1}) * x[1].expand({2, 3}); }});
  // Aliasing views (libgtclient/view.h): as_strided recomputes a view read after its base was
  // written (a stride-0 expanded one sums its gradient), strided_copy_ is a write through one.
  add(OpId::k_as_strided, {"as_strided: stale strided view", {V({2, 4}, 150)}, [](const In& x) {
                             Tensor y = x[0] * 1.0;
                             Tensor v = y.slice(1, 1, gt::None, 2).t();
                             y.mul_(y.exp());
                             return v;
                           }});
  add(OpId::k_as_strided, {"as_strided: stale expanded view", {V({2, 3}, 151)}, [](const In& x) {
                             Tensor y = x[0] * 1.0;
                             Tensor e = y.select(1, 0).unsqueeze(1).expand({2, 4});
                             y.add_(y.sigmoid());
                             return e;
                           }});
  add(OpId::k_strided_copy_, {"strided_copy_: write through a row view",
                              {V({2, 3}, 152), V({3}, 153)}, [](const In& x) {
                                Tensor y = x[0] * 1.0;
                                y.select(0, 1).copy_(x[1] * 2.0);
                                return y * y;
                              }});
  add(OpId::k_strided_copy_, {"strided_copy_: in-place op through a transposed slice",
                              {V({3, 4}, 154), V({2, 3}, 155)}, [](const In& x) {
                                Tensor y = x[0] * 1.0;
                                y.slice(1, 0, 2).t().mul_(x[1]);
                                return y;
                              }});
  add(OpId::k_var, {"var all", {V({2, 3}, 129)}, [](const In& x) { return x[0].var(); }});
  add(OpId::k_var, {"var dim keepdim", {V({3, 4}, 130)}, [](const In& x) { return x[0].var(1, 1, true); }});
  add(OpId::k_var, {"var dim 0 population", {V({3, 2}, 131)}, [](const In& x) { return x[0].var(0, 0); }});
  add(OpId::k_var, {"var correction 2.5", {V({5, 2}, 132)}, [](const In& x) { return x[0].var(-2, 2.5); }});
  add(OpId::k_logsumexp, {"logsumexp dim", {V({2, 4}, 133)}, [](const In& x) { return x[0].logsumexp(1); }});
  add(OpId::k_logsumexp, {"logsumexp dim 0 keepdim", {V({3, 2}, 134)},
                          [](const In& x) { return x[0].logsumexp(0, true); }});
  add(OpId::k_logsumexp, {"logsumexp all", {V({2, 3}, 135)}, [](const In& x) { return x[0].logsumexp(); }});
  add(OpId::k_cumsum, {"cumsum dim 1", {V({2, 4}, 148)}, [](const In& x) { return x[0].cumsum(1); }});
  add(OpId::k_cumsum, {"cumsum dim -3", {V({3, 2, 2}, 149)}, [](const In& x) { return x[0].cumsum(-3); }});
  add(OpId::k_cumsum, {"cumsum 0-d and size-1 dim", {V({}, 150), V({1, 3}, 151)},
                       [](const In& x) { return x[0].cumsum(0) * x[1].cumsum(0); }});

  // ---- indexing (index tensors are constants; repeated indices accumulate) ----
  add(OpId::k_index_select, {"index_select rows with repeats", {V({4, 3}, 136), Const({5}, {3, 0, 3, 1, 3}, I64)},
                             [](const In& x) { return x[0].index_select(0, x[1]); }});
  add(OpId::k_index_select, {"index_select dim -1, int32", {V({2, 4}, 137), Const({3}, {2, 2, 0}, gt::kInt32)},
                             [](const In& x) { return x[0].index_select(-1, x[1]); }});
  add(OpId::k_gather, {"gather dim 1", {V({3, 4}, 138), Const({3, 2}, {0, 3, 1, 1, 2, 0}, I64)},
                       [](const In& x) { return x[0].gather(1, x[1]); }});
  add(OpId::k_gather, {"gather dim 0, index longer", {V({2, 3}, 139), Const({4, 2}, {1, 0, 0, 0, 1, 1, 1, 0}, I64)},
                       [](const In& x) { return x[0].gather(0, x[1]); }});
  add(OpId::k_scatter_add, {"scatter_add x and src", {V({3, 3}, 140), Const({2, 3}, {0, 2, 0, 0, 1, 2}, I64), V({2, 3}, 141)},
                            [](const In& x) { return x[0].scatter_add(0, x[1], x[2]); }});
  add(OpId::k_scatter_add, {"scatter_add src larger than index", {V({2, 4}, 142), Const({2, 2}, {3, 3, 0, 1}, I64), V({2, 3}, 143)},
                            [](const In& x) { return x[0].scatter_add(1, x[1], x[2]); }});
  add(OpId::k_index_add, {"index_add dim 0", {V({3, 2}, 144), Const({4}, {2, 0, 2, 2}, I64), V({4, 2}, 145)},
                          [](const In& x) { return x[0].index_add(0, x[1], x[2]); }});
  add(OpId::k_index_add, {"index_add dim 1", {V({2, 3}, 146), Const({2}, {1, 1}, gt::kInt32), V({2, 2}, 147)},
                          [](const In& x) { return x[0].index_add(1, x[1], x[2]); }});
  return m;
}

bool contains(const std::vector<OpId>& ops, OpId op) {
  for (OpId o : ops)
    if (o == op) return true;
  return false;
}

}  // namespace

TEST_CASE("every op is classified, and every differentiable op has a gradcheck case",
          "[autograd][gradcheck]") {
  const auto cases = op_cases();
  int differentiable = 0, not_differentiable = 0;
  for (int i = 0; i < gt::kNumOps; ++i) {
    const OpId op = static_cast<OpId>(i);
    INFO("op " << gt::op_name(op));
    switch (gt::autograd::grad_kind(op)) {
      case gt::autograd::GradKind::kUnknown:
        FAIL_CHECK(gt::op_name(op) << " is neither in the gradient table nor in its explicit "
                                      "not-differentiable list (libgtclient/autograd_rules.cpp)");
        break;
      case gt::autograd::GradKind::kDifferentiable:
        ++differentiable;
        CHECK(cases.count(op) == 1);
        break;
      case gt::autograd::GradKind::kNotDifferentiable:
        ++not_differentiable;
        CHECK(cases.count(op) == 0);
        break;
    }
  }
  CHECK(differentiable + not_differentiable == gt::kNumOps);
  for (const auto& [op, list] : cases)
    CHECK(gt::autograd::grad_kind(op) == gt::autograd::GradKind::kDifferentiable);
}

TEST_CASE("finite-difference gradient checks of every differentiable op", "[autograd][gradcheck]") {
  agt::daemons();
  const auto cases = op_cases();
  for (const auto& [op, list] : cases) {
    for (const GradCase& c : list) {
      DYNAMIC_SECTION(gt::op_name(op) << ": " << c.name) {
        Tensor y = agt::gradcheck(c);
        INFO("case " << c.name);
        CHECK(contains(gt::autograd::recorded_ops(y), op));
      }
    }
  }
}

TEST_CASE("results of non-differentiable ops do not require grad", "[autograd][gradcheck]") {
  agt::daemons();
  Tensor x = agt::leaf({1, -2, 3, 0.5, 2, -1}, {2, 3});
  Tensor y = agt::leaf({0, -2, 1, 0.5, 3, -1}, {2, 3});
  std::map<OpId, Tensor> made = {
      {OpId::k_eq, x == y},          {OpId::k_ne, x != y},          {OpId::k_lt, x < y},
      {OpId::k_le, x <= y},          {OpId::k_gt, x > y},           {OpId::k_ge, x >= y},
      {OpId::k_argmax, x.argmax(1)}, {OpId::k_argmin, x.argmin()},
      {OpId::k_one_hot, F::one_hot(x.argmax(1), 3)},
      {OpId::k_argsort, x.argsort(1)},
      {OpId::k_floor_divide, x.floor_divide(y + 5.0)},  // piecewise constant (torch: no formula)
  };
  for (int i = 0; i < gt::kNumOps; ++i) {
    const OpId op = static_cast<OpId>(i);
    if (gt::autograd::grad_kind(op) != gt::autograd::GradKind::kNotDifferentiable) continue;
    INFO(gt::op_name(op));
    if (gt::op_info(op).arity == 0 || gt::is_in_place(op)) continue;  // creation / host upload
    REQUIRE(made.count(op) == 1);
    CHECK_FALSE(made[op].requires_grad());
    CHECK(made[op].is_leaf());
  }
  // Creation ops make leaves.
  CHECK_FALSE(gt::zeros({2}).requires_grad());
  CHECK_FALSE(gt::randn({2}).requires_grad());
  // A float result of an integer cast chain does not require grad either.
  CHECK_FALSE(x.cast(gt::kInt64).cast(gt::kFloat32).requires_grad());
}

// ---- composites ---------------------------------------------------------------------------------
TEST_CASE("finite-difference gradient checks of the composites", "[autograd][gradcheck]") {
  agt::daemons();
  std::vector<GradCase> cs;
  cs.push_back({"softmax dim 1", {V({2, 4}, 200)}, [](const In& x) { return gt::softmax(x[0], 1); }});
  cs.push_back({"softmax dim 0", {V({3, 2}, 201)}, [](const In& x) { return gt::softmax(x[0], 0); }});
  cs.push_back({"log_softmax", {V({2, 4}, 202)}, [](const In& x) { return gt::log_softmax(x[0], -1); }});
  cs.push_back({"logsumexp", {V({2, 4}, 203)}, [](const In& x) { return F::logsumexp(x[0], 1); }});
  cs.push_back({"softmax of a row with -inf", {V({2, 3}, 236), Const({2, 3}, {0, 1, 0, 0, 0, 0}, gt::kBool)},
                [](const In& x) {
                  return gt::softmax(x[0].masked_fill(x[1], -std::numeric_limits<double>::infinity()), 1);
                }});
  cs.push_back({"layer_norm affine", {V({2, 4}, 204), V({4}, 205), V({4}, 206)},
                [](const In& x) { return F::layer_norm(x[0], {4}, x[1], x[2]); }});
  cs.push_back({"layer_norm over 2 dims", {V({2, 2, 3}, 207)},
                [](const In& x) { return F::layer_norm(x[0], {2, 3}); }});
  cs.push_back({"gelu", {V({2, 3}, 208)}, [](const In& x) { return F::gelu(x[0]); }});
  cs.push_back({"gelu tanh", {V({2, 3}, 209)}, [](const In& x) { return F::gelu(x[0], "tanh"); }});
  cs.push_back({"silu", {V({2, 3}, 210)}, [](const In& x) { return F::silu(x[0]); }});
  cs.push_back({"mse_loss", {V({2, 3}, 211), V({2, 3}, 212)},
                [](const In& x) { return F::mse_loss(x[0], x[1]); }});
  cs.push_back({"binary_cross_entropy", {P({2, 3}, 213, 0.1, 0.9), P({2, 3}, 214, 0.0, 1.0)},
                [](const In& x) { return F::binary_cross_entropy(x[0], x[1]); }});
  cs.push_back({"bce_with_logits + pos_weight", {V({2, 3}, 215), P({2, 3}, 216, 0.0, 1.0), P({3}, 217)},
                [](const In& x) {
                  return F::binary_cross_entropy_with_logits(x[0], x[1], {.pos_weight = x[2]});
                }});
  const std::vector<double> labels{2, 0, 3};
  cs.push_back({"cross_entropy", {V({3, 4}, 218), Const({3}, labels, gt::kInt64)},
                [](const In& x) { return F::cross_entropy(x[0], x[1]); }});
  cs.push_back({"cross_entropy label_smoothing", {V({3, 4}, 219), Const({3}, labels, gt::kInt64)},
                [](const In& x) { return F::cross_entropy(x[0], x[1], {.label_smoothing = 0.1}); }});
  cs.push_back({"cross_entropy weights + ignore_index + smoothing",
                {V({3, 4}, 220), Const({3}, {2, 1, 3}, gt::kInt64), P({4}, 221)},
                [](const In& x) {
                  return F::cross_entropy(x[0], x[1], {.weight = x[2], .ignore_index = 1,
                                                       .label_smoothing = 0.2});
                }});
  cs.push_back({"cross_entropy probabilities", {V({2, 3}, 222), P({2, 3}, 223, 0.0, 1.0)},
                [](const In& x) { return F::cross_entropy(x[0], x[1]); }});
  cs.push_back({"cross_entropy [N, C, d]", {V({2, 3, 2}, 224), Const({2, 2}, {0, 2, 1, 1}, gt::kInt64)},
                [](const In& x) { return F::cross_entropy(x[0], x[1], {.reduction = F::Reduction::kSum}); }});
  cs.push_back({"nll_loss of log_softmax", {V({3, 4}, 225), Const({3}, labels, gt::kInt64)},
                [](const In& x) { return F::nll_loss(gt::log_softmax(x[0], 1), x[1]); }});
  cs.push_back({"embedding", {V({5, 3}, 226), Const({2, 3}, {0, 4, 4, 1, 2, 0}, gt::kInt64)},
                [](const In& x) { return F::embedding(x[1], x[0]); }});
  cs.push_back({"var dim", {V({2, 4}, 227)}, [](const In& x) { return F::var(x[0], 1); }});
  cs.push_back({"var all, biased, keepdim", {V({2, 3}, 237)},
                [](const In& x) { return F::var(x[0], std::nullopt, false, true); }});
  cs.push_back({"nll_loss with class weights and ignored -100", {V({4, 3}, 238), Const({4}, {2, -100, 0, 2}, gt::kInt64), P({3}, 239)},
                [](const In& x) {
                  return F::nll_loss(gt::log_softmax(x[0], 1), x[1], {.weight = x[2]});
                }});
  cs.push_back({"cross_entropy ignored -100, smoothing", {V({3, 4}, 240), Const({3}, {1, -100, 3}, gt::kInt64)},
                [](const In& x) { return F::cross_entropy(x[0], x[1], {.label_smoothing = 0.1}); }});
  cs.push_back({"embedding of a 1-d index", {V({4, 2}, 241), Const({5}, {3, 3, 0, 1, 3}, gt::kInt64)},
                [](const In& x) { return F::embedding(x[1], x[0]); }});
  cs.push_back({"binary_cross_entropy near 0 and 1", {P({2, 2}, 242, 0.02, 0.98), P({2, 2}, 243, 0.0, 1.0)},
                [](const In& x) { return F::binary_cross_entropy(x[0], x[1]); }});
  cs.push_back({"clamp", {V({2, 3}, 228)}, [](const In& x) { return F::clamp(x[0], -1.0, 1.0); }});
  cs.push_back({"masked_fill", {V({2, 3}, 229), Const({2, 3}, {1, 0, 0, 1, 0, 1}, gt::kBool)},
                [](const In& x) { return F::masked_fill(x[0], x[1], -5.0); }});
  cs.push_back({"stack / split / chunk", {V({2, 4}, 230), V({2, 4}, 231)}, [](const In& x) {
                  std::vector<Tensor> a = gt::split(x[0], 3, 1);  // [2,3] + [2,1]
                  std::vector<Tensor> b = gt::chunk(x[1], 2, 1);  // [2,2] x 2
                  return gt::stack({a[0].slice(1, 0, 2) * b[1], b[0] + a[1]}, 1);
                }});
  cs.push_back({"flatten", {V({2, 2, 3}, 232)}, [](const In& x) { return gt::flatten(x[0], 1) * 2.0; }});
  cs.push_back({"linear", {V({2, 3}, 233), V({4, 3}, 234), V({4}, 235)},
                [](const In& x) { return F::linear(x[0], x[1], x[2]); }});
  // linear has its own gradient (dW = G^T X over the flattened leading dims, dX = G W).
  cs.push_back({"linear without bias", {V({3, 2}, 244), V({4, 2}, 245)},
                [](const In& x) { return F::linear(x[0], x[1]); }});
  cs.push_back({"linear of a 3-d input", {V({2, 3, 2}, 246), V({4, 2}, 247), V({4}, 248)},
                [](const In& x) { return F::linear(x[0], x[1], x[2]); }});
  cs.push_back({"linear of a vector", {V({3}, 249), V({2, 3}, 250)},
                [](const In& x) { return F::linear(x[0], x[1]); }});
  cs.push_back({"linear, a constant input", {Const({2, 3}, {1, -2, 0.5, 3, 0, -1}, gt::kFloat32), V({4, 3}, 251)},
                [](const In& x) { return F::linear(x[0], x[1]); }});
  cs.push_back({"linear, a constant weight", {V({2, 3}, 252), Const({2, 3}, {1, -2, 0.5, 3, 0, -1}, gt::kFloat32)},
                [](const In& x) { return F::linear(x[0], x[1]); }});
  for (const GradCase& c : cs) {
    DYNAMIC_SECTION(c.name) { agt::gradcheck(c); }
  }
}

TEST_CASE("dropout: scaled mask, gradient through the kept elements", "[autograd][composite]") {
  agt::daemons();
  gt::manual_seed(7);
  Tensor x = agt::leaf(agt::spread_values(40, 300, -2, 2, true, 0.01), {4, 10});
  Tensor y = F::dropout(x, 0.25, true);
  y.sum().backward();
  std::vector<double> xv = agt::host(x), yv = agt::host(y), gv = agt::host(x.grad());
  int dropped = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (yv[i] == 0) {
      ++dropped;
      CHECK(gv[i] == 0);
    } else {
      CHECK(yv[i] == Approx(xv[i] / 0.75));
      CHECK(gv[i] == Approx(1 / 0.75));
    }
  }
  CHECK(dropped > 2);
  CHECK(dropped < 20);
  CHECK(agt::host(F::dropout(x, 0.25, false)) == xv);  // eval: identity
}
