// Layout ops through real daemons for every dtype: reshape (-1), flatten/view, permute (rank 3
// and 4), transpose/t, (un)squeeze, slice with any step sign (slice(), index(), select()) and cat
// (mixed dtypes, middle axis, empty pieces).
#include <optional>
#include <vector>

#include "op_test_util.h"

using namespace gtt;
using gt::Slice;
using gt::Tensor;

namespace {

// Distinct values 0.5, 1.5, ... (bool: alternating) so any misplaced element shows.
Ref iota_for(gt::DType d, const Shp& shape) {
  Ref r{shape, {}};
  for (int64_t i = 0; i < numel_of(shape); ++i)
    r.v.push_back(d == gt::kBool ? static_cast<double>((i * 7 / 3) % 2)
                  : is_int_dt(d) ? static_cast<double>(i * 3 - 40)
                                 : static_cast<double>(i) / 2 - 10.25);
  return r;
}

Ref reshaped(Ref r, Shp s) {
  r.shape = std::move(s);
  return r;
}

const std::optional<int64_t> kOpen = std::nullopt;

}  // namespace

GT_OPS_COVERED("reshape", "permute");
TEST_CASE("reshape, flatten, permute, transpose, (un)squeeze for every dtype", "[ops][layout]") {
  daemons();
  for (gt::DType d : all_dtypes()) {
    INFO("dtype " << dt_name(d));
    Ref x = iota_for(d, {2, 3, 4});
    Tensor t = up(x, d);
    CHECK_TENSOR(t.reshape({4, -1}), reshaped(x, {4, 6}), d);
    CHECK_TENSOR(t.reshape({-1}), reshaped(x, {24}), d);
    CHECK_TENSOR(gt::reshape(t, {2, -1, 3}), reshaped(x, {2, 4, 3}), d);
    CHECK_TENSOR(t.view({1, 24, 1}), reshaped(x, {1, 24, 1}), d);
    CHECK_TENSOR(t.flatten(), reshaped(x, {24}), d);
    // permute rank 3 (incl. negative dims) and transpose.
    CHECK_TENSOR(t.permute({2, 0, 1}), permute_ref(x, {2, 0, 1}), d);
    CHECK_TENSOR(gt::permute(t, {-1, -3, -2}), permute_ref(x, {2, 0, 1}), d);
    CHECK_TENSOR(t.permute({1, 0, 2}), permute_ref(x, {1, 0, 2}), d);
    CHECK_TENSOR(t.permute({0, 1, 2}), x, d);
    CHECK_TENSOR(t.transpose(0, 2), permute_ref(x, {2, 1, 0}), d);
    CHECK_TENSOR(gt::transpose(t, -1, -2), permute_ref(x, {0, 2, 1}), d);
    // rank 4.
    Ref y = iota_for(d, {2, 3, 4, 5});
    Tensor ty = up(y, d);
    CHECK_TENSOR(ty.permute({3, 1, 0, 2}), permute_ref(y, {3, 1, 0, 2}), d);
    CHECK_TENSOR(ty.permute({0, 2, 3, 1}), permute_ref(y, {0, 2, 3, 1}), d);
    CHECK_TENSOR(ty.permute({3, 2, 1, 0}), permute_ref(y, {3, 2, 1, 0}), d);
    // A permute of a permute, then reshape: the data really moved.
    CHECK_TENSOR(ty.permute({3, 1, 0, 2}).permute({2, 1, 3, 0}).reshape({-1}),
                 reshaped(permute_ref(permute_ref(y, {3, 1, 0, 2}), {2, 1, 3, 0}), {120}), d);
    // t() of 2-D and 1-D.
    Ref m = iota_for(d, {3, 5});
    CHECK_TENSOR(up(m, d).t(), permute_ref(m, {1, 0}), d);
    Ref v = iota_for(d, {4});
    CHECK_TENSOR(up(v, d).t(), v, d);
    // unsqueeze / squeeze.
    CHECK_TENSOR(t.unsqueeze(0), reshaped(x, {1, 2, 3, 4}), d);
    CHECK_TENSOR(t.unsqueeze(-1), reshaped(x, {2, 3, 4, 1}), d);
    CHECK_TENSOR(t.unsqueeze(2), reshaped(x, {2, 3, 1, 4}), d);
    Tensor s = up(reshaped(x, {1, 6, 1, 4}), d);
    CHECK_TENSOR(s.squeeze(), reshaped(x, {6, 4}), d);
    CHECK_TENSOR(s.squeeze(2), reshaped(x, {1, 6, 4}), d);
    CHECK_TENSOR(s.squeeze(-4), reshaped(x, {6, 1, 4}), d);
    CHECK_TENSOR(s.squeeze(1), reshaped(x, {1, 6, 1, 4}), d);  // size 6: unchanged
    // 0-d <-> 1-element.
    Ref one = iota_for(d, {});
    CHECK_TENSOR(up(one, d).reshape({1, 1}), reshaped(one, {1, 1}), d);
    CHECK_TENSOR(up(reshaped(one, {1, 1}), d).reshape({}), one, d);
  }
  // Errors at the call site.
  Tensor t = gt::zeros({2, 3, 4});
  CHECK_THROWS_AS(t.reshape({5, -1}), gt::Error);
  CHECK_THROWS_AS(t.reshape({-1, -1}), gt::Error);
  CHECK_THROWS_AS(t.reshape({2, 3}), gt::Error);
  CHECK_THROWS_AS(t.permute({0, 1}), gt::Error);
  CHECK_THROWS_AS(t.permute({0, 1, 1}), gt::Error);
  CHECK_THROWS_AS(t.transpose(0, 3), gt::Error);
  CHECK_THROWS_AS(t.t(), gt::Error);
}

