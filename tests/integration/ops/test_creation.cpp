// Creation ops through real daemons: zeros/ones/full/arange, randn/rand (recomputed with the
// Philox reference), from_vector for every dtype and a chunked (> 4 MiB) upload.
#include <climits>
#include <cmath>
#include <cstdint>
#include <vector>

#include "libgtcore/philox.h"
#include "op_test_util.h"

using namespace gtt;

namespace {

Ref arange_ref(double start, double end, double step, gt::DType d) {
  int64_t n = static_cast<int64_t>(std::ceil((end - start) / step));
  if (n < 0) n = 0;
  Ref r{{n}, {}};
  for (int64_t i = 0; i < n; ++i) r.v.push_back(to_dtype(start + static_cast<double>(i) * step, d));
  return r;
}

}  // namespace

GT_OPS_COVERED("zeros", "ones", "full");
TEST_CASE("zeros, ones and full for every dtype", "[ops][creation]") {
  daemons();
  for (gt::DType d : all_dtypes()) {
    INFO("dtype " << dt_name(d));
    CHECK_TENSOR(gt::zeros({2, 3}, d), ref_of({2, 3}, std::vector<double>(6, 0.0)), d);
    CHECK_TENSOR(gt::ones({4}, d), ref_of({4}, std::vector<double>(4, 1.0)), d);
    CHECK_TENSOR(gt::ones({2, 0, 3}, d), ref_of({2, 0, 3}, {}), d);
    CHECK_TENSOR(gt::zeros({}, d), ref_of({}, {0.0}), d);
    double fill = d == gt::kBool ? 1.0 : is_int_dt(d) ? -7.0 : -2.5;
    CHECK_TENSOR(gt::full({3, 1, 2}, fill, d), ref_of({3, 1, 2}, std::vector<double>(6, fill)), d);
  }
  // Default dtypes of full follow the value's type.
  CHECK_TENSOR(gt::full({2}, 7), ref_of({2}, {7, 7}), gt::kInt64);
  CHECK_TENSOR(gt::full({2}, 2.5), ref_of({2}, {2.5, 2.5}), gt::kFloat32);
  CHECK_TENSOR(gt::full({2}, true), ref_of({2}, {1, 1}), gt::kBool);
  CHECK_TENSOR(gt::full({2, 2}, -0.1), ref_of({2, 2}, std::vector<double>(4, to_dtype(-0.1, gt::kFloat32))),
               gt::kFloat32);
  CHECK_TENSOR(gt::scalar_tensor(3.25), ref_of({}, {3.25}), gt::kFloat32);
  CHECK_TENSOR(gt::full({3}, int64_t{1} << 40), ref_of({3}, std::vector<double>(3, 1099511627776.0)),
               gt::kInt64);
}

