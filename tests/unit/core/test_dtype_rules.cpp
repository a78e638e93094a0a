// Dtype rules of the shape rules: promotion between tensors, with 0-d tensors and with Python
// scalars (PyTorch's category-based rule), can_cast for in-place write-back, scalars that must
// fit their dtype, and reduction result dtypes. (Split from test_shape_rules.cpp.)
#include <catch2/catch.hpp>

#include <array>
#include <limits>
#include <vector>

#include "libgtcore/shape_rules.h"
#include "require_ok.h"
#include "rule_test_util.h"

using namespace gt;
using namespace gt::rule_test;

namespace {

OpAttrs scalar_right(double v, bool integral) {
  return make_binary_scalar(ScalarSide::kRight, v, integral);
}

}  // namespace

namespace {
// Generated from torch.promote_types / torch's scalar results; int8 with uint8 is torch's int16,
// which GT does not have: int32.
const std::array<DType, 9> kAll = {F32, F16, BF16, I32, I64, BOOL, F64, I8, U8};
// kPromote[i][j] = result of a tensor of kAll[i] with a tensor of kAll[j].
const DType kPromote[9][9] = {
    /* f32  */ {F32, F32, F32, F32, F32, F32, F64, F32, F32},
    /* f16  */ {F32, F16, F32, F16, F16, F16, F64, F16, F16},
    /* bf16 */ {F32, F32, BF16, BF16, BF16, BF16, F64, BF16, BF16},
    /* i32  */ {F32, F16, BF16, I32, I64, I32, F64, I32, I32},
    /* i64  */ {F32, F16, BF16, I64, I64, I64, F64, I64, I64},
    /* bool */ {F32, F16, BF16, I32, I64, BOOL, F64, I8, U8},
    /* f64  */ {F64, F64, F64, F64, F64, F64, F64, F64, F64},
    /* i8   */ {F32, F16, BF16, I32, I64, I8, F64, I8, I32},
    /* u8   */ {F32, F16, BF16, I32, I64, U8, F64, I32, U8},
};
// kScalar[i] = {with an integer scalar, with a float scalar}
const DType kScalar[9][2] = {
    {F32, F32}, {F16, F16}, {BF16, BF16}, {I32, F32}, {I64, F32}, {I64, F32}, {F64, F64}, {I8, F32}, {U8, F32},
};
}  // namespace

TEST_CASE("dtype promotion table (tensor, tensor)", "[shape_rules][dtype]") {
  for (size_t i = 0; i < kAll.size(); ++i)
    for (size_t j = 0; j < kAll.size(); ++j) {
      DType a = kAll[i], b = kAll[j], want = kPromote[i][j];
      INFO(dtype_name(a) << " with " << dtype_name(b));
      CHECK(dtype_name(promote(a, b)) == std::string(dtype_name(want)));
      auto add = infer(OpId::k_add, {M({2}, a), M({2}, b)});
      GT_REQUIRE_OK(add);
      CHECK(dtype_name(add->dtype) == std::string(dtype_name(want)));
      // true division: integral/bool results become float32
      auto div = infer(OpId::k_div, {M({2}, a), M({2}, b)});
      GT_REQUIRE_OK(div);
      DType want_div = is_floating(want) ? want : F32;
      CHECK(dtype_name(div->dtype) == std::string(dtype_name(want_div)));
      // comparisons are bool whatever the inputs
      auto lt = infer(OpId::k_lt, {M({2}, a), M({2}, b)});
      GT_REQUIRE_OK(lt);
      CHECK(lt->dtype == BOOL);
      // sub refuses any bool operand (as torch; it used to refuse bool results only)
      auto sub = infer(OpId::k_sub, {M({2}, a), M({2}, b)});
      CHECK(sub.is_ok() == (a != BOOL && b != BOOL));
      // where promotes its two value operands the same way
      auto wh = infer(OpId::k_where, {M({2}, BOOL), M({2}, a), M({2}, b)});
      GT_REQUIRE_OK(wh);
      CHECK(wh->dtype == want);
    }
}

TEST_CASE("dtype promotion with a Python scalar", "[shape_rules][dtype]") {
  for (size_t i = 0; i < kAll.size(); ++i)
    for (int integral = 0; integral < 2; ++integral) {
      DType t = kAll[i], want = kScalar[i][integral ? 0 : 1];
      INFO(dtype_name(t) << " with " << (integral ? "an int" : "a float") << " scalar");
      CHECK(promote_with_scalar(t, integral) == want);
      for (ScalarSide side : {ScalarSide::kRight, ScalarSide::kLeft}) {
        auto r = infer(OpId::k_mul, {M({3, 1}, t)},
                       make_binary_scalar(side, integral ? 2.0 : 2.5, integral));
        GT_REQUIRE_OK(r);
        CHECK(r->shape == Shape({3, 1}));
        CHECK(r->dtype == want);
        auto d = infer(OpId::k_div, {M({3}, t)}, make_binary_scalar(side, 2.0, integral));
        GT_REQUIRE_OK(d);
        CHECK(d->dtype == (is_floating(want) ? want : F32));
        auto e = infer(OpId::k_ge, {M({3}, t)}, make_binary_scalar(side, 2.0, integral));
        GT_REQUIRE_OK(e);
        CHECK(e->dtype == BOOL);
      }
    }
}

