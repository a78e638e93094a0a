// Fused chains on the GPU (workerd/cuda/fused_launch.cpp): each chain's generated kernel, compiled
// by NVRTC and launched, gives bitwise the results of the same steps run as the eager CUDA
// kernels, for every fusable op in every form a step takes (scalar either side, a tensor operand
// of the chain's shape, a bias, a column, one element, either side). Run by device-check.sh.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "parity_harness.h"
#include "require_ok.h"
#include "workerd/fusion.h"

using namespace gt;
using namespace gt::gpu_test;
using worker::FusedArg;
using worker::FusedArgs;
using worker::FusedStep;

namespace {

struct Step {
  OpId op;
  FusedArg arg = FusedArg::kNone;
  bool value_right = false;
  float scalar = 0;
  const Pair* operand = nullptr;
};

bool same_bits(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;  // (-0.0 and 0.0 differ)
}

// The chain eagerly on the GPU (one kernel per step) and fused; compared bit for bit. A head of
// another dtype is cast to float32 first and the value cast to `out_dtype` last (eagerly: the
// cast kernels; fused: the generated program's conversions).
void check_chain(const Pair& head, const std::vector<Step>& chain, const std::string& what,
                 DType out_dtype = DType::kFloat32) {
  CudaBackend& g = *backends()->gpu;
  // Eager: each step's result feeds the next.
  std::vector<RunResult> results;
  results.reserve(chain.size() + 2);
  const Pair* v = &head;
  if (head.meta().dtype != DType::kFloat32) {
    results.push_back(run_both(OpId::k_cast, make_cast(DType::kFloat32), {v}));
    GT_REQUIRE_OK(results.back().gpu);
    v = &results.back().out;
  }
  for (const Step& s : chain) {
    OpAttrs attrs;
    std::vector<const Pair*> ins{v};
    if (s.arg == FusedArg::kScalar)
      attrs = make_binary_scalar(s.value_right ? ScalarSide::kLeft : ScalarSide::kRight, s.scalar, false);
    else if (s.arg == FusedArg::kTensor)
      ins = s.value_right ? std::vector<const Pair*>{s.operand, v} : std::vector<const Pair*>{v, s.operand};
    results.push_back(run_both(s.op, attrs, ins));
    REQUIRE(results.back().rule_ok);
    GT_REQUIRE_OK(results.back().gpu);
    v = &results.back().out;
  }
  if (out_dtype != DType::kFloat32) {
    results.push_back(run_both(OpId::k_cast, make_cast(out_dtype), {v}));
    GT_REQUIRE_OK(results.back().gpu);
    v = &results.back().out;
  }
  // Fused: the kernel is compiled off this thread; until it is ready run_fused declines.
  std::vector<FusedStep> steps;
  for (const Step& s : chain)
    steps.push_back(FusedStep{s.op, s.arg, s.value_right, s.scalar, s.operand ? &s.operand->g : nullptr});
  const TensorMeta out_meta{head.meta().shape, out_dtype};
  auto storage = g.alloc(static_cast<size_t>(out_meta.nbytes()));
  GT_REQUIRE_OK(storage);
  worker::Tensor out{out_meta, *storage, nullptr};
  FusedArgs args{head.g, steps, out, 1};
  Status st = g.run_fused(args);
  if (!st.is_ok()) {
    REQUIRE(g.fused_kernels() != nullptr);
    g.fused_kernels()->wait_idle();
    st = g.run_fused(args);
  }
  INFO(what << ": " << st.message());
  REQUIRE(st.is_ok());
  const std::vector<double> eager = fetch_gpu(v->g), fused = fetch_gpu(out);
  REQUIRE(eager.size() == fused.size());
  int bad = 0;
  for (size_t i = 0; i < eager.size() && bad < 5; ++i)
    if (!same_bits(eager[i], fused[i])) {
      ++bad;
      UNSCOPED_INFO(what << " element " << i << ": eager " << eager[i] << ", fused " << fused[i]);
    }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("cuda: fused chains are bitwise the eager kernels, every fusable op in every form",
          "[.gpu]") {
  GT_REQUIRE_GPU();
  REQUIRE(be->gpu->fuses_chains());
  std::mt19937 rng(17);
  const Shape s{37, 129};  // a multiple of no block size
  const Pair x = random_pair(s, DType::kFloat32, rng, -3, 3);
  const Pair pos = random_pair(s, DType::kFloat32, rng, 0.05, 3);
  const Pair same = random_pair(s, DType::kFloat32, rng, 0.5, 2);
  const Pair bias = random_pair(Shape{129}, DType::kFloat32, rng, 0.5, 2);
  const Pair col = random_pair(Shape{37, 1}, DType::kFloat32, rng, 0.5, 2);
  const Pair one = random_pair(Shape{1}, DType::kFloat32, rng, 0.5, 2);
  // The chain: ((x * a + b).relu() * c).exp(), b a bias.
  check_chain(x,
              {{OpId::k_mul, FusedArg::kScalar, false, 1.7f},
               {OpId::k_add, FusedArg::kTensor, false, 0, &bias},
               {OpId::k_relu},
               {OpId::k_mul, FusedArg::kScalar, false, 0.3f},
               {OpId::k_exp}},
              "((x * a + b).relu() * c).exp()");
  int unary = 0;
  for (int i = 0; i < kNumOps; ++i) {
    const OpId op = static_cast<OpId>(i);
    if (!worker::fusable_op(op)) continue;
    if (worker::is_unary_elementwise(op)) {
      // After a multiply and an add that an FMA would contract, were steps not kept apart.
      check_chain(pos,
                  {{OpId::k_mul, FusedArg::kScalar, false, 1.1f},
                   {OpId::k_add, FusedArg::kScalar, false, 0.1f},
                   {op}},
                  op_name(op));
      ++unary;
      continue;
    }
    std::vector<Step> chain;
    for (bool right : {false, true}) {
      chain.push_back({op, FusedArg::kScalar, right, 1.25f});
      for (const Pair* t : {&same, &bias, &col, &one}) chain.push_back({op, FusedArg::kTensor, right, 0, t});
      chain.push_back({OpId::k_tanh});  // keeps the values in range for the next steps
    }
    check_chain(x, chain, op_name(op));
  }
  CHECK(unary >= 10);
  const auto st = be->gpu->fused_kernels()->stats();
  CHECK(st.failed == 0);
  CHECK(st.ready == st.compiled + st.disk_hits);
}

TEST_CASE("cuda: fused chains with 16-bit heads and results are bitwise the eager casts and "
          "kernels", "[.gpu]") {
  GT_REQUIRE_GPU();
  REQUIRE(be->gpu->fuses_chains());
  REQUIRE(be->gpu->fuses_cast_dtype(DType::kFloat16));
  REQUIRE_FALSE(be->gpu->fuses_cast_dtype(DType::kInt32));
  std::mt19937 rng(23);
  const Shape s{37, 129};
  const Pair h16 = random_pair(s, DType::kFloat16, rng, -3, 3);
  const Pair hb16 = random_pair(s, DType::kBFloat16, rng, -3, 3);
  const Pair x = random_pair(s, DType::kFloat32, rng, -3, 3);
  const Pair bias = random_pair(Shape{129}, DType::kFloat32, rng, 0.5, 2);
  const std::vector<Step> chain = {{OpId::k_mul, FusedArg::kScalar, false, 1.7f},
                                   {OpId::k_add, FusedArg::kTensor, false, 0, &bias},
                                   {OpId::k_relu},
                                   {OpId::k_mul, FusedArg::kScalar, false, 0.3f},
                                   {OpId::k_exp}};
  check_chain(h16, chain, "float16 head");
  check_chain(x, chain, "bfloat16 result", DType::kBFloat16);
  check_chain(hb16, chain, "bfloat16 head, float16 result", DType::kFloat16);
  check_chain(h16, {}, "float16 to bfloat16, casts alone", DType::kBFloat16);
  CHECK(be->gpu->fused_kernels()->stats().failed == 0);
}
