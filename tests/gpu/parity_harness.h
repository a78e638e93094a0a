// The GPU parity harness: one CpuBackend (the reference semantics) and one CudaBackend in the
// same process, driven through the Backend interface with identical KernelArgs. Inputs are
// uploaded to the GPU through the from_host op (so it is tested too); outputs are pre-filled
// with 0xFF bytes (NaN for every float dtype, -1 for integers, an invalid 0xFF bool) so an
// element a kernel forgot to write cannot pass.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "libgtcore/op_attrs.h"
#include "gt/core/ops.h"
#include "libgtcore/shape.h"
#include "workerd/cpu/cpu_backend.h"
#include "workerd/cuda/cuda_backend.h"

namespace gt::gpu_test {

using worker::Backend;
using worker::CpuBackend;
using worker::CudaBackend;
using worker::CudaBackendOptions;
using worker::KernelArgs;
using worker::Storage;
using worker::Tensor;
using worker::BackendStats;
using worker::cuda_device_count;

struct Backends {
  CpuBackend cpu;
  std::unique_ptr<CudaBackend> gpu;
};
// The shared backends, or nullptr when no GPU is visible (the caller SKIPs).
Backends* backends();
// Catch2 v2 has no SKIP: without a GPU the case warns and passes, unless
// GT_GPU_TESTS_REQUIRE_DEVICE is set (scripts/device-check.sh sets it, so a machine whose GPU
// is not visible fails instead of passing vacuously).
bool require_device();
#define GT_REQUIRE_GPU()                                                  \
  auto* be = ::gt::gpu_test::backends();                                  \
  if (be == nullptr) {                                                    \
    if (::gt::gpu_test::require_device()) FAIL("no CUDA device visible"); \
    WARN("no CUDA device visible: skipped");                              \
    return;                                                               \
  }

// One logical tensor, held by both backends.
struct Pair {
  Tensor c, g;
  const TensorMeta& meta() const { return c.meta; }
};

std::vector<double> random_values(int64_t n, DType dt, std::mt19937& rng, double lo = -2.0,
                                  double hi = 2.0);
Pair upload(const Shape& s, DType dt, const std::vector<double>& vals, uint64_t session = 1);
Pair random_pair(const Shape& s, DType dt, std::mt19937& rng, double lo = -2.0, double hi = 2.0,
                 uint64_t session = 1);

struct RunResult {
  bool rule_ok = false;  // infer_meta accepted the inputs (else nothing ran)
  Status cpu, gpu;
  Pair out;
};
// Runs `op` on both backends (outputs allocated from the shape rule and pre-filled).
RunResult run_both(OpId op, const OpAttrs& attrs, const std::vector<const Pair*>& ins,
                   uint64_t session = 1);

// Every element of t, decoded to double (bool as its raw byte, so 0xFF stays visible).
std::vector<double> fetch_cpu(const Tensor& t);
std::vector<double> fetch_gpu(const Tensor& t, uint64_t session = 1);

struct Tol {
  double rtol = 0, atol = 0;
};
Tol default_tol(DType dt);  // float32 1e-5, float16 1e-3, bfloat16 1e-2 (relative); exact else
// Compares the two halves of `out` (NaN matches NaN); reports the first mismatches with `what`.
void expect_close(const Pair& out, Tol tol, const std::string& what, uint64_t session = 1);
// run_both + status parity + expect_close; returns the result for further checks.
RunResult check_op(OpId op, const OpAttrs& attrs, const std::vector<const Pair*>& ins,
                   const std::string& what, Tol tol = {-1, -1}, uint64_t session = 1);

std::string describe(const Shape& s, DType dt);
inline const std::vector<int64_t>& sizes() {
  static const std::vector<int64_t> s{0, 1, 7, 1023, 4097};
  return s;
}
inline const std::vector<DType>& dtypes() {
  static const std::vector<DType> d{DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                                    DType::kInt64, DType::kBool};
  return d;
}

}  // namespace gt::gpu_test
