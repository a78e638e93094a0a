// cast between every pair of dtypes and copy_ (in place, with broadcasting and dtype conversion)
// through real daemons.
#include <cmath>
#include <vector>

#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

GT_OPS_COVERED("cast");
TEST_CASE("cast between every pair of dtypes", "[ops][cast]") {
  daemons();
  // Exact in every float dtype; ints truncate toward zero, bool is != 0.
  Ref values = ref_of({2, 5}, {0, 1, -2, 2.5, -3.75, 100, 0.5, -0.0, 7.25, -1});
  for (gt::DType src : all_dtypes()) {
    Ref src_vals = to_dtype(values, src);
    Tensor t = up(values, src);
    for (gt::DType dst : all_dtypes()) {
      INFO("cast " << dt_name(src) << " -> " << dt_name(dst));
      CHECK_TENSOR(t.cast(dst), to_dtype(src_vals, dst), dst);
      CHECK_TENSOR(t.to(dst), to_dtype(src_vals, dst), dst);
    }
    // Round trips through a wider type are lossless.
    INFO("round trip " << dt_name(src));
    CHECK_TENSOR(t.cast(gt::kFloat32).cast(src), src_vals, src);
  }
  // to() with the same dtype returns the same tensor; cast() always makes a new one.
  Tensor f = gt::ones({2});
  CHECK(f.to(gt::kFloat32).id() == f.id());
  CHECK(f.cast(gt::kFloat32).id() != f.id());
  // NaN and infinities: NaN -> bool is true; float32 -> float16 overflows to inf; int64 values
  // beyond 2^24 round in float32.
  Tensor special = gt::from_vector<float>({NAN, INFINITY, -INFINITY, 70000.0f, -1e-9f});
  CHECK_TENSOR(special.cast(gt::kBool), ref_of({5}, {1, 1, 1, 1, 1}), gt::kBool);
  CHECK_TENSOR(special.cast(gt::kFloat16), ref_of({5}, {NAN, INFINITY, -INFINITY, INFINITY, -0.0}),
               gt::kFloat16);
  CHECK_TENSOR(special.cast(gt::kBFloat16), ref_of({5}, {NAN, INFINITY, -INFINITY, 70144, -1e-9}),
               gt::kBFloat16);
  Tensor big = gt::from_vector<int64_t>({(int64_t{1} << 40) + 1, -(int64_t{1} << 40) - 1, 16777217});
  CHECK_TENSOR(big.cast(gt::kFloat32),
               ref_of({3}, {1099511627776.0, -1099511627776.0, 16777216.0}), gt::kFloat32, Tol{0, 0});
  CHECK(big.cast(gt::kInt64).to_vector<int64_t>() ==
        std::vector<int64_t>{(int64_t{1} << 40) + 1, -(int64_t{1} << 40) - 1, 16777217});
  CHECK(gt::from_vector<int32_t>({-5, 7}).cast(gt::kInt64).to_vector<int64_t>() == std::vector<int64_t>{-5, 7});
}

