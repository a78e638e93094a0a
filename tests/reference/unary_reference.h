// The independent reference of every unary elementwise op (ops.def rule kUnarySame or
// kUnaryFloat), in double precision from <cmath>, with the input range the tests draw from. One
// row per op, shared by every suite that tests the family (CPU kernels, ops through real
// daemons, gradient checks, shape rules, GPU parity): the suites take their op lists from the
// op table, so a new unary op without a row here fails them.
#pragma once

#include <cmath>
#include <optional>
#include <vector>

#include "gt/core/ops.h"

namespace gt::reference {

struct UnaryReference {
  double (*f)(double);
  double lo, hi;  // inputs where f is defined and well conditioned (ints are drawn from it too)
  double tol;     // float32 results: |got - want| <= tol * (1 + |want|)
  bool floating_only = false;  // the public form refuses integer and bool inputs (as torch)
};

inline std::optional<UnaryReference> unary_reference(OpId op) {
  switch (op) {
    case OpId::k_neg: return UnaryReference{[](double x) { return -x; }, -5, 5, 1e-6};
    case OpId::k_exp: return UnaryReference{[](double x) { return std::exp(x); }, -5, 5, 1e-5};
    case OpId::k_log: return UnaryReference{[](double x) { return std::log(x); }, 0.01, 9, 1e-5};
    case OpId::k_sqrt: return UnaryReference{[](double x) { return std::sqrt(x); }, 0.01, 9, 1e-6};
    case OpId::k_abs: return UnaryReference{[](double x) { return std::fabs(x); }, -5, 5, 1e-6};
    case OpId::k_relu:
      return UnaryReference{[](double x) { return std::isnan(x) ? x : x > 0 ? x : 0.0; }, -5, 5,
                            1e-6};
    case OpId::k_sigmoid:
      return UnaryReference{[](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -5, 5, 1e-5};
    case OpId::k_tanh: return UnaryReference{[](double x) { return std::tanh(x); }, -5, 5, 1e-5};
    case OpId::k_erf: return UnaryReference{[](double x) { return std::erf(x); }, -4, 4, 1e-6};
    case OpId::k_silu:
      return UnaryReference{[](double x) { return x / (1.0 + std::exp(-x)); }, -6, 6, 1e-5,
                            true};
    case OpId::k_gelu:
      return UnaryReference{[](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); },
                            -5, 5, 1e-5, true};
    case OpId::k_gelu_tanh:
      return UnaryReference{[](double x) {
                              const double k = std::sqrt(2.0 / M_PI);
                              return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
                            },
                            -5, 5, 1e-5, true};
    default: return std::nullopt;
  }
}

// Every unary elementwise op of ops.def, in table order.
inline std::vector<OpId> unary_ops() {
  std::vector<OpId> ops;
  for (int i = 0; i < kNumOps; ++i) {
    const auto op = static_cast<OpId>(i);
    if (op_rule(op) == ShapeRule::kUnarySame || op_rule(op) == ShapeRule::kUnaryFloat)
      ops.push_back(op);
  }
  return ops;
}

// kUnaryFloat ops compute in floating point: integer and bool inputs give float32.
inline bool unary_gives_float(OpId op) { return op_rule(op) == ShapeRule::kUnaryFloat; }

}  // namespace gt::reference
