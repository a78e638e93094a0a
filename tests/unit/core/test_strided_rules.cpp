// The shape rules of the strided views (as_strided, strided_copy_): which attributes they
// accept, checked against a brute-force walk over every position of the view, and the hostile
// ones (strides and offsets near the int64 limits) refused without overflowing.
#include <catch2/catch.hpp>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "libgtcore/op_attrs.h"
#include "libgtcore/shape_rules.h"
#include "require_ok.h"

using namespace gt;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TensorMeta M(Shape s, DType d = DType::kFloat32) { return TensorMeta{s, d}; }

OpAttrs view(Shape sizes, std::vector<int64_t> strides, int64_t offset) {
  return make_strided(sizes, strides, offset);
}

Result<TensorMeta> as_strided(const TensorMeta& x, const OpAttrs& a) {
  const TensorMeta in[] = {x};
  return infer_meta(OpId::k_as_strided, in, a);
}

Result<TensorMeta> strided_copy(const TensorMeta& dst, const TensorMeta& src, const OpAttrs& a) {
  const TensorMeta in[] = {dst, src};
  return infer_meta(OpId::k_strided_copy_, in, a);
}

// Refused with INVALID_ARGUMENT and a message naming the op.
void check_refused(const Result<TensorMeta>& r, const char* op, const std::string& what) {
  INFO(what);
  REQUIRE_FALSE(r.is_ok());
  INFO(r.status().to_string());
  CHECK(r.status().code() == Code::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains(op));
}

// A view's attributes, spelled out.
struct ViewCase {
  Shape sizes;
  std::vector<int64_t> strides;
  int64_t offset;
  std::string what;
  OpAttrs attrs() const { return view(sizes, strides, offset); }
};

