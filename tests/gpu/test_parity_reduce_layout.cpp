// CUDA vs CPU parity: reductions (all elements / one dim, keepdim, long rows that the CUDA side
// splits over blocks), cumsum and layout ops (reshape, permute, slice with steps, cat, expand).
#include <fmt/format.h>

#include <array>

#include "tests/gpu/parity_harness.h"

namespace gt::gpu_test {
namespace {

const std::array<OpId, 8> kReduce{OpId::k_sum, OpId::k_mean, OpId::k_max, OpId::k_min,
                                  OpId::k_argmax, OpId::k_argmin, OpId::k_var,
                                  OpId::k_logsumexp};

Tol reduce_tol(OpId op, DType in) {
  // Floating sums and means accumulate in float32 on both sides (as torch does) but in a
  // different order (the CPU's is torch's CPU order), so near-cancelling sums differ by a few
  // float32 roundings of the partial sums; var, logsumexp and cumsum work in double.
  if (op == OpId::k_argmax || op == OpId::k_argmin || op == OpId::k_max || op == OpId::k_min)
    return {0, 0};
  if (!is_floating(in)) return {1e-5, 1e-6};
  if (op == OpId::k_sum || op == OpId::k_mean)
    return default_tol(in).rtol > 1e-5 ? default_tol(in) : Tol{1e-5, 1e-4};
  return default_tol(in).rtol > 1e-5 ? default_tol(in) : Tol{1e-5, 1e-5};
}

OpAttrs reduce_attrs(OpId op, int64_t dim, bool keepdim) {
  return op == OpId::k_var ? make_var(dim, keepdim, 1.0) : make_reduce(dim, keepdim);
}

TEST_CASE("cuda parity: reductions", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(11);
  for (int64_t n : sizes()) {
    for (DType dt : dtypes()) {
      const std::array<Shape, 3> shapes{Shape{n}, Shape{3, n}, Shape{n, 5}};
      for (const Shape& s : shapes) {
        const Pair x = random_pair(s, dt, rng, -3, 3);
        for (OpId op : kReduce) {
          for (int64_t dim : {kAllDims, int64_t{0}, int64_t{-1}}) {
            for (bool keep : {false, true}) {
              check_op(op, reduce_attrs(op, dim, keep), {&x},
                       fmt::format("{} dim {} keep {} of {}", op_name(op),
                                   dim == kAllDims ? "all" : std::to_string(dim), keep,
                                   describe(s, dt)),
                       reduce_tol(op, dt));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("cuda parity: float64 sums and means add in double, float64 random numbers",
          "[.gpu]") {
  // (dtypes() has no float64: these were once added in float32 on CUDA, ~1e-7 off, and
  // float64 rand / randn had no kernel; a 1e-12 tolerance tells double from float.)
  GT_REQUIRE_GPU();
  std::mt19937 rng(13);
  const Tol tol{1e-12, 1e-12};
  for (int64_t n : sizes()) {
    const Shape s{3, n};
    const Pair x = random_pair(s, DType::kFloat64, rng, -3, 3);
    for (OpId op : {OpId::k_sum, OpId::k_mean})
      for (int64_t dim : {kAllDims, int64_t{0}, int64_t{-1}})
        check_op(op, make_reduce(dim, false), {&x},
                 fmt::format("{} dim {} of {}", op_name(op),
                             dim == kAllDims ? "all" : std::to_string(dim),
                             describe(s, DType::kFloat64)),
                 tol);
    const OpAttrs r = make_random(Shape{n, 3}, DType::kFloat64, 0x1234567890abcdefull, 7);
    check_op(OpId::k_rand, r, {}, "rand " + describe(s, DType::kFloat64), tol);
    check_op(OpId::k_randn, r, {}, "randn " + describe(s, DType::kFloat64), tol);
  }
}

TEST_CASE("cuda parity: reductions of long rows, NaN and infinities", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(12);
  // Long rows take the split-row path (partials + finishing pass).
  for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kInt64}) {
    const Shape s{2, 1 << 20};
    const Pair x = random_pair(s, dt, rng, -3, 3);
    for (OpId op : kReduce)
      for (int64_t dim : {kAllDims, int64_t{1}})
        check_op(op, reduce_attrs(op, dim, false), {&x},
                 fmt::format("{} long rows dim {} {}", op_name(op), dim == kAllDims ? -99 : dim,
                             describe(s, dt)),
                 reduce_tol(op, dt).rtol == 0 ? Tol{0, 0} : Tol{1e-4, 1e-4});
  }
  std::vector<double> v = random_values(4097, DType::kFloat32, rng);
  v[100] = std::nan("");
  v[3000] = std::nan("");
  v[7] = INFINITY;
  const Pair x = upload(Shape{4097}, DType::kFloat32, v);
  for (OpId op : kReduce)
    check_op(op, reduce_attrs(op, kAllDims, false), {&x}, "NaN " + std::string(op_name(op)));
  const Pair ninf = upload(Shape{3}, DType::kFloat32, {-INFINITY, -INFINITY, -INFINITY});
  check_op(OpId::k_logsumexp, make_reduce(kAllDims, false), {&ninf}, "logsumexp all -inf");
  const Pair empty = upload(Shape{0, 4}, DType::kFloat32, {});
  for (OpId op : kReduce)
    check_op(op, reduce_attrs(op, 0, false), {&empty}, "empty " + std::string(op_name(op)));
}

// Each reduction kernel of k_reduce.cu by shape: a warp per short row (inner == 1, n <= 2048),
// a block per longer row, column tiles for inner > 1 (narrow inner: a tile wider than the
// columns; wide inner with few outputs: n split over blocks and a finishing pass).
TEST_CASE("cuda parity: reduction kernels by shape (warp rows, column tiles, split columns)",
          "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(13);
  struct Case { Shape s; int64_t dim; };
  const std::array<Case, 8> cases{{
      {Shape{5000, 64}, 1},      // many short rows: a warp each
      {Shape{300, 2048}, 1},     // the longest warp row
      {Shape{40, 2049}, 1},      // the shortest block row
      {Shape{4096, 300}, 0},     // 10 column tiles, n split 32 ways
      {Shape{8192, 3}, 0},       // inner 3: a 4-wide tile, n split
      {Shape{3, 700, 33}, 1},    // inner 33: two tiles per outer slice, the second mostly idle
      {Shape{64, 5, 4096}, 1},   // many tiles, short n: no split
      {Shape{2, 20000, 2}, 1},   // two outer slices, split
  }};
  for (const Case& c : cases) {
    for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kInt32}) {
      const Pair x = random_pair(c.s, dt, rng, -3, 3);
      for (OpId op : kReduce)
        check_op(op, reduce_attrs(op, c.dim, false), {&x},
                 fmt::format("{} dim {} of {}", op_name(op), c.dim, describe(c.s, dt)),
                 reduce_tol(op, dt).rtol == 0 ? Tol{0, 0} : Tol{1e-4, 1e-4});
    }
  }
}

TEST_CASE("cuda parity: cumsum along each dim, long scans, NaN", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(13);
  for (int64_t n : sizes())
    for (DType dt : dtypes()) {
      const std::array<Shape, 3> shapes{Shape{n}, Shape{3, n}, Shape{n, 5}};
      for (const Shape& s : shapes) {
        const Pair x = random_pair(s, dt, rng, -3, 3);
        for (int64_t dim : {int64_t{0}, int64_t{-1}})
          check_op(OpId::k_cumsum, make_axis(dim), {&x},
                   fmt::format("cumsum dim {} of {}", dim, describe(s, dt)),
                   reduce_tol(OpId::k_sum, dt));
      }
    }
  const Pair longs = random_pair(Shape{2, 1 << 20}, DType::kFloat32, rng, -3, 3);
  check_op(OpId::k_cumsum, make_axis(1), {&longs}, "cumsum long rows", Tol{1e-4, 1e-4});
  const Pair zero_d = upload(Shape{}, DType::kInt32, {7});
  check_op(OpId::k_cumsum, make_axis(-1), {&zero_d}, "cumsum 0-d int32");
  const Pair nan = upload(Shape{4}, DType::kFloat32, {1, std::nan(""), 2, 3});
  check_op(OpId::k_cumsum, make_axis(0), {&nan}, "cumsum NaN");
}

// argsort's permutation is exact (a stable sort, NaN above every number), so the CPU's and the
// GPU's must be equal; rounded values give many ties, which the stability decides.
TEST_CASE("cuda parity: argsort along each dim, ties, NaN, both directions", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(17);
  for (int64_t n : sizes())
    for (DType dt : dtypes()) {
      const std::array<Shape, 3> shapes{Shape{n}, Shape{3, n}, Shape{n, 5}};
      for (const Shape& s : shapes) {
        std::vector<double> v = random_values(s.numel(), dt, rng, -3, 3);
        for (double& e : v) e = std::round(e);
        const Pair x = upload(s, dt, v);
        for (int64_t dim : {int64_t{0}, int64_t{-1}})
          for (bool desc : {false, true})
            check_op(OpId::k_argsort, make_sort(dim, desc), {&x},
                     fmt::format("argsort dim {} desc {} of {}", dim, desc, describe(s, dt)));
      }
    }
  const Pair nan = upload(Shape{6}, DType::kFloat32, {1, std::nan(""), -2, 1, std::nan(""), 0});
  check_op(OpId::k_argsort, make_sort(0, false), {&nan}, "argsort NaN ascending");
  check_op(OpId::k_argsort, make_sort(0, true), {&nan}, "argsort NaN descending");
}

TEST_CASE("cuda parity: layout ops", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(13);
  for (int64_t n : sizes()) {
    for (DType dt : dtypes()) {
      const Shape s{2, 3, n};
      const Pair x = random_pair(s, dt, rng);
      const std::string w = describe(s, dt);
      check_op(OpId::k_reshape, make_reshape(Shape{3, 2 * n}), {&x}, "reshape " + w);
      for (const std::array<int64_t, 3>& perm :
           {std::array<int64_t, 3>{2, 0, 1}, {1, 0, 2}, {0, 2, 1}, {2, 1, 0}})
        check_op(OpId::k_permute, make_permute(perm), {&x},
                 fmt::format("permute {}{}{} {}", perm[0], perm[1], perm[2], w));
      // slice: dim 0 all, dim 1 backwards with step -2, dim 2 every third from 1.
      OpAttrs sl;
      sl.has_shape = true;
      const int64_t c2 = n > 1 ? (n - 1 + 2) / 3 : 0;
      sl.shape = Shape{2, 2, c2};
      for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{-2}, int64_t{1}, int64_t{3}})
        sl.push_int(v);
      check_op(OpId::k_slice, sl, {&x}, "slice " + w);
      const Pair y = random_pair(Shape{2, 1, n}, dt, rng);
      const Pair z = random_pair(Shape{2, 4, n}, DType::kFloat32, rng);
      check_op(OpId::k_cat, make_axis(1), {&x, &y, &z}, "cat axis 1 " + w);
      check_op(OpId::k_cat, make_axis(-1), {&x, &x}, "cat axis -1 " + w);
      check_op(OpId::k_cat, make_axis(0), {&x, &x, &x}, "cat axis 0 " + w);
      check_op(OpId::k_expand, make_reshape(Shape{4, 2, 3, n}), {&x}, "expand " + w);
      const Pair col = random_pair(Shape{n, 1}, dt, rng);
      check_op(OpId::k_expand, make_reshape(Shape{n, 9}), {&col}, "expand column " + w);
    }
  }
}

TEST_CASE("cuda parity: transposes (tiled path) and batched permutes", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(14);
  for (DType dt : dtypes()) {
    const Pair m = random_pair(Shape{67, 1023}, dt, rng);
    check_op(OpId::k_permute, make_permute(std::array<int64_t, 2>{1, 0}), {&m},
             "transpose " + describe(Shape{67, 1023}, dt));
    const Pair b = random_pair(Shape{3, 129, 65}, dt, rng);
    check_op(OpId::k_permute, make_permute(std::array<int64_t, 3>{0, 2, 1}), {&b},
             "batched transpose " + describe(Shape{3, 129, 65}, dt));
    check_op(OpId::k_permute, make_permute(std::array<int64_t, 3>{2, 1, 0}), {&b},
             "reverse permute " + describe(Shape{3, 129, 65}, dt));
    const Pair h = random_pair(Shape{2, 9, 33, 17}, dt, rng);
    check_op(OpId::k_permute, make_permute(std::array<int64_t, 4>{0, 2, 3, 1}), {&h},
             "permute 0231 " + describe(Shape{2, 9, 33, 17}, dt));
    check_op(OpId::k_permute, make_permute(std::array<int64_t, 4>{3, 1, 0, 2}), {&h},
             "permute 3102 " + describe(Shape{2, 9, 33, 17}, dt));
  }
}

}  // namespace
}  // namespace gt::gpu_test
