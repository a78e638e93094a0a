// as_strided and strided_copy_ (the ops behind the client's aliasing views) through real daemons,
// sent as raw ops (gt::detail::run_op) so the test sees the ops' own semantics whatever the
// Tensor API builds on them. Expected values come from walking the view's positions by hand.
#include <cstdint>
#include <limits>
#include <vector>

#include "libgtclient/run_op.h"
#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

namespace {

gt::OpAttrs view_attrs(const Shp& sizes, const std::vector<int64_t>& strides, int64_t offset) {
  gt::Shape s;
  for (int64_t d : sizes) s.push_back(d);
  return gt::make_strided(s, strides, offset);
}

Tensor as_strided(const Tensor& x, const Shp& sizes, const std::vector<int64_t>& strides,
                  int64_t offset) {
  return gt::detail::run_op(gt::OpId::k_as_strided, view_attrs(sizes, strides, offset), {&x});
}

void strided_copy(Tensor& dst, const Tensor& src, const Shp& sizes,
                  const std::vector<int64_t>& strides, int64_t offset) {
  gt::detail::run_op(gt::OpId::k_strided_copy_, view_attrs(sizes, strides, offset), {&dst, &src});
}

// The flat positions of the view, in its row-major order.
std::vector<int64_t> positions(const Shp& sizes, const std::vector<int64_t>& strides,
                               int64_t offset) {
  std::vector<int64_t> p;
  for_each_index(sizes, [&](const Shp& idx, int64_t) {
    int64_t q = offset;
    for (size_t d = 0; d < idx.size(); ++d) q += idx[d] * strides[d];
    p.push_back(q);
  });
  return p;
}

Ref read_view(const Ref& x, const Shp& sizes, const std::vector<int64_t>& strides,
              int64_t offset) {
  Ref r{sizes, {}};
  for (int64_t q : positions(sizes, strides, offset)) r.v.push_back(x.v[q]);
  return r;
}

Ref write_view(Ref dst, const Ref& src, const std::vector<int64_t>& strides, int64_t offset) {
  const auto pos = positions(src.shape, strides, offset);
  for (size_t i = 0; i < pos.size(); ++i) dst.v[pos[i]] = src.v[i];
  return dst;
}

}  // namespace

GT_OPS_COVERED("as_strided", "strided_copy_");

TEST_CASE("as_strided reads a view's elements: transposed, reversed, repeated, empty",
          "[ops][strided]") {
  daemons();
  struct C {
    Shp sizes;
    std::vector<int64_t> strides;
    int64_t offset;
    const char* what;
  };
  // Views of a [3, 4] tensor (12 elements).
  const std::vector<C> cases = {
      {{4, 3}, {1, 4}, 0, "the transpose"},
      {{3, 2}, {4, 2}, 1, "columns 1 and 3"},
      {{3, 4}, {-4, -1}, 11, "both dims reversed"},
      {{2, 3, 4}, {0, 4, 1}, 0, "repeated twice (zero stride)"},
      {{5, 3}, {1, 1}, 2, "overlapping windows"},
      {{}, {}, 7, "one element, 0-d"},
      {{0, 4}, {1, 1}, 0, "empty"},
  };
  for (gt::DType dt : all_dtypes()) {
    const Ref x = to_dtype(rnd_for(dt, {3, 4}, 31), dt);
    const Tensor t = up(x, dt);
    for (const C& c : cases) {
      INFO(c.what);
      CHECK_TENSOR(as_strided(t, c.sizes, c.strides, c.offset),
                   read_view(x, c.sizes, c.strides, c.offset), dt);
    }
    // A view of a transposed tensor: positions are in its own (contiguous) elements.
    const int64_t swap[] = {1, 0};
    const Tensor tt = gt::detail::run_op(gt::OpId::k_permute, gt::make_permute(swap), {&t});
    const Ref xt = permute_ref(x, {1, 0});
    CHECK_TENSOR(as_strided(tt, {2, 2}, {3, -1}, 1), read_view(xt, {2, 2}, {3, -1}, 1), dt);
  }
}

