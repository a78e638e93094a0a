// float64, int8 and uint8 through the C++ API: float64 computed in double (errors far below what
// float32 arithmetic would make), exact double round trips, small integers wrapping as torch's,
// float -> int8/uint8 casts as torch's (through int32, then the low byte).
#include <cmath>
#include <random>

#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

TEST_CASE("float64 is stored and computed in double", "[ops][dtype][float64]") {
  daemons();
  std::mt19937_64 rng(5);
  std::normal_distribution<double> nd;
  const int m = 13, k = 29, n = 7;
  std::vector<double> a(m * k), b(k * n);
  for (auto& v : a) v = nd(rng);
  for (auto& v : b) v = nd(rng);
  Tensor ta = gt::from_vector(a, {m, k}, gt::kFloat64), tb = gt::from_vector(b, {k, n}, gt::kDouble);
  CHECK(ta.dtype() == gt::kFloat64);
  CHECK(ta.to_vector<double>() == a);  // exact round trip
  std::vector<double> c = ta.matmul(tb).to_vector<double>();
  std::vector<double> e = ta.exp().to_vector<double>();
  std::vector<double> t = ta.tanh().to_vector<double>();
  std::vector<double> s = ta.sum(1).to_vector<double>();
  for (int i = 0; i < m; ++i) {
    double row = 0;
    for (int p = 0; p < k; ++p) {
      row += a[i * k + p];
      CHECK(std::fabs(e[i * k + p] - std::exp(a[i * k + p])) <= 1e-15 * std::exp(a[i * k + p]));
      CHECK(std::fabs(t[i * k + p] - std::tanh(a[i * k + p])) <= 1e-15);
    }
    CHECK(std::fabs(s[i] - row) <= 1e-13);
    for (int j = 0; j < n; ++j) {
      double ref = 0;
      for (int p = 0; p < k; ++p) ref += a[i * k + p] * b[p * n + j];
      CHECK(std::fabs(c[i * n + j] - ref) <= 1e-13);  // float32 would be off by ~1e-6
    }
  }
  Tensor one = gt::ones({1}, gt::TensorOptions().dtype(gt::kFloat64));
  CHECK((one + 1e-12).to_vector<double>()[0] - 1.0 == Approx(1e-12).epsilon(1e-3));
  CHECK((one + gt::ones({1})).dtype() == gt::kFloat64);  // float64 wins over float32
}

TEST_CASE("int8 and uint8 wrap and cast as torch's", "[ops][dtype][int8]") {
  daemons();
  Tensor u = gt::tensor({200, 100, 0}, gt::kUInt8);
  CHECK((u + 100).dtype() == gt::kUInt8);
  CHECK((u + 100).to_vector<int64_t>() == std::vector<int64_t>{44, 200, 100});
  CHECK((-u).to_vector<int64_t>() == std::vector<int64_t>{56, 156, 0});
  CHECK(u.sum().dtype() == gt::kInt64);
  CHECK(u.sum().item<int64_t>() == 300);
  Tensor i8 = gt::tensor({-128, 127, 5}, gt::kInt8);
  CHECK((i8 + 1).to_vector<int64_t>() == std::vector<int64_t>{-127, -128, 6});
  CHECK((i8 + u).dtype() == gt::kInt32);  // torch's int16; GT has none
  CHECK((i8 + u).to_vector<int64_t>() == std::vector<int64_t>{72, 227, 5});
  // torch.tensor([300., -1., nan, 1e10, -129., 255.9, inf]).to(uint8 / int8)
  Tensor f = gt::tensor({300.0, -1.0, NAN, 1e10, -129.0, 255.9, INFINITY});
  CHECK(f.to(gt::kUInt8).to_vector<int64_t>() == std::vector<int64_t>{44, 255, 0, 0, 127, 255, 0});
  CHECK(f.to(gt::kInt8).to_vector<int64_t>() == std::vector<int64_t>{44, -1, 0, 0, 127, -1, 0});
  CHECK_THROWS_WITH(gt::full({2}, 300, gt::kUInt8), Catch::Contains("300"));
}
