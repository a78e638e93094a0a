// Advanced indexing in C++ (issue 13): Tensor::index / index_put_ with tensors among the
// indices (libtorch's t.index({idx0, Slice(), idx1})), against host loops written from torch's
// rules: several index tensors pick element-wise (broadcast together); their dims replace the
// indexed ones when those stand together, else go first; bool masks pick their true positions;
// writes land in place (through views too); a bad index poisons the result; gradients flow.
#include <vector>

#include "gt/autograd.h"
#include "op_test_util.h"

using namespace gtt;
using gt::Slice;
using gt::Tensor;

namespace {
constexpr int64_t A = 3, B = 4, C = 5;

double at(const Ref& a, int64_t i, int64_t j, int64_t k) { return a.v[(i * B + j) * C + k]; }

Tensor ints(const std::vector<int64_t>& v, Shp shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  return gt::from_vector(v, shape, gt::kInt64);
}
}  // namespace

TEST_CASE("several index tensors pick element-wise, placed as torch places them",
          "[ops][advanced_index]") {
  daemons();
  const Ref a = rnd({A, B, C}, -50, 50, 4, 11);
  const Tensor t = up(a, gt::kFloat32);
  const std::vector<int64_t> i = {2, 0, 1}, j = {3, 0, 1}, k = {4, 0, 2};

  // x[i, j]: one row of C per pair.
  Ref want{{3, C}, {}};
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t c = 0; c < C; ++c) want.v.push_back(at(a, i[n], j[n], c));
  CHECK_TENSOR(t.index({ints(i), ints(j)}), want, gt::kFloat32);
  // Negative entries count from the end.
  CHECK_TENSOR(t.index({ints({-1, 0, 1}), ints({-1, 0, 1})}), want, gt::kFloat32);

  // x[i, :, k]: the indexed dims are apart, so the picked dim goes first: (3, B).
  want = Ref{{3, B}, {}};
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t b = 0; b < B; ++b) want.v.push_back(at(a, i[n], b, k[n]));
  CHECK_TENSOR(t.index({ints(i), Slice(), ints(k)}), want, gt::kFloat32);

  // x[:, j2, k] with j2 of shape (2, 1) and k of shape (3,): broadcast to (2, 3), adjacent, so
  // in place of dims 1 and 2: (A, 2, 3).
  const std::vector<int64_t> j2 = {1, 3};
  want = Ref{{A, 2, 3}, {}};
  for (int64_t x = 0; x < A; ++x)
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t c = 0; c < 3; ++c) want.v.push_back(at(a, x, j2[r], k[c]));
  CHECK_TENSOR(t.index({Slice(), ints(j2, {2, 1}), ints(k)}), want, gt::kFloat32);

  // x[i, 1, k]: the int drops its dim first, so i and k stand together: (3,).
  want = Ref{{3}, {}};
  for (int64_t n = 0; n < 3; ++n) want.v.push_back(at(a, i[n], 1, k[n]));
  CHECK_TENSOR(t.index({ints(i), 1, ints(k)}), want, gt::kFloat32);

  // x[mask, 1:, k2]: the mask's true rows (0 and 2) zip with k2; apart, so first: (2, B - 1).
  const Tensor mask = gt::from_vector(std::vector<int64_t>{1, 0, 1}, {3}, gt::kInt64).to(gt::kBool);
  const std::vector<int64_t> rows = {0, 2}, k2 = {1, 4};
  want = Ref{{2, B - 1}, {}};
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t b = 1; b < B; ++b) want.v.push_back(at(a, rows[n], b, k2[n]));
  CHECK_TENSOR(t.index({mask, Slice(1, gt::None), ints(k2)}), want, gt::kFloat32);

  // A lone mask keeps its direct form; a lone index tensor picks rows.
  CHECK_TENSOR(t.index({mask}), slice_ref(a, 0, 0, std::nullopt, 2), gt::kFloat32);
  CHECK_TENSOR(t.index({Slice(), ints({2})}), slice_ref(a, 1, 2, 3, 1), gt::kFloat32);
}

