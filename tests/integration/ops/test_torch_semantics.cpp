// PyTorch semantics of the C++ surface that the Python package shares (issue 18): max/min over a
// dim give (values, indices), ~ and %, chunk of an empty dim, cat skipping legacy empty vectors,
// and index ops on 0-d tensors. Expected values are closed forms (PyTorch's, as probed).
#include <tuple>
#include <vector>

#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

TEST_CASE("max/min over a dim give values and the first index of the extremum", "[ops][semantics]") {
  daemons();
  Tensor x = up(ref_of({2, 3}, {1, 5, 5, 7, 2, 7}), gt::kFloat32);
  auto [v, i] = x.max(1);
  CHECK_TENSOR(v, ref_of({2}, {5, 7}), gt::kFloat32);
  CHECK_TENSOR(i, ref_of({2}, {1, 0}), gt::kInt64);
  auto [mv, mi] = gt::min(x, 0, true);
  CHECK_TENSOR(mv, ref_of({1, 3}, {1, 2, 5}), gt::kFloat32);
  CHECK_TENSOR(mi, ref_of({1, 3}, {0, 1, 0}), gt::kInt64);
  CHECK_TENSOR(x.max(), ref_of({}, {7}), gt::kFloat32);
}

TEST_CASE("bitwise not (operator ~) on integers, logical not on bool, % is Python's", "[ops][semantics]") {
  daemons();
  Tensor i = up(ref_of({4}, {0, 5, -1, -8}), gt::kInt64);
  CHECK_TENSOR(~i, ref_of({4}, {-1, -6, 0, 7}), gt::kInt64);
  Tensor b = up(ref_of({2}, {1, 0}), gt::kBool);
  CHECK_TENSOR(~b, ref_of({2}, {0, 1}), gt::kBool);
  CHECK_THROWS_AS(~up(ref_of({1}, {1.5}), gt::kFloat32), gt::Error);
  Tensor a = up(ref_of({4}, {7, -7, 7, -7}), gt::kInt32);
  CHECK_TENSOR(a % 3, ref_of({4}, {1, 2, 1, 2}), gt::kInt32);
  CHECK_TENSOR(a % -3, ref_of({4}, {-2, -1, -2, -1}), gt::kInt32);
  CHECK_TENSOR(gt::floor_divide(a, 2), ref_of({4}, {3, -4, 3, -4}), gt::kInt32);
}

TEST_CASE("chunk of an empty dim gives the chunks asked for", "[ops][semantics]") {
  daemons();
  std::vector<Tensor> parts = gt::chunk(gt::zeros({0, 3}), 3, 0);
  REQUIRE(parts.size() == 3);
  for (const Tensor& p : parts) CHECK(p.shape() == gt::Shape{0, 3});
}

TEST_CASE("cat skips legacy empty 1-d tensors, keeping their dtype", "[ops][semantics]") {
  daemons();
  Tensor m = up(ref_of({2, 2}, {1, 2, 3, 4}), gt::kInt64);
  Tensor empty = gt::zeros({0}, gt::kFloat32);
  Tensor r = gt::cat({empty, m}, 0);
  CHECK_TENSOR(r, ref_of({2, 2}, {1, 2, 3, 4}), gt::kFloat32);  // int64 with float32: float32
  CHECK_TENSOR(gt::cat({m, gt::zeros({0}, gt::kInt64)}, 1), ref_of({2, 2}, {1, 2, 3, 4}), gt::kInt64);
}

TEST_CASE("index ops on a 0-d tensor index it as a one-element vector", "[ops][semantics]") {
  daemons();
  Tensor s = gt::scalar_tensor(3.0);
  Tensor idx = up(ref_of({1}, {0}), gt::kInt64);
  CHECK_TENSOR(s.index_select(0, idx), ref_of({}, {3}), gt::kFloat32);
  CHECK_TENSOR(s.index_add(-1, idx, gt::scalar_tensor(2.0)), ref_of({}, {5}), gt::kFloat32);
  CHECK_TENSOR(s.gather(0, up(ref_of({2}, {0, 0}), gt::kInt64)), ref_of({2}, {3, 3}), gt::kFloat32);
  CHECK_THROWS_AS(s.index_select(1, idx), gt::Error);
}