GT_OPS_COVERED("copy_");
TEST_CASE("copy_ writes in place with broadcasting and dtype conversion", "[ops][copy]") {
  daemons();
  Tensor dst = gt::zeros({2, 3});
  Tensor alias = dst;             // the same tensor
  Tensor before = dst + 1;        // computed from the old value
  Tensor other = gt::zeros({2, 3});
  Tensor src = gt::from_vector<int64_t>({1, 2, 3});
  const Tensor& r = dst.copy_(src);  // [3] int64 broadcast into [2, 3] float32
  CHECK(&r == &dst);
  CHECK(dst.dtype() == gt::kFloat32);
  CHECK(dst.sizes() == Shp{2, 3});
  CHECK_TENSOR(dst, ref_of({2, 3}, {1, 2, 3, 1, 2, 3}), gt::kFloat32);
  CHECK_TENSOR(alias, ref_of({2, 3}, {1, 2, 3, 1, 2, 3}), gt::kFloat32);
  CHECK_TENSOR(before, ref_of({2, 3}, {1, 1, 1, 1, 1, 1}), gt::kFloat32);
  CHECK_TENSOR(other, ref_of({2, 3}, {0, 0, 0, 0, 0, 0}), gt::kFloat32);
  CHECK_TENSOR(src, ref_of({3}, {1, 2, 3}), gt::kInt64);
  // Later ops see the new value; a second copy_ wins; copying a function of itself.
  CHECK_TENSOR(dst * 2, ref_of({2, 3}, {2, 4, 6, 2, 4, 6}), gt::kFloat32);
  dst.copy_(gt::from_vector<float>({-1, -2}, {2, 1}));
  CHECK_TENSOR(dst, ref_of({2, 3}, {-1, -1, -1, -2, -2, -2}), gt::kFloat32);
  dst.copy_(dst * dst + 0.5);
  CHECK_TENSOR(dst, ref_of({2, 3}, {1.5, 1.5, 1.5, 4.5, 4.5, 4.5}), gt::kFloat32);
  // A 0-d source fills the destination.
  dst.copy_(gt::scalar_tensor(4.25));
  CHECK_TENSOR(dst, ref_of({2, 3}, std::vector<double>(6, 4.25)), gt::kFloat32);
  CHECK_TENSOR(other, ref_of({2, 3}, {0, 0, 0, 0, 0, 0}), gt::kFloat32);

  // Dtype conversions into int64 (truncation), bool (!= 0), float16 and from bool.
  Tensor fsrc = gt::from_vector<float>({2.75f, -2.75f, 0.5f, 0.0f});
  Tensor di = gt::full({4}, 9);
  di.copy_(fsrc);
  CHECK_TENSOR(di, ref_of({4}, {2, -2, 0, 0}), gt::kInt64);
  Tensor db = gt::zeros({2, 4}, gt::kBool);
  db.copy_(fsrc);
  CHECK_TENSOR(db, ref_of({2, 4}, {1, 1, 1, 0, 1, 1, 1, 0}), gt::kBool);
  Tensor dh = gt::ones({4}, gt::kFloat16);
  dh.copy_(fsrc);
  CHECK_TENSOR(dh, ref_of({4}, {2.75, -2.75, 0.5, 0}), gt::kFloat16);
  Tensor dbf = gt::ones({1, 4}, gt::kBFloat16);
  dbf.copy_(gt::from_vector<bool>({true, false, false, true}));
  CHECK_TENSOR(dbf, ref_of({1, 4}, {1, 0, 0, 1}), gt::kBFloat16);
  CHECK_TENSOR(fsrc, ref_of({4}, {2.75, -2.75, 0.5, 0}), gt::kFloat32);

  // copy_ into a permute / slice result writes through the view into its base (and the
  // other view of it sees that: test_views.cpp has every kind of view).
  Tensor base = gt::arange(6).reshape({2, 3});
  Tensor perm = base.permute({1, 0});
  Tensor sl = base.slice(1, 0, 2);
  perm.copy_(gt::zeros({3, 2}, gt::kInt64));
  sl.copy_(gt::full({2, 2}, 7));
  CHECK_TENSOR(perm, ref_of({3, 2}, {7, 7, 7, 7, 0, 0}), gt::kInt64);
  CHECK_TENSOR(sl, ref_of({2, 2}, {7, 7, 7, 7}), gt::kInt64);
  CHECK_TENSOR(base, ref_of({2, 3}, {7, 7, 0, 7, 7, 0}), gt::kInt64);

  // Errors at the call site: the source must broadcast to the destination's shape.
  CHECK_THROWS_AS(gt::zeros({2, 2}).copy_(gt::zeros({3})), gt::Error);
  CHECK_THROWS_AS(gt::zeros({3}).copy_(gt::zeros({2, 3})), gt::Error);
  CHECK_NOTHROW(gt::synchronize());
}