// kZeroDim[i][j] = a tensor with dims of kAll[i] with a zero-dim tensor of kAll[j]
// (torch.result_type(torch.ones(2, dtype=a), torch.tensor(1, dtype=b)), checked in torch): the
// tensor with dims keeps its dtype unless the 0-d one is of a higher category.
const DType kZeroDim[6][6] = {
    /* f32  */ {F32, F32, F32, F32, F32, F32},
    /* f16  */ {F16, F16, F16, F16, F16, F16},
    /* bf16 */ {BF16, BF16, BF16, BF16, BF16, BF16},
    /* i32  */ {F32, F16, BF16, I32, I32, I32},
    /* i64  */ {F32, F16, BF16, I64, I64, I64},
    /* bool */ {F32, F16, BF16, I32, I64, BOOL},
};

TEST_CASE("dtype promotion: a zero-dim tensor counts less than one with dims",
          "[shape_rules][dtype]") {
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) {
      const DType a = kAll[i], b = kAll[j], want = kZeroDim[i][j];
      INFO(dtype_name(a) << "[2] with " << dtype_name(b) << "[]");
      CHECK(dtype_name(promote_ranked(a, false, b, true)) == std::string(dtype_name(want)));
      CHECK(dtype_name(promote_ranked(b, true, a, false)) == std::string(dtype_name(want)));
      // two 0-d tensors (or two with dims) promote as equals
      CHECK(promote_ranked(a, true, b, true) == kPromote[i][j]);
      CHECK(promote_ranked(a, false, b, false) == kPromote[i][j]);
      for (bool swap : {false, true}) {
        std::vector<TensorMeta> in{M({2}, a), M({}, b)};
        if (swap) std::swap(in[0], in[1]);
        auto mul = infer(OpId::k_mul, in);
        GT_REQUIRE_OK(mul);
        CHECK(mul->dtype == want);
        CHECK(mul->shape == Shape({2}));
        auto mx = infer(OpId::k_maximum, in);
        GT_REQUIRE_OK(mx);
        CHECK(mx->dtype == want);
        auto div = infer(OpId::k_div, in);
        GT_REQUIRE_OK(div);
        CHECK(div->dtype == (is_floating(want) ? want : F32));
        auto wh = infer(OpId::k_where, {M({2}, BOOL), in[0], in[1]});
        GT_REQUIRE_OK(wh);
        CHECK(wh->dtype == want);
      }
      auto both0 = infer(OpId::k_add, {M({}, a), M({}, b)});
      GT_REQUIRE_OK(both0);
      CHECK(both0->dtype == kPromote[i][j]);
      CHECK(both0->shape == Shape({}));
    }
  // The examples: int32[n] + int64[] stays int32, float16[n] * float32[] float16.
  CHECK(infer(OpId::k_add, {M({3}, I32), M({}, I64)})->dtype == I32);
  CHECK(infer(OpId::k_mul, {M({3}, F16), M({}, F32)})->dtype == F16);
  CHECK(infer(OpId::k_where, {M({3}, BOOL), M({3}, F16), M({}, F32)})->dtype == F16);
}

TEST_CASE("dtype promotion with a bool, integer or float scalar", "[shape_rules][dtype]") {
  // kKinds[i] = {with a bool scalar, an integer scalar, a float scalar} (torch.result_type)
  const DType kKinds[6][3] = {
      {F32, F32, F32}, {F16, F16, F16}, {BF16, BF16, BF16},
      {I32, I32, F32}, {I64, I64, F32}, {BOOL, I64, F32},
  };
  const ScalarKind kinds[3] = {ScalarKind::kBool, ScalarKind::kInt, ScalarKind::kFloat};
  for (int i = 0; i < 6; ++i)
    for (int k = 0; k < 3; ++k) {
      const DType t = kAll[i], want = kKinds[i][k];
      INFO(dtype_name(t) << " with scalar kind " << k);
      CHECK(promote_with_scalar(t, kinds[k]) == want);
      for (Shape s : {Shape{3}, Shape{}}) {  // the tensor's rank does not matter here
        auto r = infer(OpId::k_add, {M(s, t)},
                       make_binary_scalar(ScalarSide::kLeft, 1, kinds[k], 1));
        GT_REQUIRE_OK(r);
        CHECK(r->dtype == want);
      }
    }
  // bool + True stays bool (it was int64: the wire told bool scalars from integers only as 2)
  CHECK(infer(OpId::k_add, {M({2}, BOOL)}, make_binary_scalar(ScalarSide::kRight, 1, ScalarKind::kBool, 1))
            ->dtype == BOOL);
  // the older encoding (integral = 1) keeps its meaning
  CHECK(infer(OpId::k_add, {M({2}, BOOL)}, scalar_right(1, true))->dtype == I64);
}

