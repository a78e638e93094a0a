// cumsum through real daemons: every dim (positive and negative), every dtype (integer and bool
// inputs give int64), 0-d, empty, method and free forms, and the errors of a bad dim; against a
// host reference of running sums in double.
#include <cmath>
#include <vector>

#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

namespace {

// Running sums of `a` along dim (negative counts from the end); a 0-d input is its own sum.
Ref cumsum_ref(const Ref& a, int64_t dim) {
  const int64_t r = static_cast<int64_t>(a.shape.size());
  if (r == 0) return a;
  const int64_t d = dim < 0 ? dim + r : dim;
  const Shp st = strides_of(a.shape);
  Ref out{a.shape, {}};
  for_each_index(a.shape, [&](const Shp& idx, int64_t lin) {
    double s = 0;
    for (int64_t k = 0; k <= idx[d]; ++k) s += a.v[lin + (k - idx[d]) * st[d]];
    out.v.push_back(s);
  });
  return out;
}

gt::DType cumsum_dtype(gt::DType in) { return is_float_dt(in) ? in : gt::kInt64; }

}  // namespace

GT_OPS_COVERED("cumsum");
TEST_CASE("cumsum along every dim, every dtype", "[ops][cumsum]") {
  daemons();
  uint64_t seed = 900;
  for (const Shp& shape : {Shp{3, 4, 5}, Shp{7}, Shp{2, 1, 3}}) {
    for (gt::DType d : all_dtypes()) {
      // Floats k/64 in [-4, 4]: each running sum is rounded once, within the dtype's tolerance.
      Ref x = rnd_for(d, shape, seed++);
      Ref xd = to_dtype(x, d);
      Tensor t = up(x, d);
      const int64_t r = static_cast<int64_t>(shape.size());
      for (int64_t dim = -r; dim < r; ++dim) {
        INFO("shape " << shape_str(shape) << " dim " << dim);
        CHECK_TENSOR(t.cumsum(dim), cumsum_ref(xd, dim), cumsum_dtype(d));
        CHECK_TENSOR(gt::cumsum(t, dim), cumsum_ref(xd, dim), cumsum_dtype(d));
      }
    }
  }
}

TEST_CASE("cumsum of 0-d and empty tensors, long rows, integer range", "[ops][cumsum]") {
  daemons();
  for (gt::DType d : all_dtypes()) {
    Tensor s = up(ref_of({}, {1}), d);
    CHECK_TENSOR(s.cumsum(0), ref_of({}, {1}), cumsum_dtype(d));
    CHECK_TENSOR(s.cumsum(-1), ref_of({}, {1}), cumsum_dtype(d));
    Tensor e = up(ref_of({0, 3}, {}), d);
    CHECK_TENSOR(e.cumsum(0), ref_of({0, 3}, {}), cumsum_dtype(d));
    CHECK_TENSOR(e.cumsum(1), ref_of({0, 3}, {}), cumsum_dtype(d));
  }
  // A long row of float32 thirds: the worker's wide running sum keeps the result to a rounding.
  Ref thirds{{3, 20000}, std::vector<double>(60000, static_cast<double>(1.0f / 3))};
  CHECK_TENSOR(up(thirds, gt::kFloat32).cumsum(1), cumsum_ref(thirds, 1), gt::kFloat32);
  // int32 inputs sum in int64: past 2^31 without wrapping.
  Ref big = ref_of({3}, {2147483647.0, 2147483647.0, 3});
  CHECK_TENSOR(up(big, gt::kInt32).cumsum(0), cumsum_ref(big, 0), gt::kInt64);
}

TEST_CASE("cumsum refuses a dim out of range", "[ops][cumsum]") {
  daemons();
  Tensor t = gt::ones({2, 3});
  CHECK_THROWS_AS(t.cumsum(2), gt::Error);
  CHECK_THROWS_AS(t.cumsum(-3), gt::Error);
  CHECK_THROWS_AS(gt::ones({}).cumsum(1), gt::Error);
}
