// gt-bench-kernels (issue 10): the CUDA worker's kernels one by one, in-process on a CudaBackend
// (no daemons: what is timed is the kernel, not the service), each timed with CUDA events on the
// session's stream and reported as a fraction of device-to-device copy bandwidth measured in the
// same run (bytes each kernel must read + write / its time, against cudaMemcpyAsync D2D of the
// same size). Every result is checked against the CPU backend running the same op on the same
// inputs: a mismatch is a WRONG RESULT row and a non-zero exit.
//
//   elementwise  exp, scalar mul, same-shape add, bias add ([rows, 1024] + [1024]), cast
//                float32 -> bfloat16                                   target >= 85% (add: 90%)
//   reductions   sum over everything (few long rows), over the last dim of [rows, 1024] (a
//                warp per row), over dim 0 of [rows, 1024] (column tiles)     target >= 80%
//   layout       transpose of a square matrix (tiled), index_select of rows, cat along dim 0
//   transfers    H2D / D2H through the backend (pinned staging) vs cudaMemcpy from pinned memory
//
// Usage: gt-bench-kernels [--quick] [--json]     (--quick: 16 Mi elements instead of 64 Mi)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "libgtcore/op_attrs.h"
#include "libgtcore/shape_rules.h"
#include "workerd/cpu/cpu_backend.h"
#include "workerd/cuda/cuda_backend.h"

namespace {

using gt::DType;
using gt::OpAttrs;
using gt::OpId;
using gt::Shape;
using gt::TensorMeta;
using gt::bench::median;
namespace w = gt::worker;

constexpr uint64_t kSession = 1;
constexpr int kReps = 20;

struct Row {
  std::string name, kind;  // kind: elementwise, reduction, layout, transfer
  double gbps = 0, fraction = 0, target = 0;
  bool correct = true;
  std::string note;
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "gt-bench-kernels: %s\n", what.c_str());
  std::exit(2);
}

void check(const gt::Status& s, const char* what) {
  if (!s.is_ok()) die(std::string(what) + ": " + s.message());
}

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorString(e));
}

// One logical tensor on both backends (the CPU one is the reference).
struct Both {
  w::Tensor c, g;
};

class Bench {
 public:
  explicit Bench(std::unique_ptr<w::CudaBackend> gpu) : gpu_(std::move(gpu)) {
    auto s = gpu_->native_stream(kSession);
    if (!s.is_ok()) die("no session stream: " + s.status().message());
    stream_ = static_cast<cudaStream_t>(*s);
    check_cuda(cudaEventCreate(&start_), "cudaEventCreate");
    check_cuda(cudaEventCreate(&stop_), "cudaEventCreate");
  }

  Both upload(const Shape& s, DType dt, const std::vector<unsigned char>& raw) {
    const TensorMeta m{s, dt};
    Both b;
    auto cs = cpu_.alloc(static_cast<size_t>(m.nbytes()));
    auto gs = gpu_->alloc(static_cast<size_t>(m.nbytes()));
    check(cs.status(), "cpu alloc");
    check(gs.status(), "gpu alloc");
    b.c = w::Tensor{m, *cs, nullptr};
    b.g = w::Tensor{m, *gs, nullptr};
    std::memcpy(b.c.storage->data(), raw.data(), raw.size());
    check(gpu_->copy_from_host(b.g, 0, raw.data(), raw.size(), kSession), "upload");
    return b;
  }

  Both random_f32(const Shape& s, std::mt19937& rng) {
    std::uniform_real_distribution<float> d(-2.0f, 2.0f);
    std::vector<float> v(static_cast<size_t>(s.numel()));
    for (auto& x : v) x = d(rng);
    std::vector<unsigned char> raw(v.size() * 4);
    std::memcpy(raw.data(), v.data(), raw.size());
    return upload(s, DType::kFloat32, raw);
  }

