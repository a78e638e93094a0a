// Helpers for the CPU backend tests: tensors from/to host doubles, running one op the way the
// executor does (infer_meta -> alloc -> run), naive multi-index helpers for the reference
// implementations, per-dtype tolerances, and the registry of ops that have test cases.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "libgtcore/op_attrs.h"
#include "gt/core/ops.h"
#include "libgtcore/shape_rules.h"
#include "workerd/cpu/cpu_backend.h"

namespace gt::test {

using worker::CpuBackend;
using worker::Tensor;

// ---- op coverage: every test file claims the ops it tests; coverage_test checks the union ----
std::set<std::string>& claimed_ops();
struct ClaimOps {
  ClaimOps(std::initializer_list<const char*> ops);
  explicit ClaimOps(const std::vector<OpId>& ops);  // a family taken from the op table
};
#define GT_CLAIM_OPS_CAT2(a, b) a##b
#define GT_CLAIM_OPS_CAT(a, b) GT_CLAIM_OPS_CAT2(a, b)
#define GT_TESTS_OPS(...) \
  static const ::gt::test::ClaimOps GT_CLAIM_OPS_CAT(gt_claim_ops_, __LINE__){__VA_ARGS__}

inline const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> v = {DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                                       DType::kInt32,   DType::kInt64,   DType::kBool};
  return v;
}

// ---- host <-> tensor ----
// The value a double becomes when stored in `dt` (independent of the backend's conversions
// except for the 16-bit float storage types themselves).
double quantize(double v, DType dt);
Tensor make_tensor(CpuBackend& be, const Shape& s, DType dt, const std::vector<double>& vals);
std::vector<double> to_doubles(CpuBackend& be, const Tensor& t);  // via copy_to_host

// Random test values: floats in [lo, hi) (quantized to dt), integers in [lo, hi], bools 0/1.
std::vector<double> random_values(std::mt19937& rng, int64_t n, DType dt, double lo = -3,
                                  double hi = 3);

// ---- running ops ----
Result<Tensor> try_run(CpuBackend& be, OpId op, const std::vector<const Tensor*>& ins,
                       const OpAttrs& attrs);
Tensor run_op(CpuBackend& be, OpId op, const std::vector<const Tensor*>& ins,
              const OpAttrs& attrs = {});
// In-place ops (host_chunk, copy_): `dst` is written; ins[0] must be &dst.
void run_in_place(CpuBackend& be, OpId op, Tensor& dst, const std::vector<const Tensor*>& ins,
                  const OpAttrs& attrs);

// ---- multi-index helpers ----
std::vector<int64_t> unravel(int64_t flat, const Shape& s);
int64_t ravel(const std::vector<int64_t>& idx, const Shape& s);
// Index into `in` of the element that broadcasts to `out_idx` (right-aligned numpy rules).
int64_t broadcast_source(const std::vector<int64_t>& out_idx, const Shape& in);

// ---- comparison ----
struct Tol {
  double rtol, atol;
};
Tol tol_for(DType dt);
bool close(double got, double want, Tol t);  // NaN == NaN, inf == inf of the same sign
// Compares element by element; reports the first mismatches with context.
void check_close(const std::vector<double>& got, const std::vector<double>& want, DType dt,
                 const std::string& what);
void check_close(const std::vector<double>& got, const std::vector<double>& want, Tol tol,
                 const std::string& what);

std::string str(const Shape& s);

}  // namespace gt::test