TEST_CASE("strided_copy_ writes a view in place: a column, a reversed block, a transpose",
          "[ops][strided]") {
  daemons();
  for (gt::DType dt : all_dtypes()) {
    INFO(dt_name(dt));
    const Ref d0 = to_dtype(rnd_for(dt, {3, 4}, 41), dt);
    Tensor dst = up(d0, dt);
    const Tensor before = dst.cast(dt);  // a new tensor made before the writes
    const Ref col = to_dtype(rnd_for(dt, {3}, 42), dt);
    strided_copy(dst, up(col, dt), {3}, {4}, 2);  // column 2
    Ref want = write_view(d0, col, {4}, 2);
    CHECK_TENSOR(dst, want, dt);
    const Ref blk = to_dtype(rnd_for(dt, {2, 2}, 43), dt);
    strided_copy(dst, up(blk, dt), {2, 2}, {-4, -1}, 11);  // bottom-right block, reversed
    want = write_view(want, blk, {-4, -1}, 11);
    CHECK_TENSOR(dst, want, dt);
    const Ref tr = to_dtype(rnd_for(dt, {4, 3}, 44), dt);
    strided_copy(dst, up(tr, dt), {4, 3}, {1, 4}, 0);  // the whole tensor, transposed
    CHECK_TENSOR(dst, write_view(want, tr, {1, 4}, 0), dt);
    CHECK_TENSOR(before, d0, dt);
  }
  // An empty view writes nothing.
  Tensor z = gt::ones({2, 2});
  strided_copy(z, gt::zeros({0, 3}), {0, 3}, {std::numeric_limits<int64_t>::max(), 1}, -7);
  CHECK_TENSOR(z, ref_of({2, 2}, {1, 1, 1, 1}), gt::kFloat32);
}

TEST_CASE("strided_copy_ keeps value semantics with the worker's aliases", "[ops][strided]") {
  daemons();
  // A raw reshape shares its input's bytes on the worker; a write into either must not show in
  // the other, and the elements outside the view keep their values.
  Tensor x = gt::arange(0, 6, 1, gt::kFloat32);
  Tensor y = gt::detail::run_op(gt::OpId::k_reshape, gt::make_reshape(gt::Shape{2, 3}), {&x});
  strided_copy(x, gt::from_vector<float>({10, 11}), {2}, {2}, 1);
  CHECK_TENSOR(x, ref_of({6}, {0, 10, 2, 11, 4, 5}), gt::kFloat32);
  CHECK_TENSOR(y, ref_of({2, 3}, {0, 1, 2, 3, 4, 5}), gt::kFloat32);
  strided_copy(y, gt::from_vector<float>({-1}), {1}, {1}, 5);
  CHECK_TENSOR(y, ref_of({2, 3}, {0, 1, 2, 3, 4, -1}), gt::kFloat32);
  CHECK_TENSOR(x, ref_of({6}, {0, 10, 2, 11, 4, 5}), gt::kFloat32);
  // The source being the destination itself: reversed in place, reading the old values.
  Tensor r = gt::arange(0, 5, 1, gt::kInt64);
  strided_copy(r, r, {5}, {-1}, 4);
  CHECK(r.to_vector<int64_t>() == std::vector<int64_t>{4, 3, 2, 1, 0});
}

TEST_CASE("strided views with bad attributes throw gt::Error at the call site",
          "[ops][strided][errors]") {
  daemons();
  Tensor x = gt::zeros({3, 4});
  auto throws_naming = [](auto&& f, const char* op) {
    try {
      f();
      FAIL_CHECK("no gt::Error");
    } catch (const gt::Error& e) {
      CHECK_THAT(e.what(), Catch::Contains(op));
    }
  };
  throws_naming([&] { as_strided(x, {4}, {4}, 0); }, "as_strided");          // reaches 12 of 12
  throws_naming([&] { as_strided(x, {3}, {-1}, 1); }, "as_strided");         // reaches -1
  throws_naming([&] { as_strided(x, {}, {}, 12); }, "as_strided");           // offset outside
  throws_naming([&] { as_strided(x, {2, 2}, {1}, 0); }, "as_strided");       // a stride missing
  const int64_t big = std::numeric_limits<int64_t>::max();
  throws_naming([&] { as_strided(x, {3}, {big}, 0); }, "as_strided");        // overflow-sized
  Tensor src = gt::zeros({3});
  throws_naming([&] { strided_copy(x, src, {3}, {6}, 0); }, "strided_copy_");  // reaches 12
  throws_naming([&] { strided_copy(x, src, {4}, {4}, 3); }, "strided_copy_");  // src shape
  throws_naming([&] { strided_copy(x, gt::zeros({3}, gt::kInt64), {3}, {4}, 0); },
                "strided_copy_");                                             // src dtype
  // Nothing was queued: x is still usable and unchanged.
  CHECK_TENSOR(x, ref_of({3, 4}, std::vector<double>(12, 0.0)), gt::kFloat32);
}
