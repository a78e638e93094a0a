// Larger shapes (past any vector width, block or thread split), rank-8 tensors, extreme values
// in reductions, accumulation precision and large integers, through real daemons.
#include <climits>
#include <cmath>
#include <vector>

#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

TEST_CASE("larger shapes through elementwise, reduction, layout and matmul ops", "[ops][large]") {
  daemons();
  Ref x = rnd_for(gt::kFloat32, {64, 1001}, 1), y = rnd_for(gt::kFloat32, {1001}, 2);
  Tensor tx = up(x, gt::kFloat32), ty = up(y, gt::kFloat32);
  CHECK_TENSOR(tx + ty, map2(x, y, [](double a, double b) { return a + b; }), gt::kFloat32);
  CHECK_TENSOR(tx * ty, map2(x, y, [](double a, double b) { return a * b; }), gt::kFloat32);
  CHECK_TENSOR(gt::maximum(tx, ty), map2(x, y, [](double a, double b) { return std::max(a, b); }),
               gt::kFloat32);
  CHECK_TENSOR(tx > ty, map2(x, y, [](double a, double b) { return a > b ? 1.0 : 0.0; }), gt::kBool);
  CHECK_TENSOR(tx.tanh(), map1(x, [](double a) { return std::tanh(a); }), gt::kFloat32, Tol{1e-5, 1e-5});
  CHECK_TENSOR(tx.sum(0), reduce_ref(x, 0, false, ref_sum), gt::kFloat32, Tol{1e-4, 1e-5});
  CHECK_TENSOR(tx.sum(1, true), reduce_ref(x, 1, true, ref_sum), gt::kFloat32, Tol{1e-4, 1e-5});
  CHECK_TENSOR(tx.sum(), reduce_ref(x, std::nullopt, false, ref_sum), gt::kFloat32, Tol{1e-3, 1e-5});
  CHECK_TENSOR(tx.mean(1), reduce_ref(x, 1, false, ref_mean), gt::kFloat32, Tol{1e-5, 1e-5});
  CHECK_TENSOR(std::get<0>(tx.max(0)), reduce_ref(x, 0, false, ref_max), gt::kFloat32);
  // argmax with ties (values repeat): the first occurrence.
  CHECK_TENSOR(tx.argmax(1), reduce_ref(x, 1, false, [](const std::vector<double>& v) {
                 return ref_argext(v, true);
               }), gt::kInt64);
  CHECK_TENSOR(tx.argmin(0), reduce_ref(x, 0, false, [](const std::vector<double>& v) {
                 return ref_argext(v, false);
               }), gt::kInt64);
  CHECK_TENSOR(tx.slice(1, gt::None, gt::None, -3), slice_ref(x, 1, std::nullopt, std::nullopt, -3),
               gt::kFloat32);
  CHECK_TENSOR(tx.t(), permute_ref(x, {1, 0}), gt::kFloat32);
  Ref z = rnd_for(gt::kInt64, {16, 50, 81}, 3);
  CHECK_TENSOR(up(z, gt::kInt64).permute({2, 0, 1}), permute_ref(z, {2, 0, 1}), gt::kInt64);
  CHECK_TENSOR(up(z, gt::kFloat16).permute({1, 2, 0}), permute_ref(z, {1, 2, 0}), gt::kFloat16);
  CHECK_TENSOR(gt::cat({tx, tx.slice(1, 0, 500)}, 1), cat_ref({x, slice_ref(x, 1, 0, 500, 1)}, 1),
               gt::kFloat32);
  Ref a = rnd_for(gt::kFloat32, {130, 97}, 4), b = rnd_for(gt::kFloat32, {97, 83}, 5);
  CHECK_TENSOR(gt::matmul(up(a, gt::kFloat32), up(b, gt::kFloat32)), matmul_ref(a, b), gt::kFloat32,
               Tol{1e-4, 1e-5});
  Ref c = rnd_for(gt::kFloat32, {6, 1, 16, 33}, 6), e = rnd_for(gt::kFloat32, {5, 33, 9}, 7);
  CHECK_TENSOR(gt::matmul(up(c, gt::kFloat32), up(e, gt::kFloat32)), matmul_ref(c, e), gt::kFloat32,
               Tol{1e-4, 1e-5});
  Ref ci = rnd_for(gt::kInt64, {6, 1, 16, 33}, 8);
  // float16 @ float16 over the batch broadcast (int64 @ float16 is refused, as torch.matmul
  // does not promote).
  CHECK_TENSOR(gt::matmul(up(ci, gt::kFloat16), up(e, gt::kFloat16)), to_dtype(matmul_ref(ci, e), gt::kFloat16),
               gt::kFloat16, Tol{2e-3, 2e-3});
}