// The reference: every position of the view, walked one by one, lies in [0, numel).
bool inside_by_walk(const Shape& sizes, const std::vector<int64_t>& strides, int64_t offset,
                    int64_t numel) {
  const int64_t n = sizes.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, p = offset;
    for (int d = sizes.rank() - 1; d >= 0; --d) {
      p += (rest % sizes[d]) * strides[d];
      rest /= sizes[d];
    }
    if (p < 0 || p >= numel) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("strided rules: views inside the tensor, any stride sign", "[shape_rules][strided]") {
  const std::vector<std::pair<Shape, ViewCase>> ok = {
      {{2, 3}, {{3, 2}, {1, 3}, 0, "transpose"}},
      {{10}, {{5}, {-2}, 8, "negative stride down to 0"}},
      {{10}, {{5}, {2}, 1, "positive stride up to 9"}},
      {{5}, {{4, 3}, {0, 1}, 2, "zero stride (a row repeated)"}},
      {{4, 5}, {{4}, {5}, 4, "the last column"}},
      {{4, 5}, {{2, 2}, {-5, -1}, 19, "both strides negative from the last element"}},
      {{7}, {{}, {}, 6, "0-d view of the last element"}},
      {{3}, {{1, 1, 1}, {kMax, kMin, kMax}, 2, "extent-1 dims: their strides never move"}},
      {{1}, {{8}, {0}, 0, "every element the same one"}},
  };
  for (const auto& [x, c] : ok) {
    INFO(c.what);
    auto r = as_strided(M(x, DType::kInt64), c.attrs());
    INFO(r.status().to_string());
    GT_REQUIRE_OK(r);
    CHECK(*r == M(c.sizes, DType::kInt64));
    // strided_copy_ accepts the same view, keeping the destination's meta.
    auto w = strided_copy(M(x, DType::kInt64), M(c.sizes, DType::kInt64), c.attrs());
    GT_REQUIRE_OK(w);
    CHECK(*w == M(x, DType::kInt64));
  }
}

TEST_CASE("strided rules: an empty view is always inside", "[shape_rules][strided]") {
  // Nothing is read or written, so no stride or offset matters, nor the tensor's size.
  for (const TensorMeta& x : {M({0}), M({3, 4}), M({})}) {
    auto r = as_strided(x, view({2, 0, 3}, {kMax, kMin, 1}, -5));
    GT_REQUIRE_OK(r);
    CHECK(r->shape == Shape{2, 0, 3});
    GT_CHECK_OK(strided_copy(x, M({0, 4}), view({0, 4}, {kMin, kMax}, kMax)));
  }
}

TEST_CASE("strided rules: positions or attributes refused", "[shape_rules][strided]") {
  const TensorMeta x = M({10});
  struct C {
    OpAttrs a;
    std::string what;
  };
  OpAttrs no_shape;  // an offset and a stride, but no sizes
  no_shape.push_int(0);
  no_shape.push_int(1);
  const std::vector<C> bad = {
      {view({4}, {3}, 1), "1, 4, 7, 10: one past the end"},
      {view({5}, {-2}, 7), "7, 5, 3, 1, -1: one before the start"},
      {view({2}, {1}, -1), "offset -1"},
      {view({}, {}, 10), "0-d at offset 10 of 10 elements"},
      {view({2, 3}, {-1, 4}, 2), "mixed signs: lowest 1, highest 2 + 8 = 10"},
      {view({3, 3}, {3, -3}, 8), "mixed signs: 8 + 6 = 14"},
      {view({3}, {}, 0), "a stride missing"},
      {view({3}, {1, 1}, 0), "a stride too many"},
      {no_shape, "no sizes"},
      {view({-1}, {1}, 0), "negative size"},
      {view({0, -1}, {1, 1}, 0), "negative size after an empty dim"},
      {view({-2, 0}, {1, 1}, 0), "negative size before an empty dim"},
  };
  for (const C& c : bad) {
    check_refused(as_strided(x, c.a), "as_strided", c.what);
    if (c.a.has_shape)
      check_refused(strided_copy(x, M(c.a.shape), c.a), "strided_copy_", c.what);
  }
  OpAttrs one_of_three = view({3}, {1}, 0);
  one_of_three.ints[1] = 4;  // 0, 4, 8: inside
  GT_CHECK_OK(as_strided(x, one_of_three));
  // strided_copy_'s source must have the view's sizes and the destination's dtype.
  const OpAttrs col = view({4}, {5}, 2);
  GT_CHECK_OK(strided_copy(M({4, 5}), M({4}), col));
  check_refused(strided_copy(M({4, 5}), M({5}), col), "strided_copy_", "source of 5 elements");
  check_refused(strided_copy(M({4, 5}), M({4, 1}), col), "strided_copy_", "source of rank 2");
  check_refused(strided_copy(M({4, 5}), M({}), col), "strided_copy_", "0-d source");
  check_refused(strided_copy(M({4, 5}), M({4}, DType::kInt64), col), "strided_copy_",
                "source int64 into float32");
  check_refused(strided_copy(M({4, 5}, DType::kBFloat16), M({4}, DType::kFloat16), col),
                "strided_copy_", "source float16 into bfloat16");
  // Arity.
  const TensorMeta one[] = {M({4, 5})};
  check_refused(infer_meta(OpId::k_strided_copy_, one, col), "strided_copy_", "no source");
  const TensorMeta two[] = {M({4, 5}), M({4})};
  check_refused(infer_meta(OpId::k_as_strided, two, col), "as_strided", "two inputs");
}

TEST_CASE("strided rules agree with a walk over every position", "[shape_rules][strided]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> rank_d(0, 4), size_d(0, 4), stride_d(-6, 6), off_d(-4, 30),
      numel_d(0, 30);
  int accepted = 0, refused = 0;
  for (int k = 0; k < 20000; ++k) {
    Shape sizes;
    std::vector<int64_t> strides;
    const int r = rank_d(rng);
    for (int d = 0; d < r; ++d) {
      sizes.push_back(size_d(rng));
      strides.push_back(stride_d(rng));
    }
    const int64_t offset = off_d(rng), numel = numel_d(rng);
    const bool want = inside_by_walk(sizes, strides, offset, numel);
    INFO("sizes " << sizes.str() << " offset " << offset << " of " << numel << " elements");
    const OpAttrs a = view(sizes, strides, offset);
    CHECK(as_strided(M({numel}, DType::kInt32), a).is_ok() == want);
    CHECK(strided_copy(M({numel}, DType::kInt32), M(sizes, DType::kInt32), a).is_ok() == want);
    (want ? accepted : refused)++;
  }
  CHECK(accepted > 2000);  // both outcomes are well represented
  CHECK(refused > 2000);
}

TEST_CASE("strided rules: hostile strides and offsets are refused without overflow",
          "[shape_rules][strided]") {
  const TensorMeta x = M({10});
  const std::vector<ViewCase> bad = {
      {{3}, {kMax}, 0, "stride INT64_MAX"},
      {{3}, {kMin}, 9, "stride INT64_MIN"},
      {{2, 2}, {kMax, kMax}, kMax, "every term INT64_MAX"},
      {{2, 2, 2, 2, 2, 2, 2, 2}, {kMax, kMax, kMax, kMax, kMax, kMax, kMax, kMax}, 0,
       "rank 8 of INT64_MAX strides"},
      {{2, 2, 2, 2, 2, 2, 2, 2}, {kMin, kMin, kMin, kMin, kMin, kMin, kMin, kMin}, kMax,
       "rank 8 of INT64_MIN strides from INT64_MAX"},
      {{2}, {kMin}, kMax, "INT64_MAX + INT64_MIN = -1"},
      {{kMax}, {1}, 0, "INT64_MAX elements"},
      {{kMax, 2}, {0, kMax}, 0, "a huge extent times a huge stride"},
      {{kMax, 3}, {kMax, kMin}, kMax, "a huge extent times INT64_MAX, and INT64_MIN"},
      // 8 spans of ~2^126 would overflow even 128 bits (and wrap to "inside"): refused first
      // for the view's element count.
      {{kMax, kMax, kMax, kMax, kMax, kMax, kMax, kMax},
       {kMax, kMax, kMax, kMax, kMax, kMax, kMax, kMax}, kMax, "8 spans of ~2^126"},
      {{}, {}, kMax, "offset INT64_MAX"},
      {{}, {}, kMin, "offset INT64_MIN"},
  };
  for (const ViewCase& c : bad) {
    check_refused(as_strided(x, c.attrs()), "as_strided", c.what);
    check_refused(strided_copy(x, M(c.sizes), c.attrs()), "strided_copy_", c.what);
  }
  // Inside, but too many elements to make: as_strided refuses the result's size.
  check_refused(as_strided(M({1}), view({kMax}, {0}, 0)), "as_strided", "INT64_MAX copies of one");
  check_refused(as_strided(M({1}), view({1 << 30, 1 << 30}, {0, 0}, 0)), "as_strided",
                "2^60 copies of one");
}