GT_OPS_COVERED("arange");
TEST_CASE("arange: int and float, negative steps, empty ranges, explicit dtypes", "[ops][creation]") {
  daemons();
  CHECK_TENSOR(gt::arange(5), arange_ref(0, 5, 1, gt::kInt64), gt::kInt64);
  CHECK_TENSOR(gt::arange(2, 11, 3), arange_ref(2, 11, 3, gt::kInt64), gt::kInt64);
  CHECK_TENSOR(gt::arange(10, 0, -3), arange_ref(10, 0, -3, gt::kInt64), gt::kInt64);
  CHECK_TENSOR(gt::arange(-2, -9, -2), arange_ref(-2, -9, -2, gt::kInt64), gt::kInt64);
  CHECK_TENSOR(gt::arange(0.0, 1.0, 0.25), arange_ref(0, 1, 0.25, gt::kFloat32), gt::kFloat32);
  CHECK_TENSOR(gt::arange(1.0, -1.0, -0.5), arange_ref(1, -1, -0.5, gt::kFloat32), gt::kFloat32);
  CHECK_TENSOR(gt::arange(-3.5, 3.5, 1.75), arange_ref(-3.5, 3.5, 1.75, gt::kFloat32), gt::kFloat32);
  CHECK_TENSOR(gt::arange(0, 1, 0.1), arange_ref(0, 1, 0.1, gt::kFloat32), gt::kFloat32);
  CHECK_TENSOR(gt::arange(2.5), arange_ref(0, 2.5, 1, gt::kFloat32), gt::kFloat32);
  // Empty ranges.
  CHECK_TENSOR(gt::arange(5, 5), ref_of({0}, {}), gt::kInt64);
  CHECK_TENSOR(gt::arange(1.0, 1.0, 0.5), ref_of({0}, {}), gt::kFloat32);
  CHECK_TENSOR(gt::arange(4, 4, -2), ref_of({0}, {}), gt::kInt64);
  // A step pointing away from the end is an error, as in PyTorch (not an empty range).
  CHECK_THROWS_WITH(gt::arange(3, 0), Catch::Contains("inconsistent with step sign"));
  CHECK_THROWS_WITH(gt::arange(0, 3, -1), Catch::Contains("inconsistent with step sign"));
  CHECK_THROWS_WITH(gt::arange(0.0, -0.5, 0.1), Catch::Contains("inconsistent with step sign"));
  // An integer dtype truncates start and step first (PyTorch's): -1, 0, ..., 4, and a
  // fractional step below 1 becomes 0. int64 counts from the truncated bounds, int32 from the
  // given ones (torch's special case for int64): 7 and 5 elements here.
  CHECK_TENSOR(gt::arange(-1.25, 5.0, 1, gt::kInt64), arange_ref(-1, 5, 1, gt::kInt64), gt::kInt64);
  CHECK_TENSOR(gt::arange(-3.5, -10.0, -1.5, gt::kInt64), arange_ref(-3, -10, -1, gt::kInt64),
               gt::kInt64);
  CHECK_TENSOR(gt::arange(-3.5, -10.0, -1.5, gt::kInt32), arange_ref(-3, -8, -1, gt::kInt32),
               gt::kInt32);
  CHECK_THROWS_WITH(gt::arange(0, 10, 0.5, gt::kInt64), Catch::Contains("step must be nonzero"));
  // Explicit dtypes.
  CHECK_TENSOR(gt::arange(0, 5, gt::kFloat32), arange_ref(0, 5, 1, gt::kFloat32), gt::kFloat32);
  CHECK_TENSOR(gt::arange(0, 10, 3, gt::kFloat16), arange_ref(0, 10, 3, gt::kFloat16), gt::kFloat16);
  CHECK_TENSOR(gt::arange(-4, 4, 2, gt::kBFloat16), arange_ref(-4, 4, 2, gt::kBFloat16), gt::kBFloat16);
  CHECK_TENSOR(gt::arange(7, -7, -4, gt::kInt32), arange_ref(7, -7, -4, gt::kInt32), gt::kInt32);
  // Errors at the call site.
  CHECK_THROWS_AS(gt::arange(0, 5, 0), gt::Error);
  CHECK_THROWS_AS(gt::arange(0, 5, 1, gt::kBool), gt::Error);
}