  // Times `op` on the GPU (median of kReps, CUDA events around each run), checks it against the
  // CPU, and returns the median seconds.
  double time_op(OpId op, const OpAttrs& a, std::vector<const Both*> ins, Row& row) {
    std::vector<TensorMeta> metas;
    std::vector<const w::Tensor*> cin, gin;
    for (const Both* b : ins) {
      metas.push_back(b->c.meta);
      cin.push_back(&b->c);
      gin.push_back(&b->g);
    }
    auto meta = gt::infer_meta(op, metas, a);
    check(meta.status(), "shape rule");
    const size_t nbytes = static_cast<size_t>(meta->nbytes());
    auto cs = cpu_.alloc(nbytes);
    auto gs = gpu_->alloc(nbytes);
    check(cs.status(), "cpu alloc");
    check(gs.status(), "gpu alloc");
    w::Tensor cout{*meta, *cs, nullptr}, gout{*meta, *gs, nullptr};
    check(gpu_->run(w::KernelArgs{op, a, gin, gout, kSession}), "gpu run (warm-up)");
    std::vector<double> ts;
    for (int r = 0; r < kReps; ++r) {
      check_cuda(cudaEventRecord(start_, stream_), "cudaEventRecord");
      check(gpu_->run(w::KernelArgs{op, a, gin, gout, kSession}), "gpu run");
      check_cuda(cudaEventRecord(stop_, stream_), "cudaEventRecord");
      check_cuda(cudaEventSynchronize(stop_), "cudaEventSynchronize");
      float ms = 0;
      check_cuda(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
      ts.push_back(ms / 1e3);
    }
    check(cpu_.run(w::KernelArgs{op, a, cin, cout, kSession}), "cpu run");
    row.correct = same(cout, gout, op, row.note);
    return median(ts);
  }

  // cudaMemcpyAsync D2D of `bytes`: seconds (median).
  double time_d2d(size_t bytes) {
    void *a = nullptr, *b = nullptr;
    check_cuda(cudaMalloc(&a, bytes), "cudaMalloc");
    check_cuda(cudaMalloc(&b, bytes), "cudaMalloc");
    std::vector<double> ts;
    for (int r = 0; r <= kReps; ++r) {
      check_cuda(cudaEventRecord(start_, stream_), "cudaEventRecord");
      check_cuda(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream_), "D2D");
      check_cuda(cudaEventRecord(stop_, stream_), "cudaEventRecord");
      check_cuda(cudaEventSynchronize(stop_), "cudaEventSynchronize");
      float ms = 0;
      check_cuda(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
      if (r > 0) ts.push_back(ms / 1e3);  // the first is a warm-up
    }
    cudaFree(a);
    cudaFree(b);
    return median(ts);
  }

  // Host <-> device through the backend (pinned staging inside) vs cudaMemcpy from pinned
  // memory: {backend H2D, raw H2D, backend D2H, raw D2H} seconds (wall clock around a sync).
  std::vector<double> time_transfers(size_t bytes) {
    std::vector<unsigned char> host(bytes, 7);
    void* pinned = nullptr;
    void* dev = nullptr;
    check_cuda(cudaMallocHost(&pinned, bytes), "cudaMallocHost");
    check_cuda(cudaMalloc(&dev, bytes), "cudaMalloc");
    auto gs = gpu_->alloc(bytes);
    check(gs.status(), "gpu alloc");
    w::Tensor t{TensorMeta{Shape{static_cast<int64_t>(bytes)}, DType::kUInt8}, *gs, nullptr};
    auto wall = [&](const std::function<void()>& f) {
      std::vector<double> ts;
      for (int r = 0; r < 5; ++r) {
        const double t0 = gt::bench::now_s();
        f();
        ts.push_back(gt::bench::now_s() - t0);
      }
      return median(ts);
    };
    const double up = wall([&] {
      check(gpu_->copy_from_host(t, 0, host.data(), bytes, kSession), "upload");
      check(gpu_->synchronize(kSession), "sync");
    });
    const double raw_up = wall([&] {
      check_cuda(cudaMemcpy(dev, pinned, bytes, cudaMemcpyHostToDevice), "H2D");
    });
    const double down = wall([&] {
      check(gpu_->copy_to_host(t, 0, host.data(), bytes, kSession), "download");
    });
    const double raw_down = wall([&] {
      check_cuda(cudaMemcpy(pinned, dev, bytes, cudaMemcpyDeviceToHost), "D2H");
    });
    cudaFreeHost(pinned);
    cudaFree(dev);
    return {up, raw_up, down, raw_down};
  }

 private:
  // The GPU result equals the CPU's: exactly for moves and integers, within float32 rounding
  // (scaled by the reduction length for sums) otherwise.
  bool same(const w::Tensor& c, const w::Tensor& g, OpId op, std::string& note) {
    const size_t n = static_cast<size_t>(c.meta.nbytes());
    std::vector<unsigned char> got(n);
    check(gpu_->copy_to_host(g, 0, got.data(), n, kSession), "fetch");
    const auto* want = static_cast<const unsigned char*>(c.storage->data());
    if (c.meta.dtype != DType::kFloat32) {
      if (std::memcmp(got.data(), want, n) == 0) return true;
      if (c.meta.dtype == DType::kBFloat16) {  // rounding is identical on both; allow 1 ulp
        for (size_t i = 0; i + 1 < n; i += 2) {
          const int a = got[i] | (got[i + 1] << 8), b = want[i] | (want[i + 1] << 8);
          if (std::abs(a - b) > 1) {
            note = "bf16 element " + std::to_string(i / 2) + " differs";
            return false;
          }
        }
        return true;
      }
      note = "bytes differ";
      return false;
    }
    const double rtol = op == OpId::k_sum ? 1e-3 : 1e-5;
    const float* a = reinterpret_cast<const float*>(got.data());
    const float* b = reinterpret_cast<const float*>(want);
    for (size_t i = 0; i < n / 4; ++i) {
      const double tol = rtol * std::max(1.0, std::fabs(static_cast<double>(b[i])));
      if (!(std::fabs(static_cast<double>(a[i]) - b[i]) <= tol)) {
        note = "element " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " +
               std::to_string(b[i]);
        return false;
      }
    }
    return true;
  }

  w::CpuBackend cpu_;
  std::unique_ptr<w::CudaBackend> gpu_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--json") json = true;
    else {
      std::fprintf(stderr, "usage: gt-bench-kernels [--quick] [--json]\n");
      return 2;
    }
  }
  if (w::cuda_device_count() == 0) {
    std::fprintf(stderr, "gt-bench-kernels: no CUDA device\n");
    return 2;
  }
  auto gpu = w::CudaBackend::create(0);
  check(gpu.status(), "CudaBackend");
  Bench b(std::move(*gpu));
  std::mt19937 rng(7);
  const int64_t n = quick ? (int64_t{1} << 24) : (int64_t{1} << 26);  // float32 elements
  const int64_t cols = 1024, rows = n / cols;
  const int64_t side = static_cast<int64_t>(std::sqrt(static_cast<double>(n)));
  const double d2d_s = b.time_d2d(static_cast<size_t>(n) * 4);
  const double d2d_gbps = 2.0 * static_cast<double>(n) * 4 / d2d_s / 1e9;  // read + write

