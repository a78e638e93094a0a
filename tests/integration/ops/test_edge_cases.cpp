// Edge cases through real daemons: empty tensors (a 0 in the shape) through elementwise ops,
// reductions, matmul, layout and cat; size-1 dims; 0-d tensors and item(); errors at the call
// site leaving the session usable.
#include <cmath>
#include <vector>

#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

TEST_CASE("empty tensors through elementwise ops, reductions, matmul and cat", "[ops][edge][empty]") {
  daemons();
  Tensor e = gt::zeros({0, 3});
  Tensor ei = gt::zeros({0, 3}, gt::kInt64);
  Ref none03 = ref_of({0, 3}, {});
  CHECK_TENSOR(e + gt::ones({0, 3}), none03, gt::kFloat32);
  CHECK_TENSOR(e * gt::ones({3}), none03, gt::kFloat32);
  CHECK_TENSOR(e - 2.5, none03, gt::kFloat32);
  CHECK_TENSOR(ei / 2, none03, gt::kFloat32);
  CHECK_TENSOR(gt::zeros({0, 1}) + gt::ones({1, 4}), ref_of({0, 4}, {}), gt::kFloat32);
  CHECK_TENSOR(gt::ones({2, 0, 1}, gt::kInt32) * gt::ones({3}, gt::kInt32), ref_of({2, 0, 3}, {}), gt::kInt32);
  CHECK_TENSOR(e.exp(), none03, gt::kFloat32);
  CHECK_TENSOR(-ei, none03, gt::kInt64);
  CHECK_TENSOR(ei.sigmoid(), none03, gt::kFloat32);
  CHECK_TENSOR(e < ei, none03, gt::kBool);
  CHECK_TENSOR(gt::where(e > 0, e, 1.0), none03, gt::kFloat32);
  CHECK_TENSOR(e.cast(gt::kFloat16), none03, gt::kFloat16);
  CHECK_TENSOR(e.permute({1, 0}), ref_of({3, 0}, {}), gt::kFloat32);
  CHECK_TENSOR(e.reshape({3, 0, 5}), ref_of({3, 0, 5}, {}), gt::kFloat32);
  CHECK_TENSOR(e.slice(1, 1, 2), ref_of({0, 1}, {}), gt::kFloat32);
  CHECK_TENSOR(e.copy_(gt::ones({3})), none03, gt::kFloat32);

  // Reductions: sum of empty = 0, mean of empty = NaN; over the non-empty dim the result is empty.
  CHECK_TENSOR(e.sum(), ref_of({}, {0}), gt::kFloat32);
  CHECK_TENSOR(e.sum(0), ref_of({3}, {0, 0, 0}), gt::kFloat32);
  CHECK_TENSOR(e.sum(0, true), ref_of({1, 3}, {0, 0, 0}), gt::kFloat32);
  CHECK_TENSOR(e.sum(1), ref_of({0}, {}), gt::kFloat32);
  CHECK_TENSOR(std::get<0>(e.max(1)), ref_of({0}, {}), gt::kFloat32);
  CHECK_TENSOR(e.argmin(1, true), ref_of({0, 1}, {}), gt::kInt64);
  CHECK_TENSOR(ei.sum(), ref_of({}, {0}), gt::kInt64);
  CHECK_TENSOR(gt::zeros({0}, gt::kBool).sum(), ref_of({}, {0}), gt::kInt64);
  CHECK_TENSOR(e.sum(-1, true), ref_of({0, 1}, {}), gt::kFloat32);
  CHECK_TENSOR(e.mean(), ref_of({}, {NAN}), gt::kFloat32);
  CHECK_TENSOR(e.mean(0), ref_of({3}, {NAN, NAN, NAN}), gt::kFloat32);
  CHECK_THROWS_WITH(ei.mean(), Catch::Contains("mean"));  // torch: mean needs a floating input
  CHECK_TENSOR(gt::zeros({2, 0}, gt::kFloat16).sum(1), ref_of({2}, {0, 0}), gt::kFloat16);

  // matmul: k = 0 gives zeros; m = 0 / n = 0 give empty results.
  CHECK_TENSOR(gt::matmul(gt::ones({2, 0}), gt::ones({0, 3})), ref_of({2, 3}, std::vector<double>(6, 0)),
               gt::kFloat32);
  CHECK_TENSOR(gt::matmul(e, gt::ones({3, 2})), ref_of({0, 2}, {}), gt::kFloat32);
  CHECK_TENSOR(gt::matmul(gt::ones({4, 0}, gt::kInt64), gt::ones({0}, gt::kInt64)),
               ref_of({4}, {0, 0, 0, 0}), gt::kInt64);
  // cat with empty pieces.
  CHECK_TENSOR(gt::cat({e, gt::ones({2, 3}), e}), ref_of({2, 3}, std::vector<double>(6, 1)), gt::kFloat32);
  CHECK_TENSOR(gt::cat({gt::ones({2, 0}), gt::ones({2, 0})}, 1), ref_of({2, 0}, {}), gt::kFloat32);
  // arange and slices that select nothing.
  CHECK_TENSOR(gt::arange(4).slice(0, 3, 1), ref_of({0}, {}), gt::kInt64);
  CHECK(gt::arange(0).numel() == 0);
  CHECK(gt::arange(0).to_vector<int64_t>().empty());
}

