// matmul on CUDA with the CPU worker's semantics (workerd/cpu/matmul.cpp): 1-D operands as a
// row on the left / a column on the right, broadcast batch dims, operands converted to the
// output dtype first, k == 0 gives zeros.
//
// Floating dtypes run on cuBLAS (row-major C = A B is column-major C^T = B^T A^T, so the
// operands are passed swapped): float32 with CUBLAS_COMPUTE_32F unless the session's precision
// (the instruction's attribute) or the worker's allow_tf32 allows TF32 / bfloat16,
// float16/bfloat16 with float32 accumulation. The batch becomes, best first: one
// GEMM with the batch folded into M (b shared, a dense), one strided-batched GEMM (each operand
// dense or broadcast), or one pointer-array batched GEMM (irregular broadcast). int32/int64 use a wrapping integer kernel.
#include <algorithm>
#include <climits>
#include <vector>

#include "workerd/cuda/cuda_ops.h"
#include "workerd/kernels/matmul_plan.h"

namespace gt::worker::cuda {
namespace {

// The common stride of offsets (off[i] == i * stride for all i), or -1.
int64_t uniform_stride(const std::vector<int64_t>& off) {
  if (off.size() < 2) return 0;
  const int64_t s = off[1] - off[0];
  for (size_t i = 0; i < off.size(); ++i)
    if (off[i] != static_cast<int64_t>(i) * s) return -1;
  return s;
}

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

// float32's compute type: the session's precision (the instruction's attribute, as
// torch.set_float32_matmul_precision), or TF32 for every session when the worker allows it.
cublasComputeType_t float32_compute(MatmulPrecision precision, bool worker_allows_tf32) {
  if (precision == MatmulPrecision::kMedium) return CUBLAS_COMPUTE_32F_FAST_16BF;
  if (precision == MatmulPrecision::kHigh || worker_allows_tf32) return CUBLAS_COMPUTE_32F_FAST_TF32;
  return CUBLAS_COMPUTE_32F;
}

Status gemm_float(const MatmulPlan& p, DType dt, MatmulPrecision precision, const void* a,
                  const void* b, void* c, const OpContext& ctx) {
  const bool f64 = dt == DType::kFloat64;
  const cudaDataType_t ty = dt == DType::kFloat32   ? CUDA_R_32F
                            : f64                   ? CUDA_R_64F
                            : dt == DType::kFloat16 ? CUDA_R_16F
                                                    : CUDA_R_16BF;
  const cublasComputeType_t compute = f64 ? CUBLAS_COMPUTE_64F
                                      : dt == DType::kFloat32 ? float32_compute(precision, ctx.allow_tf32)
                                                              : CUBLAS_COMPUTE_32F;
  // alpha and beta are of the compute type's scalar: double for 64F, float otherwise.
  const float alpha_f = 1.0f, beta_f = 0.0f;
  const double alpha_d = 1.0, beta_d = 0.0;
  const void* alpha = f64 ? static_cast<const void*>(&alpha_d) : static_cast<const void*>(&alpha_f);
  const void* beta = f64 ? static_cast<const void*>(&beta_d) : static_cast<const void*>(&beta_f);
  const size_t es = dtype_size(dt);
  const int64_t batches = static_cast<int64_t>(p.a_off.size());
  auto byte_at = [&](const void* base, int64_t elems) {
    return static_cast<const unsigned char*>(base) + static_cast<size_t>(elems) * es;
  };
  // Column-major GEMMs: C^T[n, rows] = B^T[n, k] * A^T[k, rows], in blocks of at most 2^30 rows
  // (cuBLAS takes int dimensions; rows of A and C are contiguous, so a block is an offset).
  auto gemm = [&](const void* pa, const void* pb, void* pc, int64_t rows) -> Status {
    if (!fits_int(p.n) || !fits_int(p.k))
      return unimplemented("matmul: dims too large for cuBLAS ({}x{}x{})", rows, p.k, p.n);
    constexpr int64_t kBlock = int64_t{1} << 30;
    for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
      const int64_t r = std::min(kBlock, rows - r0);
      GT_CUBLAS_CHECK(cublasGemmEx(ctx.blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(p.n),
                                   static_cast<int>(r), static_cast<int>(p.k), alpha, pb, ty,
                                   static_cast<int>(p.n), byte_at(pa, r0 * p.k), ty,
                                   static_cast<int>(p.k), beta,
                                   const_cast<unsigned char*>(byte_at(pc, r0 * p.n)), ty,
                                   static_cast<int>(p.n), compute, CUBLAS_GEMM_DEFAULT));
    }
    return Status::ok();
  };
  const int64_t sa = uniform_stride(p.a_off), sb = uniform_stride(p.b_off);
  if (batches == 1) return gemm(a, b, c, p.m);
  if (p.folds_into_m) return gemm(a, b, c, batches * p.m);
  if (sa >= 0 && sb >= 0 && fits_int(batches) && fits_int(p.m) && fits_int(p.n) && fits_int(p.k)) {
    GT_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        ctx.blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(p.n), static_cast<int>(p.m),
        static_cast<int>(p.k), alpha, b, ty, static_cast<int>(p.n), sb, a, ty,
        static_cast<int>(p.k), sa, beta, c, ty, static_cast<int>(p.n), p.m * p.n,
        static_cast<int>(batches), compute, CUBLAS_GEMM_DEFAULT));
    return Status::ok();
  }
  // (Not while a graph is captured: the pointer arrays' pageable copy could not be recorded.)
  if (!ctx.capturing && fits_int(batches) && fits_int(p.m) && fits_int(p.n) && fits_int(p.k)) {
    // Irregular broadcast (e.g. [2,1,3] x [1,4,3] batch dims): one batched GEMM over pointer
    // arrays. They go up by cudaMemcpyAsync from pageable memory, which stages the bytes before
    // returning, so the host vector may die with this scope.
    std::vector<void*> ptrs(static_cast<size_t>(3 * batches));
    for (int64_t i = 0; i < batches; ++i) {
      ptrs[static_cast<size_t>(i)] = const_cast<unsigned char*>(byte_at(b, p.b_off[i]));
      ptrs[static_cast<size_t>(batches + i)] = const_cast<unsigned char*>(byte_at(a, p.a_off[i]));
      ptrs[static_cast<size_t>(2 * batches + i)] =
          const_cast<unsigned char*>(byte_at(c, i * p.m * p.n));
    }
    GT_ASSIGN_OR_RETURN(DeviceTemp dptrs, ctx.temp(ptrs.size() * sizeof(void*)));
    GT_CUDA_CHECK(cudaMemcpyAsync(dptrs.get(), ptrs.data(), ptrs.size() * sizeof(void*),
                                  cudaMemcpyHostToDevice, ctx.stream));
    auto* const* dev = static_cast<void* const*>(dptrs.get());
    GT_CUBLAS_CHECK(cublasGemmBatchedEx(
        ctx.blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(p.n), static_cast<int>(p.m),
        static_cast<int>(p.k), alpha, dev, ty, static_cast<int>(p.n), dev + batches, ty,
        static_cast<int>(p.k), beta, dev + 2 * batches, ty,
        static_cast<int>(p.n), static_cast<int>(batches), compute, CUBLAS_GEMM_DEFAULT));
    return Status::ok();
  }
  for (int64_t i = 0; i < batches; ++i)  // dimensions beyond cuBLAS's int: block by block
    GT_RETURN_IF_ERROR(gemm(byte_at(a, p.a_off[i]), byte_at(b, p.b_off[i]),
                            const_cast<unsigned char*>(byte_at(c, i * p.m * p.n)), p.m));
  return Status::ok();
}