  const Both x = b.random_f32(Shape{rows, cols}, rng);
  const Both y = b.random_f32(Shape{rows, cols}, rng);
  const Both bias = b.random_f32(Shape{cols}, rng);
  const Both sq = b.random_f32(Shape{side, side}, rng);
  const Both half1 = b.random_f32(Shape{rows / 2, cols}, rng);
  const Both half2 = b.random_f32(Shape{rows - rows / 2, cols}, rng);
  std::vector<int64_t> idx(static_cast<size_t>(rows));
  std::uniform_int_distribution<int64_t> pick(0, rows - 1);
  for (auto& v : idx) v = pick(rng);
  std::vector<unsigned char> idx_raw(idx.size() * 8);
  std::memcpy(idx_raw.data(), idx.data(), idx_raw.size());
  const Both index = b.upload(Shape{rows}, DType::kInt64, idx_raw);

  std::vector<Row> rows_out;
  const double f32 = static_cast<double>(n) * 4;
  auto add_row = [&](const std::string& name, const std::string& kind, double target,
                     double bytes, OpId op, const OpAttrs& a, std::vector<const Both*> ins) {
    Row r;
    r.name = name;
    r.kind = kind;
    r.target = target;
    const double s = b.time_op(op, a, std::move(ins), r);
    r.gbps = bytes / s / 1e9;
    r.fraction = r.gbps / d2d_gbps;
    rows_out.push_back(r);
  };
  const int64_t perm[2] = {1, 0};
  add_row("exp", "elementwise", 0.85, 2 * f32, OpId::k_exp, OpAttrs{}, {&x});
  add_row("mul scalar", "elementwise", 0.85, 2 * f32, OpId::k_mul,
          gt::make_binary_scalar(gt::ScalarSide::kRight, 1.5, false), {&x});
  add_row("add same shape", "elementwise", 0.90, 3 * f32, OpId::k_add, OpAttrs{}, {&x, &y});
  add_row("bias add [r,1024]+[1024]", "elementwise", 0.85, 2 * f32, OpId::k_add, OpAttrs{},
          {&x, &bias});
  add_row("cast f32 -> bf16", "elementwise", 0.85, 1.5 * f32, OpId::k_cast,
          gt::make_cast(DType::kBFloat16), {&x});
  add_row("sum all", "reduction", 0.80, f32, OpId::k_sum, gt::make_reduce(gt::kAllDims, false),
          {&x});
  add_row("sum [r,1024] dim 1", "reduction", 0.80, f32, OpId::k_sum, gt::make_reduce(1, false),
          {&x});
  add_row("sum [r,1024] dim 0", "reduction", 0.80, f32, OpId::k_sum, gt::make_reduce(0, false),
          {&x});
  add_row("transpose [s,s]", "layout", 0, 2.0 * static_cast<double>(side * side) * 4,
          OpId::k_permute, gt::make_permute(perm), {&sq});
  add_row("index_select rows", "layout", 0, 2 * f32 + static_cast<double>(rows) * 8,
          OpId::k_index_select, gt::make_axis(0), {&x, &index});
  add_row("cat dim 0", "layout", 0, 2 * f32, OpId::k_cat, gt::make_axis(0), {&half1, &half2});