GT_OPS_COVERED("slice");
TEST_CASE("slice, select and index with positive and negative steps", "[ops][layout][slice]") {
  daemons();
  for (gt::DType d : all_dtypes()) {
    INFO("dtype " << dt_name(d));
    Ref x = iota_for(d, {3, 4, 5});
    Tensor t = up(x, d);
    CHECK_TENSOR(t.slice(1, 1, 3), slice_ref(x, 1, 1, 3, 1), d);
    CHECK_TENSOR(t.slice(2, 0, 5, 2), slice_ref(x, 2, 0, 5, 2), d);
    CHECK_TENSOR(t.slice(2, 1, kOpen, 3), slice_ref(x, 2, 1, kOpen, 3), d);
    CHECK_TENSOR(t.slice(0, gt::None, gt::None, -1), slice_ref(x, 0, kOpen, kOpen, -1), d);
    CHECK_TENSOR(t.slice(2, -1, kOpen, -2), slice_ref(x, 2, -1, kOpen, -2), d);
    CHECK_TENSOR(t.slice(1, 10, -10, -3), slice_ref(x, 1, 10, -10, -3), d);  // clamped ends
    CHECK_TENSOR(t.slice(-1, -100, 100), x, d);
    CHECK_TENSOR(t.slice(-1, 3), slice_ref(x, 2, 3, kOpen, 1), d);
    CHECK_TENSOR(t.slice(1, 3, 1, -1), slice_ref(x, 1, 3, 1, -1), d);
    CHECK_TENSOR(t.slice(0, 2, 2), slice_ref(x, 0, 2, 2, 1), d);  // empty
    CHECK_TENSOR(t.slice(0, 1, 2, -1), slice_ref(x, 0, 1, 2, -1), d);  // empty, negative step
    // A slice of a slice.
    CHECK_TENSOR(t.slice(2, gt::None, gt::None, -1).slice(1, 1, kOpen, 2),
                 slice_ref(slice_ref(x, 2, kOpen, kOpen, -1), 1, 1, kOpen, 2), d);
    // select drops the dim.
    CHECK_TENSOR(t.select(1, -1), reshaped(slice_ref(x, 1, 3, 4, 1), {3, 5}), d);
    CHECK_TENSOR(t.select(0, 0), reshaped(slice_ref(x, 0, 0, 1, 1), {4, 5}), d);
    CHECK_TENSOR(t.select(2, 2), reshaped(slice_ref(x, 2, 2, 3, 1), {3, 4}), d);
    // index(): several dims at once, ints, NewAxis, Ellipsis.
    CHECK_TENSOR(t.index({Slice(gt::None, gt::None, -2), 1}),
                 reshaped(gather_ref(x, {{2, 0}, {1}, all_of(5)}), {2, 5}), d);
    CHECK_TENSOR(t.index({gt::Ellipsis, Slice(1, gt::None, 2)}),
                 gather_ref(x, {all_of(3), all_of(4), {1, 3}}), d);
    CHECK_TENSOR(t.index({gt::NewAxis, 0, Slice(), -1}),
                 reshaped(gather_ref(x, {{0}, all_of(4), {4}}), {1, 4}), d);
    CHECK_TENSOR(t.index({"...", 2}), reshaped(gather_ref(x, {all_of(3), all_of(4), {2}}), {3, 4}), d);
    CHECK_TENSOR(t.index({-1, -1, -1}), reshaped(gather_ref(x, {{2}, {3}, {4}}), {}), d);
    CHECK_TENSOR(t.index({Slice(1, 3), Slice(gt::None, gt::None, -3), Slice(4, 0, -2)}),
                 gather_ref(x, {{1, 2}, {3, 0}, {4, 2}}), d);
  }
  // Errors at the call site.
  Tensor t = gt::zeros({3, 4});
  CHECK_THROWS_AS(t.slice(0, 0, 2, 0), gt::Error);
  CHECK_THROWS_AS(t.slice(2), gt::Error);
  CHECK_THROWS_AS(t.select(1, 4), gt::Error);
  CHECK_THROWS_AS(t.index({0, 0, 0}), gt::Error);
}

