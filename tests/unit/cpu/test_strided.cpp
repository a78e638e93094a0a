// as_strided and strided_copy_ against naive loops over the view's multi-indices: random sizes
// and strides (negative and zero ones for as_strided, distinct positions for strided_copy_),
// every element size (bool 1, float16 2, float32/int32 4, int64 8 bytes), empty views, the
// tiled and contiguous paths of the CPU gather, and a source sharing the destination's bytes.
#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

#include "tests/unit/cpu/cpu_test_util.h"

namespace gt::test {
namespace {

GT_TESTS_OPS("as_strided", "strided_copy_");

// One dtype per element size.
const std::vector<DType>& size_dtypes() {
  static const std::vector<DType> v = {DType::kBool, DType::kFloat16, DType::kBFloat16,
                                       DType::kFloat32, DType::kInt32, DType::kInt64};
  return v;
}

// Distinct values where the dtype allows (bools alternate), exact in every dtype.
std::vector<double> distinct_values(int64_t n, DType dt, int64_t salt = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = dt == DType::kBool ? ((i + salt) % 3 == 0) : static_cast<double>((i * 7 + salt) % 251);
  return v;
}

struct View {
  Shape sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

// The flat position of the view's element at multi-index `idx`.
int64_t position(const View& v, const std::vector<int64_t>& idx) {
  int64_t p = v.offset;
  for (size_t d = 0; d < idx.size(); ++d) p += idx[d] * v.strides[d];
  return p;
}

OpAttrs attrs_of(const View& v) { return make_strided(v.sizes, v.strides, v.offset); }

std::string describe(const View& v, DType dt) {
  std::string s = "sizes " + v.sizes.str() + " strides [";
  for (size_t d = 0; d < v.strides.size(); ++d) s += (d ? ", " : "") + std::to_string(v.strides[d]);
  return s + "] offset " + std::to_string(v.offset) + " " + dtype_name(dt);
}

// A random view of any stride sign (zero too) and the number of elements that holds it.
std::pair<View, int64_t> random_view(std::mt19937& rng) {
  std::uniform_int_distribution<int> rank_d(0, 4), size_d(1, 6), stride_d(-7, 7), pad_d(0, 3);
  View v;
  const int r = rank_d(rng);
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < r; ++d) {
    const int64_t n = rng() % 10 == 0 ? 0 : size_d(rng);
    const int64_t s = stride_d(rng);
    v.sizes.push_back(n);
    v.strides.push_back(s);
    if (n > 0) (s < 0 ? lo : hi) += (n - 1) * s;
  }
  v.offset = -lo + pad_d(rng);
  return {v, v.offset + hi + 1 + pad_d(rng)};
}

void check_as_strided(CpuBackend& be, const View& v, int64_t numel, DType dt) {
  INFO(describe(v, dt) << " of " << numel << " elements");
  const auto vals = distinct_values(numel, dt);
  Tensor x = make_tensor(be, Shape{numel}, dt, vals);
  Tensor y = run_op(be, OpId::k_as_strided, {&x}, attrs_of(v));
  REQUIRE(y.meta == TensorMeta{v.sizes, dt});
  std::vector<double> want;
  for (int64_t i = 0; i < v.sizes.numel(); ++i)
    want.push_back(vals[position(v, unravel(i, v.sizes))]);
  CHECK(to_doubles(be, y) == want);
}

TEST_CASE("cpu as_strided: random views with negative and zero strides", "[cpu][strided]") {
  CpuBackend be;
  std::mt19937 rng(101);
  for (int k = 0; k < 300; ++k) {
    auto [v, numel] = random_view(rng);
    check_as_strided(be, v, numel, size_dtypes()[k % size_dtypes().size()]);
  }
}

TEST_CASE("cpu as_strided: transposes (tiled path), contiguous rows, broadcasts, empty",
          "[cpu][strided]") {
  CpuBackend be;
  for (DType dt : size_dtypes()) {
    check_as_strided(be, View{Shape{50, 40}, {1, 50}, 0}, 2000, dt);        // a transpose
    check_as_strided(be, View{Shape{20, 30}, {-50, -1}, 1999}, 2000, dt);   // both reversed
    check_as_strided(be, View{Shape{3, 33, 17}, {1, 51, 3}, 2}, 1700, dt);  // batched, tiled
    check_as_strided(be, View{Shape{6, 10}, {12, 1}, 2}, 72, dt);           // memcpy rows
    check_as_strided(be, View{Shape{9, 12}, {0, 1}, 3}, 15, dt);            // a row repeated
    check_as_strided(be, View{Shape{12, 9}, {1, 0}, 0}, 12, dt);            // zero inner stride
    check_as_strided(be, View{Shape{4, 5}, {1, 1}, 0}, 8, dt);              // sliding windows
    check_as_strided(be, View{Shape{}, {}, 6}, 7, dt);                      // 0-d: one element
    check_as_strided(be, View{Shape{0, 3}, {5, 1}, 0}, 1, dt);              // empty
  }
  // An empty view reads nothing: any strides and offset, even of an empty tensor.
  Tensor e = make_tensor(be, Shape{0}, DType::kFloat32, {});
  const int64_t huge[] = {std::numeric_limits<int64_t>::max(), -7};
  Tensor y = run_op(be, OpId::k_as_strided, {&e}, make_strided(Shape{3, 0}, huge, -9));
  CHECK(y.meta.shape == Shape{3, 0});
}

// A random view whose positions are distinct: a slice with any step sign per dim of a random
// [a, b, c] tensor, its dims then permuted. Returns the view and the tensor's element count.
std::pair<View, int64_t> random_distinct_view(std::mt19937& rng) {
  std::uniform_int_distribution<int> ext_d(1, 6), step_d(1, 3), rank_d(0, 3);
  const int r = rank_d(rng);
  Shape base;
  for (int d = 0; d < r; ++d) base.push_back(ext_d(rng));
  std::vector<int64_t> bs(static_cast<size_t>(r), 1);
  for (int d = r - 2; d >= 0; --d) bs[d] = bs[d + 1] * base[d + 1];
  View sl;
  for (int d = 0; d < r; ++d) {
    const int64_t n = base[d], step = step_d(rng) * (rng() % 2 ? 1 : -1);
    const int64_t start = step > 0 ? rng() % n : n - 1 - rng() % n;
    const int64_t reach = step > 0 ? (n - 1 - start) / step : start / -step;  // further steps
    const int64_t count = rng() % 5 == 0 ? 0 : 1 + reach;
    sl.sizes.push_back(count);
    sl.strides.push_back(step * bs[d]);
    sl.offset += start * bs[d];
  }
  std::vector<int> perm(static_cast<size_t>(r));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  View v;
  v.offset = sl.offset;
  for (int d : perm) {
    v.sizes.push_back(sl.sizes[d]);
    v.strides.push_back(sl.strides[d]);
  }
  return {v, base.numel()};
}

void check_strided_copy(CpuBackend& be, const View& v, const Shape& dst_shape, DType dt) {
  INFO(describe(v, dt) << " into " << dst_shape.str());
  auto dv = distinct_values(dst_shape.numel(), dt);
  auto sv = distinct_values(v.sizes.numel(), dt, 100);
  Tensor dst = make_tensor(be, dst_shape, dt, dv);
  Tensor src = make_tensor(be, v.sizes, dt, sv);
  run_in_place(be, OpId::k_strided_copy_, dst, {&dst, &src}, attrs_of(v));
  std::vector<double> want = dv;
  std::set<int64_t> seen;
  for (int64_t i = 0; i < v.sizes.numel(); ++i) {
    const int64_t p = position(v, unravel(i, v.sizes));
    REQUIRE(seen.insert(p).second);  // the reference needs distinct positions
    want[p] = sv[i];
  }
  CHECK(to_doubles(be, dst) == want);
}

TEST_CASE("cpu strided_copy_: random views with distinct positions, every element size",
          "[cpu][strided]") {
  CpuBackend be;
  std::mt19937 rng(202);
  for (int k = 0; k < 300; ++k) {
    auto [v, numel] = random_distinct_view(rng);
    // The destination's shape does not matter to the positions (flat elements): vary it.
    const Shape dst = k % 2 ? Shape{numel} : Shape{1, numel};
    check_strided_copy(be, v, dst, size_dtypes()[k % size_dtypes().size()]);
  }
}

TEST_CASE("cpu strided_copy_: a column, a reversed block, one contiguous run, empty",
          "[cpu][strided]") {
  CpuBackend be;
  for (DType dt : size_dtypes()) {
    check_strided_copy(be, View{Shape{4}, {5}, 2}, Shape{4, 5}, dt);              // column 2
    check_strided_copy(be, View{Shape{2, 3}, {-5, -1}, 13}, Shape{4, 5}, dt);      // reversed
    check_strided_copy(be, View{Shape{2, 5}, {5, 1}, 5}, Shape{4, 5}, dt);         // rows 1-2
    check_strided_copy(be, View{Shape{40, 30}, {1, 40}, 0}, Shape{30, 40}, dt);    // transposed
    check_strided_copy(be, View{Shape{}, {}, 7}, Shape{3, 3}, dt);                 // one element
    check_strided_copy(be, View{Shape{0, 4}, {1, 1}, 0}, Shape{2, 2}, dt);         // nothing
  }
}

TEST_CASE("cpu strided_copy_: a source sharing the destination's bytes reads the old values",
          "[cpu][strided]") {
  CpuBackend be;
  // dst = {0, 1, 2, 3, 4, 5}; src = its first three elements (a reshape alias). Writing them at
  // positions 2, 3, 4 must read 0, 1, 2 from before the write: {0, 1, 0, 1, 2, 5}.
  Tensor dst = make_tensor(be, Shape{6}, DType::kInt64, {0, 1, 2, 3, 4, 5});
  Tensor src{TensorMeta{Shape{3}, DType::kInt64}, dst.storage, nullptr};
  const int64_t one[] = {1};
  run_in_place(be, OpId::k_strided_copy_, dst, {&dst, &src}, make_strided(Shape{3}, one, 2));
  CHECK(to_doubles(be, dst) == std::vector<double>{0, 1, 0, 1, 2, 5});
  // Backwards through the same bytes: positions 3, 2, 1 get 0, 1, 0 (old elements 0..2).
  Tensor d2 = make_tensor(be, Shape{2, 3}, DType::kFloat32, {0, 1, 2, 3, 4, 5});
  Tensor s2{TensorMeta{Shape{3}, DType::kFloat32}, d2.storage, nullptr};
  const int64_t back[] = {-1};
  run_in_place(be, OpId::k_strided_copy_, d2, {&d2, &s2}, make_strided(Shape{3}, back, 3));
  CHECK(to_doubles(be, d2) == std::vector<double>{0, 2, 1, 0, 4, 5});
}

TEST_CASE("cpu strided_copy_: positions written twice keep one of the values", "[cpu][strided]") {
  // The client never sends such a view; the kernel must still not crash or write elsewhere.
  CpuBackend be;
  Tensor dst = make_tensor(be, Shape{5}, DType::kFloat32, {9, 9, 9, 9, 9});
  Tensor src = make_tensor(be, Shape{3, 2}, DType::kFloat32, {1, 2, 3, 4, 5, 6});
  const int64_t st[] = {0, 2};
  run_in_place(be, OpId::k_strided_copy_, dst, {&dst, &src}, make_strided(Shape{3, 2}, st, 1));
  const auto got = to_doubles(be, dst);
  CHECK(got[0] == 9);
  CHECK(got[2] == 9);
  CHECK(got[4] == 9);
  CHECK((got[1] == 1 || got[1] == 3 || got[1] == 5));
  CHECK((got[3] == 2 || got[3] == 4 || got[3] == 6));
}

TEST_CASE("cpu as_strided / strided_copy_: attributes refused by run()", "[cpu][strided]") {
  // Backend::run re-checks the shape rule: positions outside are an error, not a wild access.
  CpuBackend be;
  Tensor x = make_tensor(be, Shape{4}, DType::kFloat32, {1, 2, 3, 4});
  const int64_t two[] = {2};
  CHECK_FALSE(try_run(be, OpId::k_as_strided, {&x}, make_strided(Shape{3}, two, 0)).is_ok());
  Tensor src = make_tensor(be, Shape{2}, DType::kFloat32, {7, 8});
  const std::vector<const Tensor*> ins{&x, &src};
  const OpAttrs outside = make_strided(Shape{2}, two, 3);
  worker::KernelArgs args{OpId::k_strided_copy_, outside, ins, x, 0};
  CHECK_FALSE(be.run(args).is_ok());  // positions 3 and 5 of 4 elements
  CHECK(to_doubles(be, x) == std::vector<double>{1, 2, 3, 4});
}

}  // namespace
}  // namespace gt::test