  const std::vector<double> tr = b.time_transfers(static_cast<size_t>(n) * 4);
  auto transfer_row = [&](const std::string& name, double s, double raw_s) {
    Row r;
    r.name = name;
    r.kind = "transfer";
    r.gbps = f32 / s / 1e9;
    r.fraction = raw_s / s;  // of cudaMemcpy from pinned memory
    rows_out.push_back(r);
  };
  transfer_row("H2D through the backend", tr[0], tr[1]);
  transfer_row("D2H through the backend", tr[2], tr[3]);

  bool all_correct = true;
  for (const Row& r : rows_out) all_correct = all_correct && r.correct;
  if (json) {
    std::printf("{\"d2d_gbps\": %.1f", d2d_gbps);
    for (const Row& r : rows_out) {
      std::string key = r.name;
      for (char& c : key)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      std::printf(", \"%s_gbps\": %.1f, \"%s_of_baseline\": %.3f, \"%s_correct\": %s",
                  key.c_str(), r.gbps, key.c_str(), r.fraction, key.c_str(),
                  r.correct ? "true" : "false");
    }
    std::printf("}\n");
    return all_correct ? 0 : 1;
  }
  std::printf("gt-bench-kernels: %lld float32 elements (%.0f MiB), CUDA events, median of %d\n",
              static_cast<long long>(n), f32 / (1 << 20), kReps);
  std::printf("D2D copy baseline: %.1f GB/s (read + write)\n", d2d_gbps);
  std::printf("  %-26s %-11s %10s %9s %7s  %s\n", "kernel", "kind", "GB/s", "of base", "target",
              "result");
  for (const Row& r : rows_out) {
    const char* verdict = !r.correct ? "WRONG RESULT"
                          : r.target == 0 ? "-"
                          : r.fraction >= r.target ? "PASS"
                                                   : "below target";
    std::printf("  %-26s %-11s %10.1f %8.1f%% %6.0f%%  %s %s\n", r.name.c_str(), r.kind.c_str(),
                r.gbps, 100 * r.fraction, 100 * r.target, verdict, r.note.c_str());
    // One summary row per kernel for scripts/device-check.sh's table.
    std::printf("SUMMARY | %-28s | %-18s | %-18s | %-6s | %-7s | %s |\n",
                ("kernel " + r.name).substr(0, 28).c_str(),
                (std::to_string(static_cast<int>(r.gbps)) + " GB/s").c_str(),
                r.kind == "transfer" ? "cudaMemcpy pinned" : "D2D copy",
                (std::to_string(static_cast<int>(100 * r.fraction)) + "%").c_str(),
                r.target == 0 ? "-" : (std::to_string(static_cast<int>(100 * r.target)) + "%").c_str(),
                verdict);
  }
  std::printf("(transfers: of cudaMemcpy from pinned memory, wall clock)\n");
  return all_correct ? 0 : 1;
}
