// CUDA vs CPU at sizes the small parity cases never reach (issue 10): 2^25 + 3 elements, so every
// grid-stride loop goes round more than once and vector loads meet a ragged tail; and a tensor
// of more than 2^32 elements, where 32-bit index arithmetic would wrap, checked analytically
// (the CPU reference would need the same 4 GiB and minutes); and the per-session float32 matmul
// precision reaching cuBLAS.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "libgtcore/shape_rules.h"

#include "require_ok.h"
#include "tests/gpu/parity_harness.h"

namespace gt::gpu_test {
namespace {

constexpr int64_t kLooping = (int64_t{1} << 25) + 3;

TEST_CASE("cuda parity: 2^25 + 3 elements (every kernel loops)", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(251);
  const Pair x = random_pair(Shape{kLooping}, DType::kFloat32, rng);
  const Pair y = random_pair(Shape{kLooping}, DType::kFloat32, rng);
  check_op(OpId::k_exp, OpAttrs{}, {&x}, "exp 2^25+3", {4e-6, 1e-6});
  check_op(OpId::k_add, OpAttrs{}, {&x, &y}, "add 2^25+3");
  check_op(OpId::k_mul, make_binary_scalar(ScalarSide::kRight, 1.5, false), {&x}, "mul scalar");
  check_op(OpId::k_cast, make_cast(DType::kBFloat16), {&x}, "cast to bfloat16 2^25+3");
  check_op(OpId::k_sum, make_reduce(kAllDims, false), {&x}, "sum of 2^25+3", {1e-4, 1e-2});
  // Reductions of the three shapes: a long inner row, many short rows, few long columns.
  const Pair m = random_pair(Shape{8193, 4097}, DType::kFloat32, rng);
  check_op(OpId::k_sum, make_reduce(1, false), {&m}, "sum over rows", {1e-4, 1e-3});
  check_op(OpId::k_sum, make_reduce(0, false), {&m}, "sum over columns", {1e-4, 1e-3});
  const Pair b = random_pair(Shape{32771, 1025}, DType::kFloat32, rng);
  check_op(OpId::k_sum, make_reduce(0, false), {&b}, "bias-gradient shape", {1e-4, 1e-3});
  // A broadcast add of a bias row and a transpose of the big matrix.
  const Pair bias = random_pair(Shape{4097}, DType::kFloat32, rng);
  check_op(OpId::k_add, OpAttrs{}, {&m, &bias}, "bias add, broadcast");
  const int64_t swap[] = {1, 0};
  check_op(OpId::k_permute, make_permute(swap), {&m}, "transpose 8193x4097");
}

TEST_CASE("cuda: a float32 matmul computes at the precision its instruction carries", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(252);
  const Pair a = random_pair(Shape{512, 512}, DType::kFloat32, rng);
  const Pair b = random_pair(Shape{512, 512}, DType::kFloat32, rng);
  // highest: float32 products, as the CPU.
  check_op(OpId::k_matmul, make_matmul(MatmulPrecision::kHighest), {&a, &b}, "matmul highest",
           {1e-4, 1e-4});
  // high (TF32) and medium (bfloat16): close to the float32 result, but visibly not it -- the
  // attribute reached cuBLAS.
  for (MatmulPrecision p : {MatmulPrecision::kHigh, MatmulPrecision::kMedium}) {
    RunResult r = run_both(OpId::k_matmul, make_matmul(p), {&a, &b});
    GT_REQUIRE_OK(r.gpu);
    const std::vector<double> want = fetch_cpu(r.out.c), got = fetch_gpu(r.out.g);
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
    INFO("precision " << static_cast<int>(p) << ": largest difference " << worst);
    CHECK(worst > 1e-5);
    CHECK(worst < 0.5);  // entries are sums of 512 products of values in [-2, 2)
  }
}

TEST_CASE("cuda: a tensor of more than 2^32 elements, checked analytically", "[.gpu]") {
  GT_REQUIRE_GPU();
  const int64_t n = (int64_t{1} << 32) + 5;
  const uint64_t session = 7;
  CudaBackend& g = *be->gpu;
  auto run = [&](OpId op, const OpAttrs& attrs, std::vector<const Tensor*> ins) {
    std::vector<TensorMeta> metas;
    for (const Tensor* t : ins) metas.push_back(t->meta);
    auto meta = infer_meta(op, metas, attrs);
    GT_REQUIRE_OK(meta);
    auto storage = g.alloc(static_cast<size_t>(meta->nbytes()));
    GT_REQUIRE_OK(storage);
    Tensor out{*meta, *storage, nullptr};
    GT_REQUIRE_OK(g.run(KernelArgs{op, attrs, ins, out, session}));
    return out;
  };
  // ones(bool) summed: int64 n exactly; the last element set to false: n - 1.
  Tensor ones = run(OpId::k_ones, make_shape_dtype(Shape{n}, DType::kBool), {});
  Tensor total = run(OpId::k_sum, make_reduce(kAllDims, false), {&ones});
  int64_t got = 0;
  GT_REQUIRE_OK(g.copy_to_host(total, 0, &got, sizeof got, session));
  CHECK(got == n);
  const unsigned char zero = 0;
  GT_REQUIRE_OK(g.copy_from_host(ones, static_cast<size_t>(n - 1), &zero, 1, session));
  Tensor less = run(OpId::k_sum, make_reduce(kAllDims, false), {&ones});
  GT_REQUIRE_OK(g.copy_to_host(less, 0, &got, sizeof got, session));
  CHECK(got == n - 1);
  // argmax finds the one true element placed past 2^32.
  Tensor zeros = run(OpId::k_zeros, make_shape_dtype(Shape{n}, DType::kBool), {});
  const unsigned char one = 1;
  GT_REQUIRE_OK(g.copy_from_host(zeros, static_cast<size_t>(n - 2), &one, 1, session));
  Tensor where = run(OpId::k_argmax, make_reduce(kAllDims, false), {&zeros});
  GT_REQUIRE_OK(g.copy_to_host(where, 0, &got, sizeof got, session));
  CHECK(got == n - 2);
  g.end_session(session);
}

}  // namespace
}  // namespace gt::gpu_test
