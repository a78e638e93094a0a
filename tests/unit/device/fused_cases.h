// The fused-chain signatures the generated-program tests use: every fusable op in every form a
// step takes (unary; scalar on either side; a tensor operand in each broadcast mode, on either
// side), and the chain. test_nvrtc_programs compiles them with NVRTC; gen_fused_host
// writes them as host code, which test_fused_host runs against the eager CPU kernels.
#pragma once

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
  out.push_back({{{OpId::k_mul, FusedArg::kScalar},
                  {OpId::k_add, FusedArg::kTensor, false, OperandMode::kRepeat},
                  {OpId::k_relu},
                  {OpId::k_mul, FusedArg::kScalar},
                  {OpId::k_exp}}});
  return out;
}

}  // namespace gt::worker::device::fused_test