TEST_CASE("size-1 dims broadcast and reduce", "[ops][edge]") {
  daemons();
  Ref a = rnd_for(gt::kFloat32, {1, 1, 3}, 1), b = rnd_for(gt::kFloat32, {3, 1, 1}, 2);
  Ref s = map2(a, b, [](double x, double y) { return x + y; });
  Tensor ts = up(a, gt::kFloat32) + up(b, gt::kFloat32);
  CHECK_TENSOR(ts, s, gt::kFloat32);
  CHECK_TENSOR(ts.sum(1), reduce_ref(s, 1, false, ref_sum), gt::kFloat32);
  CHECK_TENSOR(std::get<0>(ts.max(1, true)), s, gt::kFloat32);
  CHECK_TENSOR(ts.argmax(1), ref_of({3, 3}, std::vector<double>(9, 0)), gt::kInt64);
  CHECK_TENSOR(ts.mean(-2), reduce_ref(s, 1, false, ref_mean), gt::kFloat32);
  CHECK_TENSOR(gt::matmul(gt::full({1, 1}, 3.0), gt::full({1, 1}, -2.0)), ref_of({1, 1}, {-6}), gt::kFloat32);
  CHECK_TENSOR(gt::matmul(gt::ones({1, 5, 1}), gt::ones({4, 1, 2})), ref_of({4, 5, 2}, std::vector<double>(40, 1)),
               gt::kFloat32);
  CHECK_TENSOR(gt::ones({1}, gt::kInt64) * gt::arange(3), ref_of({3}, {0, 1, 2}), gt::kInt64);
}

TEST_CASE("0-d tensors and item()", "[ops][edge][scalar]") {
  daemons();
  Tensor s = gt::scalar_tensor(3.5);
  CHECK(s.dim() == 0);
  CHECK(s.numel() == 1);
  CHECK(s.item<float>() == 3.5f);
  CHECK((s + 1).item<double>() == 4.5);
  CHECK((s * s).item<float>() == 12.25f);
  CHECK(s.exp().item<double>() == Approx(std::exp(3.5)).epsilon(1e-6));
  CHECK((s > 3).item<bool>());
  CHECK(s.cast(gt::kInt64).item<int64_t>() == 3);
  CHECK(s.to_vector<float>() == std::vector<float>{3.5f});
  // 0-d broadcasts against anything, on either side.
  CHECK_TENSOR(s * gt::ones({2, 3}), ref_of({2, 3}, std::vector<double>(6, 3.5)), gt::kFloat32);
  CHECK_TENSOR(gt::arange(3) - gt::scalar_tensor(1, gt::kInt64), ref_of({3}, {-1, 0, 1}), gt::kInt64);
  // Full reductions give 0-d tensors.
  Tensor m = gt::from_vector<int64_t>({4, -9, 2, 7}, {2, 2});
  CHECK(m.sum().dim() == 0);
  CHECK(m.sum().item<int64_t>() == 4);
  CHECK(m.max().item<int64_t>() == 7);
  CHECK(m.min().item<int>() == -9);
  CHECK(m.argmin().item<int64_t>() == 1);
  CHECK(m.argmax().item<int64_t>() == 3);
  CHECK(m.to(gt::kFloat32).mean().item<double>() == 1.0);  // (an int64 mean raises, as torch)
  CHECK(m.sum(0).sum().item<int64_t>() == 4);
  CHECK(m.index({1, 1}).item<int64_t>() == 7);
  CHECK(m.select(0, 0).select(0, 1).item<int64_t>() == -9);
  // Reshape between 0-d and 1-element; unsqueeze of 0-d.
  CHECK(s.reshape({1}).sizes() == Shp{1});
  CHECK(s.unsqueeze(0).to_vector<float>() == std::vector<float>{3.5f});
  CHECK(gt::from_vector<float>({2.0f}).reshape({}).item<float>() == 2.0f);
  // item on more than one element throws at the call site.
  CHECK_THROWS_AS(gt::ones({2}).item<float>(), gt::Error);
  CHECK_THROWS_AS(gt::ones({0}).item<float>(), gt::Error);
}

TEST_CASE("shape and dtype errors throw gt::Error at the call site and leave the session usable",
          "[ops][edge][errors]") {
  daemons();
  Tensor a = gt::ones({2, 3});
  CHECK_THROWS_AS(a + gt::ones({2}), gt::Error);
  CHECK_THROWS_AS(a.matmul(a), gt::Error);
  CHECK_THROWS_AS(a.sum(2), gt::Error);
  CHECK_THROWS_AS(a.mean(-3, true), gt::Error);
  CHECK_THROWS_AS(a.permute({0, 0}), gt::Error);
  CHECK_THROWS_AS(a.unsqueeze(4), gt::Error);
  CHECK_THROWS_AS(gt::where(a, a, a), gt::Error);
  CHECK_THROWS_AS(-gt::ones({2}, gt::kBool), gt::Error);
  CHECK_THROWS_AS(gt::ones({2}, gt::kBool).relu(), gt::Error);
  CHECK_THROWS_AS(gt::ones({2}, gt::kBool) - gt::ones({2}, gt::kBool), gt::Error);
  CHECK_THROWS_AS(gt::rand({2}, gt::kInt32), gt::Error);
  CHECK_THROWS_AS(gt::zeros({-1}), gt::Error);
  CHECK_THROWS_AS(Tensor().exp(), gt::Error);
  CHECK_THROWS_WITH(a.matmul(a), Catch::Contains("matmul"));
  CHECK_THROWS_WITH(a.reshape({4, -1}), Catch::Contains("reshape"));
  CHECK_NOTHROW(gt::synchronize());
  CHECK((a * 2).sum().item<float>() == 12.0f);
}
