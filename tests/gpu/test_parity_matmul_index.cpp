// CUDA vs CPU parity: matmul (2-D, 1-D operands, batched with broadcast batch dims, dtypes) and
// the indexing ops (including out-of-range index errors on both sides).
#include <fmt/format.h>

#include <array>

#include "tests/gpu/parity_harness.h"

namespace gt::gpu_test {
namespace {

Tol matmul_tol(DType dt, int64_t k) {
  // Different summation orders (and cuBLAS's blocking): error grows with sqrt(k).
  const double g = std::sqrt(static_cast<double>(std::max<int64_t>(k, 1)));
  switch (dt) {
    case DType::kFloat32: return {1e-5 * g, 1e-5 * g};
    case DType::kFloat16: return {2e-3 * g, 2e-3 * g};
    case DType::kBFloat16: return {1.6e-2 * g, 1e-2 * g};
    default: return {0, 0};
  }
}

TEST_CASE("cuda parity: matmul", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(21);
  const std::array<std::pair<Shape, Shape>, 10> shapes{{
      {Shape{1, 1}, Shape{1, 1}},
      {Shape{7, 13}, Shape{13, 5}},
      {Shape{64, 129}, Shape{129, 33}},
      {Shape{257, 1023}, Shape{1023, 65}},
      {Shape{13}, Shape{13, 7}},
      {Shape{7, 13}, Shape{13}},
      {Shape{4, 7, 9}, Shape{9, 5}},         // b shared: batch folded into M
      {Shape{4, 7, 9}, Shape{4, 9, 5}},      // strided batched
      {Shape{7, 9}, Shape{3, 9, 5}},         // a broadcast (stride 0)
      {Shape{2, 1, 7, 9}, Shape{1, 3, 9, 5}} // neither uniform: pointer-array batched
  }};
  for (const auto& [sa, sb] : shapes) {
    for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt64}) {
      const Pair a = random_pair(sa, dt, rng, -2, 2);
      const Pair b = random_pair(sb, dt, rng, -2, 2);
      const int64_t k = sa[sa.rank() - 1];
      check_op(OpId::k_matmul, OpAttrs{}, {&a, &b},
               fmt::format("matmul {} @ {}", describe(sa, dt), describe(sb, dt)),
               matmul_tol(dt, k));
    }
  }
  // k == 0 gives zeros; m == 0 gives an empty result. (Mixed dtypes are refused by the shape
  // rule, as torch.matmul refuses them.)
  const Pair a0 = random_pair(Shape{3, 0}, DType::kFloat32, rng);
  const Pair b0 = random_pair(Shape{0, 4}, DType::kFloat32, rng);
  check_op(OpId::k_matmul, OpAttrs{}, {&a0, &b0}, "matmul k = 0");
  const Pair am = random_pair(Shape{0, 5}, DType::kBFloat16, rng);
  const Pair bm = random_pair(Shape{5, 4}, DType::kBFloat16, rng);
  check_op(OpId::k_matmul, OpAttrs{}, {&am, &bm}, "matmul m = 0");
}

Pair index_pair(const Shape& s, DType dt, int64_t limit, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> d(0, std::max<int64_t>(limit - 1, 0));
  std::vector<double> v(static_cast<size_t>(s.numel()));
  for (auto& x : v) x = static_cast<double>(d(rng));
  return upload(s, dt, v);
}

TEST_CASE("cuda parity: indexing ops", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(22);
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{1023}}) {
    for (DType dt : dtypes()) {
      for (DType it : {DType::kInt64, DType::kInt32}) {
        const Shape s{3, n, 4};
        const Pair x = random_pair(s, dt, rng);
        const std::string w = fmt::format("{} index {}", describe(s, dt), dtype_name(it));
        const Pair sel = index_pair(Shape{9}, it, n, rng);
        check_op(OpId::k_index_select, make_axis(1), {&x, &sel}, "index_select " + w);
        const Pair g = index_pair(Shape{3, 2 * n, 4}, it, n, rng);
        check_op(OpId::k_gather, make_axis(1), {&x, &g}, "gather " + w);
        const Pair src = random_pair(Shape{3, 2 * n, 4}, dt, rng);
        // Colliding float adds run in a different order on the GPU.
        const Tol add_tol = is_floating(dt) ? Tol{default_tol(dt).rtol * 8, 1e-2} : Tol{0, 0};
        check_op(OpId::k_scatter_add, make_axis(1), {&x, &g, &src}, "scatter_add " + w, add_tol);
        const Pair isrc = random_pair(Shape{3, 9, 4}, dt, rng);
        check_op(OpId::k_index_add, make_axis(1), {&x, &sel, &isrc}, "index_add " + w, add_tol);
      }
    }
  }
  for (DType it : {DType::kInt64, DType::kInt32}) {
    const Pair labels = index_pair(Shape{4097}, it, 10, rng);
    check_op(OpId::k_one_hot, make_num_classes(10), {&labels}, "one_hot");
    // Out-of-range values: OutOfRange on both, nothing written.
    const Pair bad = upload(Shape{3}, it, {1, 12, -1});
    RunResult r = check_op(OpId::k_one_hot, make_num_classes(10), {&bad}, "one_hot out of range");
    CHECK(r.rule_ok);
    CHECK(r.gpu.code() == Code::kOutOfRange);
    const Pair x = random_pair(Shape{5, 3}, DType::kFloat32, rng);
    const Pair badi = upload(Shape{2}, it, {4, 5});
    RunResult r2 =
        check_op(OpId::k_index_select, make_axis(0), {&x, &badi}, "index_select out of range");
    CHECK(r2.gpu.code() == Code::kOutOfRange);
    CHECK(r2.gpu.message().find("index 5") != std::string::npos);
  }
}

}  // namespace
}  // namespace gt::gpu_test
