// reshape, permute, slice, cat against naive multi-index references.
#include <algorithm>
#include <numeric>

#include "tests/unit/cpu/cpu_test_util.h"

namespace gt::test {
namespace {

GT_TESTS_OPS("reshape", "permute", "slice", "cat");

std::vector<double> iota_values(int64_t n, DType dt) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = dt == DType::kBool ? (i % 3 == 0) : static_cast<double>(i % 200);
  return v;
}

TEST_CASE("cpu reshape copies the elements in row-major order", "[cpu][layout]") {
  CpuBackend be;
  for (DType dt : all_dtypes()) {
    auto v = iota_values(24, dt);
    Tensor x = make_tensor(be, Shape{2, 3, 4}, dt, v);
    Tensor y = run_op(be, OpId::k_reshape, {&x}, make_reshape(Shape{4, 6}));
    CHECK(y.meta.shape == Shape{4, 6});
    CHECK(y.storage != x.storage);
    CHECK(to_doubles(be, y) == v);
    Tensor z = run_op(be, OpId::k_reshape, {&y}, make_reshape(Shape{24}));
    CHECK(to_doubles(be, z) == v);
  }
  Tensor e = make_tensor(be, Shape{0, 4}, DType::kFloat32, {});
  CHECK(run_op(be, OpId::k_reshape, {&e}, make_reshape(Shape{2, 0})).meta.shape == Shape{2, 0});
  Tensor s = make_tensor(be, Shape{1}, DType::kInt64, {42});
  CHECK(to_doubles(be, run_op(be, OpId::k_reshape, {&s}, make_reshape(Shape{}))) ==
        std::vector<double>{42});
}

void check_permute(CpuBackend& be, const Shape& s, DType dt, const std::vector<int64_t>& perm) {
  auto v = iota_values(s.numel(), dt);
  Tensor x = make_tensor(be, s, dt, v);
  Tensor y = run_op(be, OpId::k_permute, {&x}, make_permute(perm));
  Shape os;
  for (int64_t p : perm) os.push_back(s[static_cast<int>(p)]);
  REQUIRE(y.meta.shape == os);
  std::vector<double> want(v.size());
  for (int64_t i = 0; i < os.numel(); ++i) {
    auto oi = unravel(i, os);
    std::vector<int64_t> ii(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) ii[static_cast<size_t>(perm[d])] = oi[d];
    want[i] = v[ravel(ii, s)];
  }
  INFO("permute " << s.str() << " " << dtype_name(dt));
  CHECK(to_doubles(be, y) == want);
}

TEST_CASE("cpu permute: ranks 0-4, every permutation, tiled transposes", "[cpu][layout]") {
  CpuBackend be;
  for (const Shape& s : {Shape{}, Shape{7}, Shape{3, 5}, Shape{2, 3, 4}, Shape{2, 3, 1, 5},
                         Shape{3, 2, 4, 5}}) {
    std::vector<int64_t> perm(static_cast<size_t>(s.rank()));
    std::iota(perm.begin(), perm.end(), 0);
    do {
      for (DType dt : {DType::kFloat32, DType::kBool, DType::kBFloat16, DType::kInt64})
        check_permute(be, s, dt, perm);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  // Sizes that take the 32x32-tiled path, with ragged edges.
  check_permute(be, Shape{67, 45}, DType::kFloat32, {1, 0});
  check_permute(be, Shape{3, 37, 41}, DType::kInt32, {0, 2, 1});  // batched, SSE blocks + edges
  check_permute(be, Shape{3, 40, 33}, DType::kFloat16, {0, 2, 1});
  check_permute(be, Shape{33, 3, 40}, DType::kInt64, {2, 1, 0});
  check_permute(be, Shape{9, 10, 11, 12}, DType::kInt32, {3, 1, 0, 2});
  check_permute(be, Shape{0, 3, 4}, DType::kFloat32, {2, 0, 1});
}

struct SliceDim {
  int64_t start, count, step;
};

void check_slice(CpuBackend& be, const Shape& s, DType dt, const std::vector<SliceDim>& dims) {
  auto v = iota_values(s.numel(), dt);
  Tensor x = make_tensor(be, s, dt, v);
  OpAttrs a;
  a.has_shape = true;
  for (const SliceDim& d : dims) {
    a.shape.push_back(d.count);
    a.push_int(d.start);
    a.push_int(d.step);
  }
  Tensor y = run_op(be, OpId::k_slice, {&x}, a);
  REQUIRE(y.meta.shape == a.shape);
  std::vector<double> want;
  for (int64_t i = 0; i < a.shape.numel(); ++i) {
    auto oi = unravel(i, a.shape);
    std::vector<int64_t> ii(oi.size());
    for (size_t d = 0; d < oi.size(); ++d) ii[d] = dims[d].start + oi[d] * dims[d].step;
    want.push_back(v[ravel(ii, s)]);
  }
  INFO("slice of " << s.str() << " " << dtype_name(dt));
  CHECK(to_doubles(be, y) == want);
}

TEST_CASE("cpu slice: starts, positive and negative steps", "[cpu][layout]") {
  CpuBackend be;
  for (DType dt : all_dtypes()) {
    check_slice(be, Shape{10}, dt, {{2, 5, 1}});
    check_slice(be, Shape{10}, dt, {{9, 10, -1}});  // full reverse
    check_slice(be, Shape{10}, dt, {{8, 3, -3}});
    check_slice(be, Shape{4, 6}, dt, {{1, 2, 2}, {5, 3, -2}});
    check_slice(be, Shape{4, 6}, dt, {{0, 4, 1}, {1, 4, 1}});  // inner rows: contiguous copies
    check_slice(be, Shape{3, 4, 5}, dt, {{2, 3, -1}, {0, 1, 1}, {4, 5, -1}});
    check_slice(be, Shape{2, 3, 4, 5}, dt, {{1, 1, 1}, {0, 3, 1}, {3, 2, -3}, {0, 3, 2}});
    check_slice(be, Shape{4, 6}, dt, {{0, 0, 1}, {0, 6, 1}});  // empty result
  }
  check_slice(be, Shape{50, 60}, DType::kFloat32, {{49, 40, -1}, {3, 40, 1}});
  check_slice(be, Shape{}, DType::kFloat32, {});
}

TEST_CASE("cpu cat: three inputs, mixed dtypes, every axis", "[cpu][layout]") {
  CpuBackend be;
  std::mt19937 rng(51);
  for (int64_t axis : {0, 1, 2, -1, -3}) {
    int ax = static_cast<int>(axis < 0 ? axis + 3 : axis);
    std::vector<Shape> shapes;
    for (int64_t ext : {2, 0, 3}) {
      Shape s{2, 3, 4};
      s[ax] = ext;
      shapes.push_back(s);
    }
    const std::vector<DType> dts = {DType::kInt32, DType::kFloat16, DType::kBool};
    std::vector<std::vector<double>> vals;
    std::vector<Tensor> ts;
    for (int i = 0; i < 3; ++i) {
      vals.push_back(random_values(rng, shapes[i].numel(), dts[i], -20, 20));
      ts.push_back(make_tensor(be, shapes[i], dts[i], vals[i]));
    }
    Tensor out = run_op(be, OpId::k_cat, {&ts[0], &ts[1], &ts[2]}, make_axis(axis));
    REQUIRE(out.meta.dtype == DType::kFloat16);
    Shape os{2, 3, 4};
    os[ax] = 5;
    REQUIRE(out.meta.shape == os);
    std::vector<double> want;
    for (int64_t i = 0; i < os.numel(); ++i) {
      auto idx = unravel(i, os);
      int which = 0;
      while (idx[ax] >= shapes[which][ax]) idx[ax] -= shapes[which++][ax];
      want.push_back(vals[which][ravel(idx, shapes[which])]);
    }
    check_close(to_doubles(be, out), want, DType::kFloat16, "cat axis " + std::to_string(axis));
  }
  // Same dtype, many inputs, 1-D.
  std::vector<Tensor> parts;
  std::vector<const Tensor*> ptrs;
  std::vector<double> want;
  for (int i = 0; i < 10; ++i) {
    parts.push_back(make_tensor(be, Shape{i}, DType::kInt64, std::vector<double>(i, i)));
    want.insert(want.end(), static_cast<size_t>(i), i);
  }
  for (const Tensor& t : parts) ptrs.push_back(&t);
  CHECK(to_doubles(be, run_op(be, OpId::k_cat, ptrs, make_axis(0))) == want);
}

}  // namespace
}  // namespace gt::test
