// gt::tensor({{1, 2}, {3, 4}}): a nested brace list walked once for its shape (ragged lists are
// an error naming the depth) and its values, uploaded with from_vector in the literal's dtype.
#include <string>
#include <vector>

#include "gt/tensor.h"

namespace gt {
namespace {

using Kind = TensorLiteral::Kind;

struct Flat {
  std::vector<int64_t> shape;
  std::vector<const TensorLiteral*> leaves;
  bool any_float = false, any_int = false;
};

void walk(const TensorLiteral& t, size_t depth, Flat& f) {
  if (t.kind() != Kind::kList) {
    if (depth != f.shape.size())
      throw Error(Code::kInvalidArgument,
                  "tensor: a number at depth " + std::to_string(depth) + " where the literal has " +
                      std::to_string(f.shape.size()) + " levels of lists (ragged nesting)");
    f.any_float |= t.kind() == Kind::kFloat;
    f.any_int |= t.kind() == Kind::kInt;
    f.leaves.push_back(&t);
    return;
  }
  const int64_t n = static_cast<int64_t>(t.items().size());
  if (depth == f.shape.size()) {
    if (!f.leaves.empty())
      throw Error(Code::kInvalidArgument, "tensor: a list at depth " + std::to_string(depth) +
                                              " where numbers were found (ragged nesting)");
    f.shape.push_back(n);
  } else if (depth > f.shape.size() || f.shape[depth] != n) {
    throw Error(Code::kInvalidArgument,
                "tensor: lists at depth " + std::to_string(depth) + " have different lengths (" +
                    std::to_string(depth < f.shape.size() ? f.shape[depth] : -1) + " and " +
                    std::to_string(n) + "): a tensor literal must be rectangular");
  }
  for (const TensorLiteral& item : t.items()) walk(item, depth + 1, f);
}

}  // namespace

Tensor tensor(const TensorLiteral& data, std::optional<DType> dtype) {
  Flat f;
  walk(data, 0, f);
  const DType natural = f.any_float || f.leaves.empty() ? kFloat32 : f.any_int ? kInt64 : kBool;
  const DType dt = dtype.value_or(natural);
  Dims shape(f.shape);
  if (natural == kFloat32 || is_floating(dt)) {
    std::vector<double> v;
    for (const TensorLiteral* l : f.leaves) v.push_back(l->float_value());
    return from_vector(v, shape, dt);
  }
  std::vector<int64_t> v;  // exact integers (and bools as 0/1)
  for (const TensorLiteral* l : f.leaves) v.push_back(l->int_value());
  return from_vector(v, shape, dt);
}

}  // namespace gt
