// matmul through real daemons: 2-D, every 1-D combination, batched with broadcast batch dims,
// k = 0 and other empty shapes, int64 (exact), mixed and 16-bit dtypes, and a size that is not
// a multiple of any block size.
#include <cmath>
#include <vector>

#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

GT_OPS_COVERED("matmul");
TEST_CASE("matmul shapes: 2-D, 1-D, batched with broadcasting, k = 0, empty", "[ops][matmul]") {
  daemons();
  const std::vector<std::pair<Shp, Shp>> cases{
      {{3, 4}, {4, 5}},           // 2-D
      {{1, 1}, {1, 1}},           //
      {{4}, {4, 5}},              // 1-D @ 2-D -> [5]
      {{3, 4}, {4}},              // 2-D @ 1-D -> [3]
      {{4}, {4}},                 // 1-D @ 1-D -> 0-d
      {{2, 3, 4}, {2, 4, 5}},     // batched
      {{2, 1, 3, 4}, {3, 4, 2}},  // broadcast batch dims -> [2, 3, 3, 2]
      {{3, 4}, {2, 4, 5}},        // 2-D @ 3-D
      {{2, 3, 4}, {4, 5}},        // 3-D @ 2-D
      {{4}, {2, 4, 3}},           // 1-D @ 3-D -> [2, 3]
      {{2, 3, 4}, {4}},           // 3-D @ 1-D -> [2, 3]
      {{1, 2, 3}, {5, 3, 2}},     // batch 1 broadcasts to 5
      {{2, 0}, {0, 3}},           // k = 0 -> zeros [2, 3]
      {{0}, {0}},                 // k = 0, 1-D -> 0-d zero
      {{0, 3}, {3, 2}},           // m = 0
      {{2, 3}, {3, 0}},           // n = 0
      {{0, 2, 3}, {3, 4}},        // empty batch
  };
  uint64_t seed = 300;
  for (gt::DType d : {gt::kFloat32, gt::kInt64, gt::kFloat16, gt::kBFloat16, gt::kInt32}) {
    for (const auto& [sa, sb] : cases) {
      INFO("matmul " << dt_name(d) << shape_str(sa) << " @ " << shape_str(sb));
      Ref a = rnd_for(d, sa, seed++), b = rnd_for(d, sb, seed++);
      Tol tol = tol_for(d);
      if (d == gt::kFloat16) tol = {2e-3, 2e-3};
      if (d == gt::kBFloat16) tol = {3e-2, 2e-2};
      CHECK_TENSOR(gt::matmul(up(a, d), up(b, d)), to_dtype(matmul_ref(a, b), d), d, tol);
    }
  }
}

TEST_CASE("matmul: mixed dtypes, larger odd sizes, int64 exactness, errors", "[ops][matmul]") {
  daemons();
  // Mixed dtypes are refused at the call site, as torch.matmul refuses them (it does not
  // promote: "expected scalar type Float but found Half"); they used to promote.
  Ref a = rnd_for(gt::kInt64, {3, 4}, 1), b = rnd_for(gt::kFloat32, {4, 2}, 2);
  CHECK_THROWS_WITH(up(a, gt::kInt64).matmul(up(b, gt::kFloat32)), Catch::Contains("same dtype"));
  CHECK_THROWS_AS(gt::matmul(up(b, gt::kFloat16).t(), up(a, gt::kFloat32).t()), gt::Error);
  CHECK_TENSOR(up(a, gt::kFloat32).matmul(up(b, gt::kFloat32)), matmul_ref(a, b), gt::kFloat32);

  // Odd sizes past typical blocking (float32: tolerance scaled by the dot length).
  Ref x = rnd_for(gt::kFloat32, {2, 33, 65}, 3), y = rnd_for(gt::kFloat32, {65, 17}, 4);
  CHECK_TENSOR(gt::matmul(up(x, gt::kFloat32), up(y, gt::kFloat32)), matmul_ref(x, y), gt::kFloat32,
               Tol{1e-4, 1e-5});
  Ref xi = rnd(x.shape, -1000, 1000, 1, 5), yi = rnd(y.shape, -1000, 1000, 1, 6);
  CHECK_TENSOR(gt::matmul(up(xi, gt::kInt64), up(yi, gt::kInt64)), matmul_ref(xi, yi), gt::kInt64);

  // int64 products beyond float precision stay exact.
  const int64_t big = (int64_t{1} << 40) + 7;
  Tensor ai = gt::from_vector<int64_t>({big, 1, -big, 3}, {2, 2});
  Tensor bi = gt::from_vector<int64_t>({1000, 1, 1, 1000}, {2, 2});
  CHECK(gt::matmul(ai, bi).to_vector<int64_t>() ==
        std::vector<int64_t>{big * 1000 + 1, big + 1000, -big * 1000 + 3, -big + 3000});

  // 1-D @ 1-D is a 0-d tensor usable with item().
  Tensor v = gt::from_vector<float>({1, 2, 3});
  CHECK(gt::matmul(v, v).dim() == 0);
  CHECK(gt::matmul(v, v).item<float>() == 14.0f);

  // Errors at the call site.
  CHECK_THROWS_AS(gt::matmul(gt::zeros({2, 3}), gt::zeros({2, 3})), gt::Error);
  CHECK_THROWS_AS(gt::matmul(gt::zeros({2, 2, 3}), gt::zeros({3, 3, 2})), gt::Error);
  CHECK_THROWS_AS(gt::matmul(gt::scalar_tensor(1.0), gt::zeros({1})), gt::Error);
  CHECK_THROWS_AS(gt::matmul(gt::zeros({2, 2}, gt::kBool), gt::zeros({2, 2}, gt::kBool)), gt::Error);
}