TEST_CASE("index_put_ through several index tensors writes in place, views included",
          "[ops][advanced_index]") {
  daemons();
  const Ref a = rnd({A, B, C}, -50, 50, 4, 12);
  Tensor t = up(a, gt::kFloat32);
  Ref want = a;
  // x[i, :, k] = v with v of the result's shape (3, B).
  const std::vector<int64_t> i = {2, 0, 1}, k = {4, 0, 2};
  const Ref v = rnd({3, B}, -9, 9, 1, 13);
  t.index_put_({ints(i), Slice(), ints(k)}, up(v, gt::kFloat32));
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t b = 0; b < B; ++b) want.v[(i[n] * B + b) * C + k[n]] = v.v[n * B + b];
  CHECK_TENSOR(t, want, gt::kFloat32);
  // x[:, j, k] = number (adjacent dims: the non-contiguous view path is not needed).
  const std::vector<int64_t> j = {1, 3};
  t.index_put_({Slice(), ints(j), ints({0, 4})}, 7.5);
  for (int64_t x = 0; x < A; ++x) {
    want.v[(x * B + 1) * C + 0] = 7.5;
    want.v[(x * B + 3) * C + 4] = 7.5;
  }
  CHECK_TENSOR(t, want, gt::kFloat32);
  // Through a transposed view: the base changes.
  Tensor base = up(ref_of({2, 3}, {0, 1, 2, 3, 4, 5}), gt::kFloat32);
  base.t().index_put_({ints({2, 0}), ints({1, 0})}, up(ref_of({2}, {-1, -2}), gt::kFloat32));
  CHECK_TENSOR(base, ref_of({2, 3}, {-2, 1, 2, 3, 4, -1}), gt::kFloat32);
  // The value must broadcast to the result.
  CHECK_THROWS_WITH(t.index_put_({ints(i), ints(k)}, gt::zeros({4})),
                    Catch::Contains("shape mismatch"));
}

TEST_CASE("advanced index errors: shapes at once, bad values when read", "[ops][advanced_index]") {
  daemons();
  const Tensor t = gt::zeros({3, 4});
  CHECK_THROWS_WITH(t.index({ints({0, 1}), ints({0, 1, 2})}), Catch::Contains("could not be broadcast"));
  CHECK_THROWS_WITH(t.index({ints({0}), ints({0}), ints({0})}), Catch::Contains("too many indices"));
  CHECK_THROWS_WITH(t.index({ints({0}), gt::zeros({1})}), Catch::Contains("int64, int32 or bool"));
  // Out of range in the second tensor: the linear position would be in range, the check is not.
  CHECK_THROWS_WITH(t.index({ints({0, 1}), ints({0, 6})}).to_vector<float>(), Catch::Contains("6"));
  Tensor w = gt::zeros({3, 4});
  w.index_put_({ints({3}), ints({0})}, 1.0);
  CHECK_THROWS(w.to_vector<float>());
}

TEST_CASE("x[arange(n), labels] has the gradient of a one-hot pick", "[ops][advanced_index]") {
  daemons();
  const Ref a = rnd({4, 3}, -20, 20, 8, 14);
  Tensor x = up(a, gt::kFloat32).requires_grad_();
  const std::vector<int64_t> labels = {2, 0, 1, 1};
  Tensor picked = x.index({gt::arange(4), ints(labels)});
  Ref want{{4}, {}};
  Ref grad{{4, 3}, std::vector<double>(12, 0.0)};
  for (int64_t r = 0; r < 4; ++r) {
    want.v.push_back(a.v[r * 3 + labels[r]]);
    grad.v[r * 3 + labels[r]] += 2.0;  // d(sum(2 * picked))
  }
  CHECK_TENSOR(picked, want, gt::kFloat32);
  (picked * 2).sum().backward();
  CHECK_TENSOR(x.grad(), grad, gt::kFloat32);
}
