// matmul with PyTorch semantics: 1-D operands (a vector is a [1, k] row on the left, a [k, 1]
// column on the right, the extra dim dropped from the result) and broadcast batch dims.
// Operands are first converted to the output dtype (promote(a, b)). float32 runs on OpenBLAS
// sgemm (one call for the whole batch when b is shared by every batch entry and a is not
// broadcast, else one per batch entry); float16/bfloat16 go through float32 buffers and round
// back; int32/int64 use an i-k-j triple loop with wrapping arithmetic. k == 0 gives zeros.
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <type_traits>
#include <vector>

#include "workerd/cpu/compute_pool.h"
#include "workerd/cpu/kernels.h"
#include "workerd/kernels/matmul_plan.h"

namespace gt::worker::cpu {
namespace {

bool fits_blas(int64_t v) { return v <= INT_MAX; }

CBLAS_TRANSPOSE blas_op(bool t) { return t ? CblasTrans : CblasNoTrans; }

void blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, blas_op(ta), blas_op(tb), static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b, static_cast<int>(ldb), 0.0f,
              c, static_cast<int>(ldc));
}

void blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
               const double* b, int64_t ldb, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, blas_op(ta), blas_op(tb), static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0, a, static_cast<int>(lda), b, static_cast<int>(ldb), 0.0, c,
              static_cast<int>(ldc));
}

// Below this many multiply-adds a GEMM runs on one thread (OpenBLAS's own threshold: 4 x 65536).
constexpr int64_t kSplitMnk = int64_t{1} << 18;
// Split points fall on multiples of this many columns or rows: parts splitting C's columns then
// write no 64-byte line in common.
constexpr int64_t kSplitAlign = 16;
// Rows of C a part must keep for a split by rows when C has more columns than rows.
constexpr int64_t kSplitRows = 128;

// Row-major C[m, n] = op(A) op(B) (op: transposed when ta / tb; A is [m, k] or, transposed,
// [k, m], with leading dimension lda; B likewise [k, n] or [n, k]). With OpenBLAS at one thread
// per call (cpu_backend.cpp, the default) a large one is split over the compute pool
// (compute_pool.h): by C's rows (each part a contiguous block of C) when it has as many rows as
// columns or each part keeps kSplitRows of them, else by its columns (OpenBLAS's kernels lose
// more on few rows: on the MLP's [64, 784] x [784, 256] rows took ~12% longer than columns, on
// its [256, 64] x [64, 784] columns ~5% longer than rows). One BLAS call per part. Which split a
// shape gets depends only on the shape and the pool's size: a result is the same from run to run.
template <class F>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const F* a, int64_t lda, const F* b,
          int64_t ldb, F* c, int64_t ldc) {
  ComputePool& pool = ComputePool::instance();
  const bool by_cols = m < n && m / pool.threads() < kSplitRows;
  const int64_t dim = by_cols ? n : m;
  int64_t parts = 1;
  if (pool.threads() > 1 && m * n * k >= kSplitMnk && openblas_get_num_threads() == 1)
    parts = std::min<int64_t>(pool.threads(), dim / kSplitAlign);
  if (parts <= 1) {
    blas_gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
    return;
  }
  const int64_t chunk = ((dim + parts - 1) / parts + kSplitAlign - 1) / kSplitAlign * kSplitAlign;
  pool.run(static_cast<int>(parts), [&](int part) {
    const int64_t lo = part * chunk, hi = std::min(dim, lo + chunk);
    if (lo >= hi) return;
    if (by_cols)
      blas_gemm(ta, tb, m, hi - lo, k, a, lda, tb ? b + lo * ldb : b + lo, ldb, c + lo, ldc);
    else
      blas_gemm(ta, tb, hi - lo, n, k, ta ? a + lo : a + lo * lda, lda, b, ldb, c + lo * ldc, ldc);
  });
}

// A plain row-major GEMM of contiguous operands: C[m, n] = A[m, k] B[k, n].
template <class F>
void gemm(const F* a, const F* b, F* c, int64_t m, int64_t n, int64_t k) {
  gemm(false, false, m, n, k, a, std::max<int64_t>(k, 1), b, std::max<int64_t>(n, 1), c,
       std::max<int64_t>(n, 1));
}

// float32 (sgemm) or float64 (dgemm).
template <class F>
Status matmul_blas(const MatmulPlan& p, const F* a, const F* b, F* c) {
  const int64_t batches = static_cast<int64_t>(p.a_off.size());
  if (p.folds_into_m) {
    if (!fits_blas(batches * p.m) || !fits_blas(p.n) || !fits_blas(p.k))
      return unimplemented("matmul: dims too large for BLAS ({}x{}x{})", batches * p.m, p.k, p.n);
    gemm(a, b, c, batches * p.m, p.n, p.k);
    return Status::ok();
  }
  if (!fits_blas(p.m) || !fits_blas(p.n) || !fits_blas(p.k))
    return unimplemented("matmul: dims too large for BLAS ({}x{}x{})", p.m, p.k, p.n);
  for (int64_t i = 0; i < batches; ++i)
    gemm(a + p.a_off[i], b + p.b_off[i], c + i * p.m * p.n, p.m, p.n, p.k);
  return Status::ok();
}