TEST_CASE("rank-8 tensors", "[ops][large][rank]") {
  daemons();
  const Shp s8{2, 1, 2, 3, 1, 2, 2, 3};
  Ref x = rnd_for(gt::kFloat32, s8, 11), y = rnd_for(gt::kFloat32, {1, 3, 1, 2, 1, 3}, 12);
  Tensor tx = up(x, gt::kFloat32);
  CHECK_TENSOR(tx + up(y, gt::kFloat32), map2(x, y, [](double a, double b) { return a + b; }), gt::kFloat32);
  CHECK_TENSOR(tx.permute({7, 6, 5, 4, 3, 2, 1, 0}), permute_ref(x, {7, 6, 5, 4, 3, 2, 1, 0}), gt::kFloat32);
  CHECK_TENSOR(tx.permute({3, 0, 7, 1, 5, 2, 6, 4}), permute_ref(x, {3, 0, 7, 1, 5, 2, 6, 4}), gt::kFloat32);
  CHECK_TENSOR(tx.sum(3), reduce_ref(x, 3, false, ref_sum), gt::kFloat32);
  CHECK_TENSOR(tx.argmax(-1, true), reduce_ref(x, -1, true, [](const std::vector<double>& v) {
                 return ref_argext(v, true);
               }), gt::kInt64);
  CHECK_TENSOR(tx.slice(7, gt::None, gt::None, -2), slice_ref(x, 7, std::nullopt, std::nullopt, -2),
               gt::kFloat32);
  Ref w = rnd_for(gt::kFloat32, {3, 4}, 13);
  CHECK_TENSOR(gt::matmul(tx, up(w, gt::kFloat32)), matmul_ref(x, w), gt::kFloat32);
  CHECK_TENSOR(gt::cat({tx, tx}, 4), cat_ref({x, x}, 4), gt::kFloat32);
  CHECK_THROWS_AS(tx.unsqueeze(0), gt::Error);  // rank 9
}