GT_OPS_COVERED("randn", "rand");
TEST_CASE("randn and rand: Philox values, determinism under manual_seed, rand in 0..1",
          "[ops][creation][random]") {
  daemons();
  const uint64_t seed = 0x1234567890abcdefull;
  const int64_t n = 3000;
  gt::manual_seed(seed);
  gt::Tensor a = gt::randn({30, 100});     // counter 0
  gt::Tensor b = gt::rand({n});            // counter 1
  gt::Tensor c = gt::randn({7}, gt::kFloat16);  // counter 2
  gt::Tensor e = gt::rand({5, 3}, gt::kBFloat16);  // counter 3
  CHECK_THROWS_AS(gt::randn({3}, gt::kInt64), gt::Error);  // rejected: consumes no counter
  gt::Tensor f = gt::rand({9});            // counter 4
  Ref ra{{30, 100}, {}}, rb{{n}, {}}, rc{{7}, {}}, re{{5, 3}, {}}, rf{{9}, {}};
  for (int64_t i = 0; i < 3000; ++i) ra.v.push_back(gt::philox::normal(seed, 0, i));
  for (int64_t i = 0; i < n; ++i) rb.v.push_back(gt::philox::uniform(seed, 1, i));
  for (int64_t i = 0; i < 7; ++i) rc.v.push_back(gt::philox::normal(seed, 2, i));
  for (int64_t i = 0; i < 15; ++i) re.v.push_back(gt::philox::uniform(seed, 3, i));
  for (int64_t i = 0; i < 9; ++i) rf.v.push_back(gt::philox::uniform(seed, 4, i));
  CHECK_TENSOR(a, ra, gt::kFloat32, Tol{1e-6, 1e-6});
  CHECK_TENSOR(b, rb, gt::kFloat32, Tol{0, 0});  // 24-bit uniforms are exact in float32
  CHECK_TENSOR(c, rc, gt::kFloat16);
  CHECK_TENSOR(e, re, gt::kBFloat16);
  CHECK_TENSOR(f, rf, gt::kFloat32, Tol{0, 0});

  // Statistics of the uniform draw and its range.
  std::vector<float> bv = b.to_vector<float>();
  double mean = 0;
  bool in_range = true;
  for (float x : bv) {
    in_range = in_range && x >= 0.0f && x < 1.0f;
    mean += x;
  }
  CHECK(in_range);
  CHECK(std::fabs(mean / n - 0.5) < 0.03);
  std::vector<float> av = a.to_vector<float>();
  double m1 = 0, m2 = 0;
  for (float x : av) m1 += x, m2 += double(x) * x;
  m1 /= av.size();
  m2 /= av.size();
  CHECK(std::fabs(m1) < 0.1);
  CHECK(std::fabs(m2 - 1.0) < 0.1);

  // Same seed -> same values; the counter restarts at 0.
  gt::manual_seed(seed);
  gt::Tensor a2 = gt::randn({30, 100});
  gt::Tensor b2 = gt::rand({n});
  CHECK(a2.to_vector<float>() == av);
  CHECK(b2.to_vector<float>() == bv);
  // A different seed or counter gives different values.
  gt::manual_seed(seed + 1);
  gt::Tensor a3 = gt::randn({30, 100});
  CHECK(a3.to_vector<float>() != av);
  gt::Tensor a4 = gt::randn({30, 100});  // counter 1
  CHECK(a4.to_vector<float>() != a3.to_vector<float>());
}

TEST_CASE("rand in float16 and bfloat16 stays below 1", "[ops][creation][random]") {
  // A 24-bit uniform close to 1 rounds up to exactly 1.0 in a 16-bit float unless the kernel
  // guards it; PyTorch's rand never returns 1.
  daemons();
  gt::manual_seed(99);
  for (gt::DType d : {gt::kFloat16, gt::kBFloat16}) {
    INFO("dtype " << dt_name(d));
    std::vector<float> v = gt::rand({1 << 16}, d).to_vector<float>();
    int64_t ones = 0, neg = 0;
    for (float x : v) ones += x >= 1.0f, neg += x < 0.0f;
    CHECK(neg == 0);
    CHECK(ones == 0);
  }
}