template <class T>
void matmul_int(const MatmulPlan& p, const T* a, const T* b, T* c) {
  using U = std::make_unsigned_t<T>;
  const int64_t batches = static_cast<int64_t>(p.a_off.size());
  for (int64_t bi = 0; bi < batches; ++bi) {
    const T* A = a + p.a_off[bi];
    const T* B = b + p.b_off[bi];
    U* C = reinterpret_cast<U*>(c + bi * p.m * p.n);
    for (int64_t i = 0; i < p.m; ++i) {
      U* crow = C + i * p.n;
      std::fill(crow, crow + p.n, U(0));
      for (int64_t kk = 0; kk < p.k; ++kk) {
        const U aik = static_cast<U>(A[i * p.k + kk]);
        const T* brow = B + kk * p.n;
        for (int64_t j = 0; j < p.n; ++j)
          crow[j] = static_cast<U>(crow[j] + aik * static_cast<U>(brow[j]));
      }
    }
  }
}

Status matmul_kernel(const KernelArgs& args) {
  const Tensor& ta = in(args, 0);
  const Tensor& tb = in(args, 1);
  Tensor& out = args.out;
  const DType dt = out.meta.dtype;
  const int64_t total = count(out.meta.shape);
  if (total == 0) return Status::ok();
  const MatmulPlan p = plan_matmul(ta.meta.shape, tb.meta.shape);
  if (p.k == 0) {
    std::memset(out.storage->data(), 0, static_cast<size_t>(out.meta.nbytes()));
    return Status::ok();
  }
  TempBuffer ca, cb;
  const void* va = as_dtype(ta, dt, ca);
  const void* vb = as_dtype(tb, dt, cb);
  switch (dt) {
    case DType::kFloat32:
      return matmul_blas(p, static_cast<const float*>(va), static_cast<const float*>(vb),
                         static_cast<float*>(out.storage->data()));
    case DType::kFloat64:
      return matmul_blas(p, static_cast<const double*>(va), static_cast<const double*>(vb),
                         static_cast<double*>(out.storage->data()));
    case DType::kFloat16:
    case DType::kBFloat16: {
      const int64_t na = count(ta.meta.shape), nb = count(tb.meta.shape);
      std::vector<float> fa(static_cast<size_t>(na)), fb(static_cast<size_t>(nb)),
          fc(static_cast<size_t>(total));
      convert_n(va, dt, fa.data(), DType::kFloat32, na);
      convert_n(vb, dt, fb.data(), DType::kFloat32, nb);
      GT_RETURN_IF_ERROR(matmul_blas(p, fa.data(), fb.data(), fc.data()));
      convert_n(fc.data(), DType::kFloat32, out.storage->data(), dt, total);
      return Status::ok();
    }
    case DType::kInt32:
    case DType::kInt64:
    case DType::kInt8:
    case DType::kUInt8:
      return dispatch_dtype(dt, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
          matmul_int(p, static_cast<const T*>(va), static_cast<const T*>(vb),
                     static_cast<T*>(out.storage->data()));
        return Status::ok();
      });
    case DType::kBool: break;
  }
  return unimplemented("matmul: dtype {} ({} x {})", dtype_name(dt), dtype_name(ta.meta.dtype),
                       dtype_name(tb.meta.dtype));
}

}  // namespace

Status run_transposed_matmul(const TransposedMatmul& args) {
  const Shape &a = args.a.meta.shape, &b = args.b.meta.shape;
  const int64_t m = args.ta ? a[1] : a[0], k = args.ta ? a[0] : a[1], n = args.tb ? b[0] : b[1];
  float* c = args.out.data<float>();
  if (m == 0 || n == 0) return Status::ok();
  if (k == 0) {  // a sum of nothing (BLAS would not write C)
    std::fill(c, c + m * n, 0.0f);
    return Status::ok();
  }
  for (int64_t v : {m, n, k, a[0], a[1], b[0], b[1]})
    if (!fits_blas(v)) return unimplemented("matmul: dims too large for BLAS ({}x{}x{})", m, k, n);
  gemm(args.ta, args.tb, m, n, k, args.a.data<float>(), a[1], args.b.data<float>(), b[1], c, n);
  return Status::ok();
}

void register_matmul(KernelTable& t) { t[static_cast<size_t>(OpId::k_matmul)] = matmul_kernel; }

}  // namespace gt::worker::cpu
