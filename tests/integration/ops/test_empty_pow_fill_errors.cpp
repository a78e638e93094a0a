// Issue item 11 through the C++ API and real daemons: empty tensors with huge dims behave the
// same in either dim order; integer ** negative integer and non-finite / out-of-range integer
// fills are errors at the call site (as in PyTorch); an error raised by a fetch is not raised
// again by the next synchronize().
#include <climits>
#include <cmath>
#include <vector>

#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

namespace {

// Both must behave alike: as empty tensors, or both as the same call-site error.
void check_empty(const Tensor& t) {
  CHECK(t.numel() == 0);
  CHECK(t.to_vector<float>().empty());
  CHECK(t.sum().item<float>() == 0.0f);
  CHECK((t + 1).numel() == 0);
  CHECK(t.neg().to_vector<float>().empty());
  CHECK(t.reshape({0}).numel() == 0);
  CHECK(t.t().numel() == 0);
}

}  // namespace

TEST_CASE("zeros([2^63-1, 0]) and zeros([0, 2^63-1]) are both empty tensors", "[ops][empty]") {
  daemons();
  Tensor a = gt::zeros({INT64_MAX, 0});
  Tensor b = gt::zeros({0, INT64_MAX});
  CHECK(a.sizes() == std::vector<int64_t>{INT64_MAX, 0});
  CHECK(b.sizes() == std::vector<int64_t>{0, INT64_MAX});
  check_empty(a);
  check_empty(b);
  CHECK(gt::cat({a, a}, 1).numel() == 0);
  CHECK(gt::full({0, INT64_MAX}, 3, gt::kInt64).to_vector<int64_t>().empty());
  CHECK(gt::ones({INT64_MAX, 0, INT64_MAX}).sum().item<float>() == 0.0f);
  // Reducing the empty dim away leaves 2^63-1 elements: refused at the call site, either way.
  CHECK_THROWS_AS(a.sum(1), gt::Error);
  CHECK_THROWS_AS(b.sum(0), gt::Error);
  gt::synchronize();  // nothing failed on the worker
}

TEST_CASE("integer tensor ** negative integer is an error at the call site, as in PyTorch",
          "[ops][pow]") {
  daemons();
  Tensor x = gt::from_vector<int64_t>({2, 3, -1, 1});
  CHECK_THROWS_WITH(x.pow(-1), Catch::Contains("Integers to negative integer powers are not allowed."));
  CHECK_THROWS_WITH(gt::pow(x, -2), Catch::Contains("Integers to negative integer powers"));
  CHECK_THROWS_AS(gt::from_vector<int32_t>({2}).pow(-1), gt::Error);
  // What PyTorch allows, GT too: a zero exponent, a float exponent (float result), a float
  // base, and an integer exponent tensor (computed: 2 ** -1 is 0 there as in torch).
  CHECK(x.pow(0).to_vector<int64_t>() == std::vector<int64_t>{1, 1, 1, 1});
  CHECK_TENSOR(x.pow(-1.0), ref_of({4}, {0.5, 1.0 / 3, -1.0, 1.0}), gt::kFloat32, Tol{1e-6, 1e-6});
  CHECK(gt::full({2}, 2.0).pow(-1).to_vector<float>() == std::vector<float>{0.5f, 0.5f});
  CHECK(x.pow(gt::from_vector<int64_t>({-1, -1, -1, -1})).to_vector<int64_t>() ==
        std::vector<int64_t>{0, 0, -1, 1});
  CHECK(gt::pow(2, gt::from_vector<int64_t>({-1, 3})).to_vector<int64_t>() ==
        std::vector<int64_t>{0, 8});
  gt::synchronize();
}

TEST_CASE("non-finite or out-of-range fill values into integer dtypes are call-site errors",
          "[ops][full]") {
  daemons();
  for (gt::DType d : {gt::kInt64, gt::kInt32}) {
    INFO(dt_name(d));
    CHECK_THROWS_WITH(gt::full({2}, NAN, d), Catch::Contains("full") && Catch::Contains("nan"));
    CHECK_THROWS_WITH(gt::full({2}, INFINITY, d), Catch::Contains("inf"));
    CHECK_THROWS_AS(gt::full({2}, -INFINITY, d), gt::Error);
    CHECK_THROWS_AS(gt::full({2}, 1e30, d), gt::Error);
    CHECK_THROWS_AS(gt::zeros({3}, d).masked_fill(gt::full({3}, true), NAN), gt::Error);
    // Finite values truncate toward zero, as a cast does (torch.full((2,), 2.7, dtype=int64)).
    CHECK(gt::full({2}, 2.7, d).to_vector<int64_t>() == std::vector<int64_t>{2, 2});
    CHECK(gt::full({2}, -2.7, d).to_vector<int64_t>() == std::vector<int64_t>{-2, -2});
  }
  CHECK_THROWS_AS(gt::full({1}, int64_t{1} << 40, gt::kInt32), gt::Error);
  CHECK(gt::full({1}, INT64_MIN).item<int64_t>() == INT64_MIN);
  CHECK(gt::full({1}, -9223372036854775808.0, gt::kInt64).item<int64_t>() == INT64_MIN);
  // Floating and bool tensors take them (bool: nan is true, as in torch).
  CHECK(std::isnan(gt::full({1}, NAN).item<float>()));
  CHECK(gt::full({2}, NAN, gt::kBool).to_vector<bool>() == std::vector<bool>{true, true});
  gt::synchronize();
}

TEST_CASE("an error raised by a fetch is not raised again by synchronize() but a new one is",
          "[ops][errors]") {
  daemons();
  gt::synchronize();
  Tensor x = gt::ones({4});
  Tensor bad = x.index_select(0, gt::from_vector<int64_t>({0, 7}));  // 7: out of range on the worker
  CHECK_THROWS_WITH(bad.sum().item<float>(), Catch::Contains("index_select"));
  CHECK_NOTHROW(gt::synchronize());
  CHECK_THROWS_WITH(bad.to_vector<float>(), Catch::Contains("index_select"));  // every fetch
  CHECK_NOTHROW(gt::synchronize());
  // The same failure again, not fetched: synchronize() raises it, once.
  Tensor bad2 = x.index_select(0, gt::from_vector<int64_t>({0, 7}));
  CHECK_THROWS_WITH(gt::synchronize(), Catch::Contains("index_select"));
  CHECK_NOTHROW(gt::synchronize());
  // Fetched in a loop, each step's failure once.
  for (int i = 0; i < 3; ++i) {
    Tensor b = x.index_select(0, gt::from_vector<int64_t>({9}));
    CHECK_THROWS_AS((b * 2).max().item<float>(), gt::Error);
  }
  CHECK_NOTHROW(gt::synchronize());
  CHECK(x.sum().item<float>() == 4.0f);
}