GT_OPS_COVERED("cat");
TEST_CASE("cat: middle axis with mixed dtypes, every axis, empty pieces", "[ops][layout][cat]") {
  daemons();
  // Three tensors along a middle axis: int64, float32 and bool -> float32.
  Ref a = rnd_for(gt::kInt64, {2, 1, 3}, 1), b = rnd_for(gt::kFloat32, {2, 2, 3}, 2),
      c = rnd({2, 3, 3}, 0, 1, 1, 3);
  CHECK_TENSOR(gt::cat({up(a, gt::kInt64), up(b, gt::kFloat32), up(c, gt::kBool)}, 1),
               cat_ref({a, b, c}, 1), gt::kFloat32);
  // int32 + int64 -> int64; bool + bool stays bool; float16 + bfloat16 -> float32.
  CHECK_TENSOR(gt::cat({up(a, gt::kInt32), up(a, gt::kInt64)}, -2), cat_ref({a, a}, 1), gt::kInt64);
  CHECK_TENSOR(gt::cat({up(c, gt::kBool), up(c, gt::kBool)}, 0), cat_ref({c, c}, 0), gt::kBool);
  CHECK_TENSOR(gt::cat({up(b, gt::kFloat16), up(b, gt::kBFloat16)}, 2), cat_ref({b, b}, 2), gt::kFloat32);
  // Every axis of a rank-3 tensor and every dtype, with an empty piece in the middle.
  for (gt::DType d : all_dtypes()) {
    for (int64_t axis : {0, 1, 2}) {
      INFO("cat " << dt_name(d) << " axis " << axis);
      Shp s1{2, 3, 4}, s2{2, 3, 4}, s0{2, 3, 4};
      s1[axis] = 2;
      s0[axis] = 0;
      s2[axis] = 1;
      Ref p = iota_for(d, s1), q = iota_for(d, s0), r = rnd_for(d, s2, 10 + axis);
      CHECK_TENSOR(gt::cat({up(p, d), up(q, d), up(r, d), up(p, d)}, axis), cat_ref({p, q, r, p}, axis), d);
    }
  }
  // A single tensor and all-empty inputs.
  Ref e = ref_of({0, 2}, {});
  CHECK_TENSOR(gt::cat({up(e, gt::kFloat32), up(e, gt::kFloat32)}), e, gt::kFloat32);
  CHECK_TENSOR(gt::cat({up(b, gt::kFloat32)}, 1), b, gt::kFloat32);
  // Errors at the call site.
  CHECK_THROWS_AS(gt::cat({gt::zeros({2, 3}), gt::zeros({3})}), gt::Error);
  CHECK_THROWS_AS(gt::cat({gt::zeros({2, 3}), gt::zeros({2, 4})}, 0), gt::Error);
  CHECK_THROWS_AS(gt::cat({gt::zeros({2, 3})}, 2), gt::Error);
  CHECK_THROWS_AS(gt::cat({gt::scalar_tensor(1.0), gt::scalar_tensor(2.0)}), gt::Error);
  CHECK_THROWS_AS(gt::cat({}), gt::Error);
}
