// The public method of each unary elementwise op by op name, generated from
// gt/tensor_api.def's rows (so a new row is tested through the method users call).
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
  };
  return m;
}

}  // namespace gt::reference