GT_OPS_COVERED("from_host", "host_chunk");
TEST_CASE("from_vector round-trips every dtype", "[ops][creation][upload]") {
  daemons();
  std::vector<float> f32{0.0f, -1.5f, 3.25e-8f, 1e30f, -INFINITY, 7.0f};
  gt::Tensor tf = gt::from_vector(f32, {2, 3});
  CHECK(tf.dtype() == gt::kFloat32);
  CHECK(tf.to_vector<float>() == f32);

  std::vector<int64_t> i64{0, -1, (int64_t{1} << 60) + 1, INT64_MIN, INT64_MAX, 42};
  gt::Tensor ti = gt::from_vector(i64, {3, 2});
  CHECK(ti.dtype() == gt::kInt64);
  CHECK(ti.to_vector<int64_t>() == i64);

  std::vector<int32_t> i32{INT32_MIN, -3, 0, 5, INT32_MAX};
  gt::Tensor t32 = gt::from_vector(i32);
  CHECK(t32.dtype() == gt::kInt32);
  CHECK(t32.to_vector<int32_t>() == i32);

  std::vector<bool> bl{true, false, false, true, true};
  gt::Tensor tb = gt::from_vector(bl, {5, 1});
  CHECK(tb.dtype() == gt::kBool);
  CHECK(tb.to_vector<bool>() == bl);
  CHECK(tb.to_vector<int>() == std::vector<int>{1, 0, 0, 1, 1});

  std::vector<float> halfable{0.5f, -2.0f, 65504.0f, 6.103515625e-05f, 1.0009765625f, -0.0f};
  std::vector<gt::Half> hv(halfable.begin(), halfable.end());
  gt::Tensor th = gt::from_vector(hv, {2, 3});
  CHECK(th.dtype() == gt::kFloat16);
  CHECK(th.to_vector<float>() == halfable);
  gt::Tensor th2 = gt::from_vector(halfable, {6}, gt::kFloat16);
  CHECK(th2.dtype() == gt::kFloat16);
  CHECK(th2.to_vector<float>() == halfable);

  std::vector<float> bfable{0.5f, -2.0f, 3.0e38f, 1.0078125f, -0.0f, 256.0f};
  std::vector<gt::BFloat16> bv;
  for (float x : bfable) bv.emplace_back(x);
  std::vector<float> bf_exact;
  for (auto x : bv) bf_exact.push_back(static_cast<float>(x));
  gt::Tensor tbf = gt::from_vector(bv, {3, 2});
  CHECK(tbf.dtype() == gt::kBFloat16);
  CHECK(tbf.to_vector<float>() == bf_exact);
  CHECK(bf_exact[3] == 1.0078125f);

  // 0-d and empty uploads.
  gt::Tensor s = gt::from_vector(std::vector<double>{2.5}, gt::Dims(Shp{}));
  CHECK(s.dim() == 0);
  CHECK(s.item<double>() == 2.5);
  gt::Tensor empty = gt::from_vector(std::vector<float>{}, {0, 4});
  CHECK(empty.sizes() == Shp{0, 4});
  CHECK(empty.to_vector<float>().empty());
}

TEST_CASE("an upload larger than 4 MiB is chunked and round-trips exactly", "[ops][creation][upload]") {
  daemons();
  // 1,500,001 floats = 6 MB + 4 bytes: two full-ish chunks plus a ragged tail.
  const int64_t n = 1500001;
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 100003) * 0.25f - 1000.0f;
  gt::Tensor t = gt::from_vector(v, {n});
  CHECK(t.to_vector<float>() == v);
  // Ops see every chunk: the last element and a strided view of the tail.
  CHECK(t.select(0, -1).item<float>() == v.back());
  CHECK(t.slice(0, n - 5).to_vector<float>() == std::vector<float>(v.end() - 5, v.end()));

  // int64 with a shape: 1,100,000 x 8 bytes = 8.8 MB.
  std::vector<int64_t> w(1100000);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int64_t>(i) * 1000003 - (int64_t{1} << 40);
  gt::Tensor tw = gt::from_vector(w, {1100, 1000});
  CHECK(tw.to_vector<int64_t>() == w);
  std::vector<int64_t> col = tw.select(1, 999).to_vector<int64_t>();
  bool col_ok = col.size() == 1100;
  for (size_t r = 0; col_ok && r < 1100; ++r) col_ok = col[r] == w[r * 1000 + 999];
  CHECK(col_ok);
}