TEST_CASE("reductions at extreme values", "[ops][reduce][extremes]") {
  daemons();
  for (gt::DType d : {gt::kFloat32, gt::kFloat16, gt::kBFloat16}) {
    INFO("dtype " << dt_name(d));
    Tensor ninf = up(ref_of({2, 3}, std::vector<double>(6, -INFINITY)), d);
    Tensor pinf = up(ref_of({2, 3}, std::vector<double>(6, INFINITY)), d);
    Tensor nan = up(ref_of({2, 3}, std::vector<double>(6, NAN)), d);
    CHECK_TENSOR(ninf.max(), ref_of({}, {-INFINITY}), d);
    CHECK_TENSOR(std::get<0>(ninf.max(1)), ref_of({2}, {-INFINITY, -INFINITY}), d);
    CHECK_TENSOR(ninf.argmax(1), ref_of({2}, {0, 0}), gt::kInt64);
    CHECK_TENSOR(std::get<0>(pinf.min(0)), ref_of({3}, {INFINITY, INFINITY, INFINITY}), d);
    CHECK_TENSOR(pinf.argmin(), ref_of({}, {0}), gt::kInt64);
    CHECK_TENSOR(pinf.sum(1), ref_of({2}, {INFINITY, INFINITY}), d);
    CHECK_TENSOR((pinf + ninf).sum(), ref_of({}, {NAN}), d);
    CHECK_TENSOR(nan.argmax(), ref_of({}, {0}), gt::kInt64);
    CHECK_TENSOR(nan.argmin(1), ref_of({2}, {0, 0}), gt::kInt64);
    CHECK_TENSOR(std::get<0>(nan.max(0)), ref_of({3}, {NAN, NAN, NAN}), d);
  }
  Tensor lo = gt::from_vector<int64_t>({INT64_MIN, INT64_MIN, INT64_MIN + 1, INT64_MIN}, {2, 2});
  CHECK(lo.max().item<int64_t>() == INT64_MIN + 1);
  CHECK(std::get<0>(lo.max(1)).to_vector<int64_t>() == std::vector<int64_t>{INT64_MIN, INT64_MIN + 1});
  CHECK(lo.argmax(0).to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  CHECK(lo.min().item<int64_t>() == INT64_MIN);
  Tensor hi = gt::from_vector<int64_t>({INT64_MAX, INT64_MAX - 1, INT64_MAX});
  CHECK(hi.min().item<int64_t>() == INT64_MAX - 1);
  CHECK(hi.argmin().item<int64_t>() == 1);
  CHECK(hi.argmax().item<int64_t>() == 0);
  Tensor i32 = gt::from_vector<int32_t>({INT32_MIN, INT32_MIN});
  CHECK(i32.max().item<int64_t>() == INT32_MIN);
  CHECK(i32.argmax().item<int64_t>() == 0);
}

TEST_CASE("16-bit float reductions accumulate in float32", "[ops][reduce][precision]") {
  daemons();
  // 10000 and 5000 are exact in float16 (1000 in bfloat16); a 16-bit accumulator stalls at 2048.
  CHECK_TENSOR(gt::ones({10000}, gt::kFloat16).sum(), ref_of({}, {10000}), gt::kFloat16, Tol{0, 0});
  CHECK_TENSOR(gt::ones({3, 5000}, gt::kFloat16).sum(1), ref_of({3}, {5000, 5000, 5000}), gt::kFloat16,
               Tol{0, 0});
  CHECK_TENSOR(gt::ones({5000, 2}, gt::kFloat16).sum(0), ref_of({2}, {5000, 5000}), gt::kFloat16, Tol{0, 0});
  CHECK_TENSOR(gt::ones({1000}, gt::kBFloat16).sum(), ref_of({}, {1000}), gt::kBFloat16, Tol{0, 0});
  CHECK_TENSOR(gt::ones({10000}, gt::kFloat16).mean(), ref_of({}, {1}), gt::kFloat16, Tol{0, 0});
  CHECK_TENSOR(gt::full({4000}, 0.25, gt::kBFloat16).mean(), ref_of({}, {0.25}), gt::kBFloat16, Tol{0, 0});
  // 16-bit matmul over a long dot product.
  CHECK_TENSOR(gt::matmul(gt::ones({2, 4096}, gt::kFloat16), gt::ones({4096, 3}, gt::kFloat16)),
               ref_of({2, 3}, std::vector<double>(6, 4096)), gt::kFloat16, Tol{0, 0});
  CHECK_TENSOR(gt::matmul(gt::ones({1, 1024}, gt::kBFloat16), gt::ones({1024}, gt::kBFloat16)),
               ref_of({1}, {1024}), gt::kBFloat16, Tol{0, 0});
}

TEST_CASE("float32 sum of 2^24+ elements does not stall", "[ops][reduce][precision]") {
  // PyTorch's cascade/pairwise summation gives exactly 20000000 here; a single float32
  // accumulator stops at 16777216.
  daemons();
  CHECK(gt::ones({20000000}).sum().item<double>() == 20000000.0);
  CHECK(gt::ones({2, 10000000}).sum(1).to_vector<double>() == std::vector<double>{1e7, 1e7});
  CHECK(gt::ones({20000000}).mean().item<double>() == 1.0);
}

TEST_CASE("float arange over many elements is start + i * step", "[ops][creation][large]") {
  daemons();
  const int64_t n = 1000000;
  Ref want{{n}, {}};
  for (int64_t i = 0; i < n; ++i) want.v.push_back(to_dtype(-5000.0 + static_cast<double>(i) * 0.01, gt::kFloat32));
  CHECK_TENSOR(gt::arange(-5000.0, 5000.0, 0.01), want, gt::kFloat32, Tol{1e-6, 1e-6});
  Ref wi{{n}, {}};
  for (int64_t i = 0; i < n; ++i) wi.v.push_back(static_cast<double>(int64_t{1} << 40) - 3 * static_cast<double>(i));
  Tensor ti = gt::arange(int64_t{1} << 40, (int64_t{1} << 40) - 3 * n, -3);
  CHECK_TENSOR(ti, wi, gt::kInt64);
  // A large bool upload (> 4 MiB, chunked) and its count.
  std::vector<bool> flags(5000001);
  int64_t count = 0;
  for (size_t i = 0; i < flags.size(); ++i) count += (flags[i] = (i * 2654435761u) % 7 < 3);
  Tensor tf = gt::from_vector(flags);
  CHECK(tf.to_vector<bool>() == flags);
  CHECK(tf.sum().item<int64_t>() == count);
}

TEST_CASE("int64 scalars and fill values beyond 2^53 are exact", "[ops][int64]") {
  // The wire's scalar is a double; integers travel exactly beside it (like PyTorch's int64
  // scalars), so values above 2^53 are not rounded.
  daemons();
  const int64_t big = (int64_t{1} << 60) + 1;
  CHECK(gt::full({2}, big).to_vector<int64_t>() == std::vector<int64_t>{big, big});
  CHECK((gt::zeros({2}, gt::kInt64) + big).to_vector<int64_t>() == std::vector<int64_t>{big, big});
  CHECK((gt::full({1}, 3) * (int64_t{1} << 61) - 1).item<int64_t>() == 3 * (int64_t{1} << 61) - 1);
  CHECK((gt::from_vector<int64_t>({big}) == big).item<bool>());
}

TEST_CASE("pow special cases", "[ops][binary][pow]") {
  daemons();
  Tensor base = gt::from_vector<float>({0, 0, NAN, 1, -8, -2, 2, 0});
  Tensor ex = gt::from_vector<float>({0, -1, 0, NAN, 1.0f / 3, 3, -2, 2});
  CHECK_TENSOR(gt::pow(base, ex), ref_of({8}, {1, INFINITY, 1, 1, NAN, -8, 0.25, 0}), gt::kFloat32);
  CHECK_TENSOR(gt::pow(base, 0), ref_of({8}, {1, 1, 1, 1, 1, 1, 1, 1}), gt::kFloat32);
  CHECK_TENSOR(gt::pow(gt::from_vector<int64_t>({0, 5, -3, 2}), gt::from_vector<int64_t>({0, 0, 3, 62})),
               ref_of({4}, {1, 1, -27, 4611686018427387904.0}), gt::kInt64);
  CHECK_TENSOR(gt::pow(2, gt::from_vector<int64_t>({0, 10, 40})), ref_of({3}, {1, 1024, 1099511627776.0}),
               gt::kInt64);
  CHECK_TENSOR(gt::pow(2.0, gt::from_vector<float>({0.5f, -1}, {2}, gt::kFloat16)),
               ref_of({2}, {std::sqrt(2.0), 0.5}), gt::kFloat16);
}

TEST_CASE("uploads back to back never make a frame past the dispatcher's limit", "[ops][large]") {
  // Three 48 MiB uploads without a sync between them: what queued while a frame was being sent
  // went out as one frame, past the 64 MiB max_frame_bytes, and the session was lost. The client
  // bounds the upload bytes it queues per frame.
  daemons();
  const int64_t n = int64_t{12} << 20;  // 48 MiB of float32
  std::vector<gt::Tensor> uploads;
  for (int k = 1; k <= 3; ++k) {
    std::vector<float> v(static_cast<size_t>(n), static_cast<float>(k));
    v[static_cast<size_t>(n - 1)] = -1.0f;  // the last chunk arrives too
    uploads.push_back(gt::from_vector(v, {n}));
  }
  for (int k = 1; k <= 3; ++k) {
    const gt::Tensor& t = uploads[static_cast<size_t>(k - 1)];
    CHECK(t.select(0, 0).item<float>() == static_cast<float>(k));
    CHECK(t.select(0, n / 2).item<float>() == static_cast<float>(k));
    CHECK(t.select(0, n - 1).item<float>() == -1.0f);
  }
}