Status matmul_kernel(const KernelArgs& args, OpContext& ctx) {
  const Tensor& ta = in(args, 0);
  const Tensor& tb = in(args, 1);
  Tensor& out = args.out;
  const DType dt = out.meta.dtype;
  if (count(out.meta.shape) == 0) return Status::ok();
  const MatmulPlan p = plan_matmul(ta.meta.shape, tb.meta.shape);
  if (p.k == 0) {
    GT_CUDA_CHECK(cudaMemsetAsync(out.storage->data(), 0, static_cast<size_t>(out.meta.nbytes()),
                                  ctx.stream));
    return Status::ok();
  }
  DeviceTemp ca, cb;
  GT_ASSIGN_OR_RETURN(const void* va, ctx.as_dtype(ta, dt, ca));
  GT_ASSIGN_OR_RETURN(const void* vb, ctx.as_dtype(tb, dt, cb));
  if (is_floating(dt))
    return gemm_float(p, dt, args.attrs.matmul_precision(), va, vb, out.storage->data(), ctx);
  if (dt != DType::kInt32 && dt != DType::kInt64)  // int8 / uint8 matmul: CPU workers only
    return unimplemented("matmul: dtype {} ({} x {})", dtype_name(dt), dtype_name(ta.meta.dtype),
                         dtype_name(tb.meta.dtype));
  const size_t es = dtype_size(dt);
  for (size_t i = 0; i < p.a_off.size(); ++i) {
    GT_LAUNCH(launch_matmul_int(
        code(dt), static_cast<const unsigned char*>(va) + static_cast<size_t>(p.a_off[i]) * es,
        static_cast<const unsigned char*>(vb) + static_cast<size_t>(p.b_off[i]) * es,
        static_cast<unsigned char*>(out.storage->data()) + i * static_cast<size_t>(p.m * p.n) * es,
        p.m, p.k, p.n, ctx.stream));
  }
  return Status::ok();
}

}  // namespace

void register_matmul(KernelTable& t) { t[static_cast<size_t>(OpId::k_matmul)] = matmul_kernel; }

}  // namespace gt::worker::cuda
