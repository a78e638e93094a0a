// argsort, sort, topk and msort through real daemons against a host reference that stably sorts
// each line by (NaN rank, value): every dim, dtype and direction, ties (stability), NaN, 0-d and
// empty inputs, k from 0 to the size, gradients of the sorted values, and the errors.
#include <algorithm>
#include <tuple>
#include <vector>

#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

namespace {

struct Sorted {
  Ref values, indices;
};

// Each line of `a` along dim sorted stably; NaN above every number. The first k of each line
// (k < 0: all of them).
Sorted sort_ref(const Ref& a, int64_t dim, bool descending, int64_t k = -1) {
  const int64_t r = static_cast<int64_t>(a.shape.size());
  if (r == 0) return {a, ref_of({}, {0})};
  const int64_t d = dim < 0 ? dim + r : dim;
  const int64_t n = a.shape[d], keep = k < 0 ? n : k;
  Shp out_shape = a.shape;
  out_shape[d] = keep;
  Sorted s{{out_shape, std::vector<double>(numel_of(out_shape))},
           {out_shape, std::vector<double>(numel_of(out_shape))}};
  const Shp st = strides_of(a.shape), ost = strides_of(out_shape);
  for_each_index(a.shape, [&](const Shp& idx, int64_t lin) {
    if (idx[d] != 0) return;
    std::vector<std::tuple<int, double, int64_t>> line;
    for (int64_t j = 0; j < n; ++j) {
      const double x = a.v[lin + j * st[d]];
      const bool nan = std::isnan(x);
      line.emplace_back(descending ? (nan ? 0 : 1) : (nan ? 1 : 0), nan ? 0 : (descending ? -x : x), j);
    }
    std::sort(line.begin(), line.end());
    int64_t olin = 0;
    for (int64_t q = 0; q < r; ++q) olin += (q == d ? 0 : idx[q]) * ost[q];
    for (int64_t j = 0; j < keep; ++j) {
      const int64_t pos = std::get<2>(line[j]);
      s.values.v[olin + j * ost[d]] = a.v[lin + pos * st[d]];
      s.indices.v[olin + j * ost[d]] = static_cast<double>(pos);
    }
  });
  return s;
}

Ref with_ties(const Ref& x) { return map1(x, [](double v) { return std::round(v * 2) / 2; }); }

}  // namespace

GT_OPS_COVERED("argsort");
TEST_CASE("sort and argsort along every dim, dtype and direction", "[ops][sort]") {
  daemons();
  uint64_t seed = 1200;
  for (const Shp& shape : {Shp{3, 4, 5}, Shp{9}, Shp{2, 1, 3}}) {
    for (gt::DType dt : all_dtypes()) {
      Ref x = to_dtype(with_ties(rnd_for(dt, shape, seed++)), dt);
      Tensor t = up(x, dt);
      const int64_t r = static_cast<int64_t>(shape.size());
      for (int64_t dim = -r; dim < r; ++dim)
        for (bool desc : {false, true}) {
          INFO(shape_str(shape) << " " << dt_name(dt) << " dim " << dim << " desc " << desc);
          const Sorted want = sort_ref(x, dim, desc);
          auto [v, i] = t.sort(dim, desc);
          CHECK_TENSOR(v, want.values, dt);
          CHECK_TENSOR(i, want.indices, gt::kInt64);
          CHECK_TENSOR(gt::argsort(t, dim, desc), want.indices, gt::kInt64);
          auto [fv, fi] = gt::sort(t, dim, desc);
          CHECK_TENSOR(fi, want.indices, gt::kInt64);
        }
      CHECK_TENSOR(t.msort(), sort_ref(x, 0, false).values, dt);
    }
  }
}

TEST_CASE("topk: every k, largest and smallest, NaN counts as the largest", "[ops][sort]") {
  daemons();
  Ref x = with_ties(rnd_for(gt::kFloat32, {4, 7}, 1300));
  x.v[3] = NAN;
  x.v[20] = NAN;
  Tensor t = up(x, gt::kFloat32);
  for (int64_t k = 0; k <= 7; ++k)
    for (bool largest : {true, false}) {
      INFO("k " << k << " largest " << largest);
      const Sorted want = sort_ref(x, 1, largest, k);
      auto [v, i] = t.topk(k, 1, largest);
      CHECK_TENSOR(v, want.values, gt::kFloat32);
      CHECK_TENSOR(i, want.indices, gt::kInt64);
    }
  const Sorted col = sort_ref(x, 0, true, 2);
  auto [cv, ci] = gt::topk(t, 2, 0);
  CHECK_TENSOR(cv, col.values, gt::kFloat32);
  CHECK_TENSOR(ci, col.indices, gt::kInt64);
}

TEST_CASE("sort of 0-d and empty tensors, topk and sort errors", "[ops][sort]") {
  daemons();
  Tensor s = up(ref_of({}, {2.5}), gt::kFloat32);
  auto [sv, si] = s.sort();
  CHECK_TENSOR(sv, ref_of({}, {2.5}), gt::kFloat32);
  CHECK_TENSOR(si, ref_of({}, {0}), gt::kInt64);
  auto [tv, ti] = s.topk(1);
  CHECK_TENSOR(ti, ref_of({}, {0}), gt::kInt64);
  Tensor e = gt::zeros({0, 3});
  CHECK_TENSOR(std::get<1>(e.sort(0)), ref_of({0, 3}, {}), gt::kInt64);
  CHECK_TENSOR(std::get<0>(e.topk(0, 1)), ref_of({0, 0}, {}), gt::kFloat32);
  Tensor t = gt::ones({2, 3});
  CHECK_THROWS_AS(t.sort(2), gt::Error);
  CHECK_THROWS_AS(t.argsort(-3), gt::Error);
  CHECK_THROWS_AS(t.topk(4), gt::Error);
  CHECK_THROWS_AS(t.topk(-1), gt::Error);
  CHECK_THROWS_AS(s.topk(2), gt::Error);
}

TEST_CASE("the gradient of sorted and top-k values goes back to their positions", "[ops][sort]") {
  daemons();
  Ref x = rnd_for(gt::kFloat32, {3, 5}, 1400);
  Ref w = rnd_for(gt::kFloat32, {3, 2}, 1401);
  Tensor t = up(x, gt::kFloat32).requires_grad_(true);
  auto [v, i] = t.topk(2, 1);
  (v * up(w, gt::kFloat32)).sum().backward();
  // d/dx of sum(w * x[top positions]) is w at those positions, 0 elsewhere.
  const Sorted top = sort_ref(x, 1, true, 2);
  Ref want{{3, 5}, std::vector<double>(15, 0.0)};
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t j = 0; j < 2; ++j)
      want.v[r * 5 + static_cast<int64_t>(top.indices.v[r * 2 + j])] += w.v[r * 2 + j];
  CHECK_TENSOR(t.grad(), want, gt::kFloat32);
  CHECK_FALSE(i.requires_grad());
}