TEST_CASE("can_cast: what an in-place op may write back", "[shape_rules][dtype]") {
  for (DType from : kAll)
    for (DType to : kAll) {
      INFO(dtype_name(from) << " -> " << dtype_name(to));
      const bool want = !(is_floating(from) && !is_floating(to)) &&
                        !(from != BOOL && to == BOOL);
      CHECK(can_cast(from, to) == want);
    }
  CHECK_FALSE(can_cast(F32, I64));  // int64 a /= 2
  CHECK(can_cast(I64, I32));        // int32 a += int64 b wraps
  CHECK(can_cast(F32, F16));
}

TEST_CASE("scalars must fit the dtype they are converted to", "[shape_rules][dtype]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // torch's checked conversion (c10::checked_convert): floating targets take inf and NaN
  CHECK(scalar_fits(F16, 65504.0));
  CHECK_FALSE(scalar_fits(F16, 65519.0));
  CHECK_FALSE(scalar_fits(F16, -70000.0));
  CHECK(scalar_fits(F16, inf));
  CHECK(scalar_fits(F16, nan));
  CHECK(scalar_fits(F16, 1e-30));
  CHECK_FALSE(scalar_fits(F16, 0, 70000));
  CHECK(scalar_fits(BF16, 0, int64_t{1} << 62));
  CHECK_FALSE(scalar_fits(BF16, 1e39));
  CHECK_FALSE(scalar_fits(F32, 1e39));
  CHECK(scalar_fits(F32, 0, kI64Max));
  // integers: the value's range (NaN and inf never fit)
  CHECK(scalar_fits(I32, -2147483648.0));
  CHECK_FALSE(scalar_fits(I32, 2147483647.5));
  CHECK_FALSE(scalar_fits(I32, 0, int64_t{1} << 31));
  CHECK(scalar_fits(I32, 0, -(int64_t{1} << 31)));
  CHECK_FALSE(scalar_fits(I64, nan));
  CHECK_FALSE(scalar_fits(I64, 1e19));
  CHECK(scalar_fits(I64, 0, kI64Max));
  CHECK(scalar_fits(BOOL, 2.5));
  CHECK(scalar_fits(BOOL, nan));
  auto mf = [](DType d, double v, std::optional<int64_t> e = std::nullopt) {
    return infer(OpId::k_masked_fill, {M({3}, d), M({3}, BOOL)}, make_fill_value(v, e));
  };
  CHECK_FALSE(mf(F16, 1e5).is_ok());
  CHECK_FALSE(mf(I32, 0x1p40, int64_t{1} << 40).is_ok());
  GT_CHECK_OK(mf(I64, 0x1p62, (int64_t{1} << 62) + 1));
  GT_CHECK_OK(mf(I64, 2.7));
  CHECK_FALSE(infer(OpId::k_full, {}, make_full({2}, F16, 70000.0)).is_ok());
  // clamp's bounds are checked against the result's dtype
  auto cl = [](DType d, ClampBound b) { return infer(OpId::k_clamp, {M({3}, d)}, make_clamp(b, std::nullopt)); };
  CHECK(cl(I64, {0x1p62, ScalarKind::kInt, (int64_t{1} << 62) + 1})->dtype == I64);
  CHECK(cl(I32, {1, ScalarKind::kBool, 1})->dtype == I32);
  CHECK(cl(I32, {1.5, ScalarKind::kFloat, std::nullopt})->dtype == F32);
  CHECK_FALSE(cl(I32, {0x1p31, ScalarKind::kInt, int64_t{1} << 31}).is_ok());
  CHECK_FALSE(cl(BF16, {1e39, ScalarKind::kFloat, std::nullopt}).is_ok());
  GT_CHECK_OK(cl(F32, {inf, ScalarKind::kFloat, std::nullopt}));
}

TEST_CASE("reductions: dtype of the result", "[shape_rules][dtype]") {
  // sum: floats keep their dtype, everything else accumulates in int64 (like PyTorch)
  // mean: floating only (torch refuses integer and bool inputs; they used to give float32);
  // max/min keep; argmax/argmin -> int64, bool refused (as torch)
  const DType sum_want[6] = {F32, F16, BF16, I64, I64, I64};
  for (int i = 0; i < 6; ++i) {
    DType t = kAll[i];
    INFO(dtype_name(t));
    auto s = infer(OpId::k_sum, {M({2, 3}, t)}, make_reduce(0, false));
    auto m = infer(OpId::k_mean, {M({2, 3}, t)}, make_reduce(0, false));
    auto mx = infer(OpId::k_max, {M({2, 3}, t)}, make_reduce(0, false));
    auto am = infer(OpId::k_argmin, {M({2, 3}, t)}, make_reduce(0, false));
    REQUIRE((s.is_ok() && mx.is_ok()));
    CHECK(s->dtype == sum_want[i]);
    CHECK(m.is_ok() == is_floating(t));
    if (m.is_ok()) CHECK(m->dtype == t);
    CHECK(mx->dtype == t);
    CHECK(am.is_ok() == (t != BOOL));
    if (am.is_ok()) CHECK(am->dtype == I64);
    CHECK(s->shape == Shape({3}));
  }
}
