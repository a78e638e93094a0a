// gt::tensor literals (torch::tensor's nested brace lists): shapes from the nesting, dtypes as
// torch's (floating -> float32, integers -> int64 exactly, bools -> bool), dtype conversion,
// 0-d and empty literals, and ragged nesting refused.
#include <limits>

#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

TEST_CASE("tensor literals: shapes, dtypes and values", "[ops][creation][literal]") {
  daemons();
  Tensor m = gt::tensor({{1, 2, 3}, {4, 5, 6}});
  CHECK(m.dtype() == gt::kInt64);
  CHECK_TENSOR(m, ref_of({2, 3}, {1, 2, 3, 4, 5, 6}), gt::kInt64);
  Tensor f = gt::tensor({{{0.5}, {1.5f}}, {{-2}, {3}}});  // any float makes it float32
  CHECK_TENSOR(f, ref_of({2, 2, 1}, {0.5, 1.5, -2, 3}), gt::kFloat32);
  CHECK_TENSOR(gt::tensor({true, false, true}), ref_of({3}, {1, 0, 1}), gt::kBool);
  CHECK_TENSOR(gt::tensor(2.5), ref_of({}, {2.5}), gt::kFloat32);
  CHECK_TENSOR(gt::tensor(7), ref_of({}, {7}), gt::kInt64);
  CHECK_TENSOR(gt::tensor({}), ref_of({0}, {}), gt::kFloat32);
  CHECK_TENSOR(gt::tensor({{1, 2}, {3, 4}}, gt::kFloat16), ref_of({2, 2}, {1, 2, 3, 4}), gt::kFloat16);
  CHECK_TENSOR(gt::tensor({0.75, 2.0}, gt::kInt32), ref_of({2}, {0, 2}), gt::kInt32);
  // int64 values beyond 2^53 stay exact (not through a double).
  const int64_t big = std::numeric_limits<int64_t>::max() - 1;
  CHECK(gt::tensor({big, int64_t{1}}).to_vector<int64_t>() == std::vector<int64_t>{big, 1});
}

TEST_CASE("tensor literals refuse ragged nesting", "[ops][creation][literal]") {
  daemons();
  CHECK_THROWS_WITH(gt::tensor({{1, 2}, {3}}), Catch::Contains("rectangular"));
  CHECK_THROWS_WITH(gt::tensor({1, {2, 3}}), Catch::Contains("ragged"));
  CHECK_THROWS_WITH(gt::tensor({{1, 2}, 3}), Catch::Contains("ragged"));
}
