// The fused-chain signatures the generated-program tests use: every fusable op in every form a
// step takes (unary; scalar on either side; a tensor operand in each broadcast mode, on either
// side), and the chain. test_nvrtc_programs compiles them with NVRTC; gen_fused_host
// writes them as host code, which test_fused_host runs against the eager CPU kernels.
#pragma once

#include <utility>
#include <vector>

#include "workerd/device/fused_kernel_source.h"
#include "workerd/kernels/op_traits.h"

namespace gt::worker::device::fused_test {

inline std::vector<FusedKernelSignature> cases() {
  std::vector<FusedKernelSignature> out;
  for (int i = 0; i < kNumOps; ++i) {
    const OpId op = static_cast<OpId>(i);
    if (!fusable_op(op)) continue;
    if (is_unary_elementwise(op)) {
      // After a multiply and an add a compiler could contract, were steps not kept apart.
      out.push_back({{{OpId::k_mul, FusedArg::kScalar}, {OpId::k_add, FusedArg::kScalar}, {op}}});
      continue;
    }
    FusedKernelSignature s;
    for (bool right : {false, true}) {
      s.steps.push_back({op, FusedArg::kScalar, right});
      for (OperandMode m : {OperandMode::kOne, OperandMode::kSame, OperandMode::kRepeat,
                            OperandMode::kGather})
        s.steps.push_back({op, FusedArg::kTensor, right, m});
      s.steps.push_back({OpId::k_tanh});  // keeps the values in range for the next steps
    }
    out.push_back(s);
  }
  // The chain: ((x * a + b).relu() * c).exp(), b a bias.
  const FusedKernelSignature chain{{{OpId::k_mul, FusedArg::kScalar},
                                    {OpId::k_add, FusedArg::kTensor, false, OperandMode::kRepeat},
                                    {OpId::k_relu},
                                    {OpId::k_mul, FusedArg::kScalar},
                                    {OpId::k_exp}}};
  out.push_back(chain);
  // Mixed precision: 16-bit heads read and 16-bit results written by the program (casts fused),
  // and a chain of casts alone (float16 -> float32 -> bfloat16).
  for (auto [from, to] : {std::pair{DType::kFloat16, DType::kFloat32},
                          std::pair{DType::kFloat32, DType::kBFloat16},
                          std::pair{DType::kBFloat16, DType::kFloat16},
                          std::pair{DType::kFloat16, DType::kFloat16}}) {
    FusedKernelSignature s = chain;
    s.head = from;
    s.out = to;
    out.push_back(s);
  }
  FusedKernelSignature casts_only;
  casts_only.head = DType::kFloat16;
  casts_only.out = DType::kBFloat16;
  out.push_back(casts_only);
  return out;
}

}  // namespace gt::worker::device::fused_test
