// Boolean-mask reads and writes and index_copy_ (issue 13) through real daemons, against host
// references: masked_index (t[mask]), masked_select, masked_put_ (t[mask] = v), index_copy_,
// their errors, and a refused write that leaves the tensor unchanged.
#include <vector>

#include "gt/autograd.h"
#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

namespace {
// The rows of `a` (leading dims merged to `lead` rows of `row` elements) where mask[i] != 0.
Ref pick_rows(const Ref& a, const std::vector<int>& mask, int64_t row, Shp rest) {
  Ref out{{}, {}};
  int64_t n = 0;
  for (size_t i = 0; i < mask.size(); ++i) {
    if (!mask[i]) continue;
    ++n;
    for (int64_t j = 0; j < row; ++j) out.v.push_back(a.v[i * row + j]);
  }
  out.shape = {n};
  out.shape.insert(out.shape.end(), rest.begin(), rest.end());
  return out;
}

Tensor bools(const Shp& shape, const std::vector<int>& v) {
  std::vector<double> d(v.begin(), v.end());
  return up(ref_of(shape, d), gt::kBool);
}
}  // namespace

TEST_CASE("masked_index and masked_select pick the true rows in order", "[ops][mask]") {
  daemons();
  Ref a = rnd({2, 3, 4}, -50, 50, 4, 3);
  Tensor t = up(a, gt::kFloat32);
  const std::vector<int> m2 = {1, 0, 1, 0, 0, 1};
  CHECK_TENSOR(t.masked_index(bools({2, 3}, m2)), pick_rows(a, m2, 4, {4}), gt::kFloat32);
  const std::vector<int> m1 = {0, 1};
  CHECK_TENSOR(t.masked_index(bools({2}, m1)), pick_rows(a, m1, 12, {3, 4}), gt::kFloat32);
  std::vector<int> all(24);
  for (size_t i = 0; i < all.size(); ++i) all[i] = a.v[i] > 0;
  CHECK_TENSOR(t.masked_index(t.gt(0)), pick_rows(a, all, 1, {}), gt::kFloat32);
  CHECK_TENSOR(t.masked_index(bools({2, 3}, {0, 0, 0, 0, 0, 0})), ref_of({0, 4}, {}), gt::kFloat32);
  // masked_select broadcasts the mask over t: every row's elements 0 and 3.
  std::vector<int> cols(24);
  for (size_t i = 0; i < cols.size(); ++i) cols[i] = (i % 4 == 0 || i % 4 == 3);
  CHECK_TENSOR(t.masked_select(bools({4}, {1, 0, 0, 1})), pick_rows(a, cols, 1, {}), gt::kFloat32);

  CHECK_THROWS_WITH(t.masked_index(bools({3}, {1, 0, 1})), Catch::Contains("shape of the mask"));
  CHECK_THROWS_WITH(t.masked_index(t), Catch::Contains("bool"));
  CHECK_THROWS_WITH(t.masked_index(bools({2, 3, 4, 1}, std::vector<int>(24, 1))),
                    Catch::Contains("too many indices"));

  // The gradient reaches the picked elements only.
  Tensor x = up(ref_of({4}, {1, -2, 3, -4}), gt::kFloat32).requires_grad_(true);
  (x.masked_index(x.gt(0)) * 5).sum().backward();
  CHECK_TENSOR(x.grad(), ref_of({4}, {5, 0, 5, 0}), gt::kFloat32);
}

TEST_CASE("masked_put_ writes numbers, broadcast rows and one row per true element",
          "[ops][mask]") {
  daemons();
  Tensor t = up(ref_of({2, 3}, {1, 2, 3, 4, 5, 6}), gt::kFloat32);
  t.masked_put_(t.gt(4), -1);
  CHECK_TENSOR(t, ref_of({2, 3}, {1, 2, 3, 4, -1, -1}), gt::kFloat32);
  t.masked_put_(bools({2}, {1, 0}), up(ref_of({3}, {7, 8, 9}), gt::kFloat32));  // broadcast row
  CHECK_TENSOR(t, ref_of({2, 3}, {7, 8, 9, 4, -1, -1}), gt::kFloat32);
  t.masked_put_(t.lt(0), up(ref_of({2}, {10, 20}), gt::kFloat32));  // element k takes value k
  CHECK_TENSOR(t, ref_of({2, 3}, {7, 8, 9, 4, 10, 20}), gt::kFloat32);
  Tensor i = up(ref_of({4}, {0, 1, 0, 1}), gt::kInt64);
  i.masked_put_(i.eq(1), up(ref_of({2}, {5.7, -3.2}), gt::kFloat32));  // converted to int64
  CHECK_TENSOR(i, ref_of({4}, {0, 5, 0, -3}), gt::kInt64);

  CHECK_THROWS_WITH(t.masked_put_(t.gt(9), up(ref_of({3}, {1, 2, 3}), gt::kFloat32)),
                    Catch::Contains("shape mismatch"));
  CHECK_TENSOR(t, ref_of({2, 3}, {7, 8, 9, 4, 10, 20}), gt::kFloat32);  // unchanged
  t.masked_put_(bools({2, 3}, {0, 0, 0, 0, 0, 0}), up(ref_of({0}, {}), gt::kFloat32));
  CHECK_TENSOR(t, ref_of({2, 3}, {7, 8, 9, 4, 10, 20}), gt::kFloat32);
}

TEST_CASE("index_copy_ writes slices along a dim", "[ops][mask]") {
  daemons();
  Tensor t = gt::zeros({3, 4});
  t.index_copy_(0, up(ref_of({2}, {2, 0}), gt::kInt64), up(ref_of({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), gt::kFloat32));
  CHECK_TENSOR(t, ref_of({3, 4}, {5, 6, 7, 8, 0, 0, 0, 0, 1, 2, 3, 4}), gt::kFloat32);
  t.index_copy_(-1, up(ref_of({1}, {1}), gt::kInt32), up(ref_of({3, 1}, {-1, -2, -3}), gt::kFloat32));
  CHECK_TENSOR(t, ref_of({3, 4}, {5, -1, 7, 8, 0, -2, 0, 0, 1, -3, 3, 4}), gt::kFloat32);
  t.index_copy_(0, gt::full({}, int64_t{1}), gt::ones({4}));  // a 0-d index takes one slice
  CHECK_TENSOR(t, ref_of({3, 4}, {5, -1, 7, 8, 1, 1, 1, 1, 1, -3, 3, 4}), gt::kFloat32);
  CHECK_THROWS_WITH(t.index_copy_(0, gt::zeros({1}, gt::kInt64), gt::ones({2, 4})),
                    Catch::Contains("does not match"));
  CHECK_THROWS_WITH(t.index_copy_(2, gt::zeros({1}, gt::kInt64), gt::ones({1, 4})),
                    Catch::Contains("out of range"));
  CHECK_THROWS_WITH(t.index_copy_(0, gt::zeros({1}), gt::ones({1, 4})), Catch::Contains("int64"));
}
