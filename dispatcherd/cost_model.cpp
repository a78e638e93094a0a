#include "dispatcherd/cost_model.h"

#include <string>

namespace gt::dispatcher {

namespace {
constexpr double kFixedNs = 300;          // decode, checks, dispatch of any instruction
constexpr double kBytesPerNs = 8;         // memory traffic
constexpr double kGemmFlopsPerNs = 20;    // matmul
}  // namespace

uint64_t estimate_cost_ns(OpId op, const TensorMeta& out, std::span<const TensorMeta> inputs,
                          double speedup) {
  double bytes = static_cast<double>(out.nbytes());
  for (const auto& m : inputs) bytes += static_cast<double>(m.nbytes());
  // A strided view's ops move only the view's elements (read once, written once), however
  // large the tensor it views: a one-element view of a GiB tensor is not a GiB of work.
  const ShapeRule rule = op_rule(op);
  if (rule == ShapeRule::kAsStrided) bytes = 2.0 * static_cast<double>(out.nbytes());
  if (rule == ShapeRule::kStridedInto && inputs.size() == 2)
    bytes = 2.0 * static_cast<double>(inputs[1].nbytes());
  double ns = kFixedNs + bytes / kBytesPerNs;
  if (op == OpId::k_matmul && inputs.size() == 2 && inputs[0].shape.rank() >= 1) {
    // out holds [..., M, N]; the contraction length is the last dim of the first input.
    const auto& a = inputs[0].shape;
    double k = static_cast<double>(a.dims()[static_cast<size_t>(a.rank() - 1)]);
    double flops = 2.0 * static_cast<double>(out.shape.numel()) * k;
    ns += flops / kGemmFlopsPerNs;
  }
  return static_cast<uint64_t>(ns / (speedup > 0 ? speedup : 1.0));
}

double device_speedup(const std::string& device_kind) {
  // A GPU runs the same work tens to hundreds of times faster; without this the bound would
  // keep a GPU's queue nearly empty and its streams idle between acks.
  return device_kind == "cuda" ? 100.0 : 1.0;
}

}  // namespace gt::dispatcher
