// The public method of each unary elementwise op by op name, generated from
// gt/tensor_api.def's rows (so a new row is tested through the method users call). The
// activations have no method, as in torch: their public form is nn::functional's, which refuses
// integer inputs (UnaryReference::floating_only).
#pragma once

#include <gt/gt.h>

#include <map>
#include <string>

namespace gt::reference {

using UnaryMethod = Tensor (*)(const Tensor&);

inline const std::map<std::string, UnaryMethod>& unary_methods() {
  static const std::map<std::string, UnaryMethod> m{
#define GT_API_UNARY(name, functional) {#name, [](const Tensor& x) { return x.name(); }},
#include "gt/tensor_api.def"
      {"silu", [](const Tensor& x) { return nn::functional::silu(x); }},
      {"gelu", [](const Tensor& x) { return nn::functional::gelu(x); }},
      {"gelu_tanh", [](const Tensor& x) { return nn::functional::gelu(x, "tanh"); }},
  };
  return m;
}

}  // namespace gt::reference
