// gt-bench-gpu: the CUDA worker's benchmarks (issue 4), timed through client -> dispatcher ->
// worker between sync points, each beside a baseline measured in the same run:
//   gemm      8192^3 float32 / bfloat16 (TF32 with --tf32, the worker started with
//             --allow-tf32) vs cuBLAS called directly in this process
//   add       two 1 GiB float32 tensors vs cudaMemcpy device-to-device bandwidth
//   smallops  a pipelined stream of tiny adds: ops/s
//   clients   8 client processes each running independent GEMMs on one worker vs 1 client
// It starts its own gt-dispatcherd and one gt-workerd (--device 0) from its own folder on an
// ephemeral port, prints medians, and ends with a table (SUMMARY lines) for device-check.sh.
//
// Usage: gt-bench-gpu [--only gemm|add|smallops|clients] [--tf32] [--quick] [--cpu-smoke]
//        gt-bench-gpu --client ADDRESS N ITERS START_EPOCH_S   (internal: one GEMM client)
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "gt/gt.h"

namespace {

using gt::bench::median;
using gt::bench::now_s;

double wall_s() {  // comparable across processes (client start times)
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct Row {
  std::string metric, gt, baseline, ratio, target;
  bool pass;
};
std::vector<Row> g_rows;

void add_row(const std::string& metric, double gt_v, double base_v, const std::string& unit,
             double target_ratio) {
  const double r = base_v > 0 ? gt_v / base_v : 0;
  char a[64], b[64], c[32], t[32];
  std::snprintf(a, sizeof a, "%.2f %s", gt_v, unit.c_str());
  std::snprintf(b, sizeof b, "%.2f %s", base_v, unit.c_str());
  std::snprintf(c, sizeof c, "%.3f", r);
  std::snprintf(t, sizeof t, ">= %.2f", target_ratio);
  g_rows.push_back({metric, a, base_v > 0 ? b : "-", base_v > 0 ? c : "-", t, r >= target_ratio});
}

std::string self_dir() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
}

pid_t spawn(const std::string& exe, const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    if (!log.empty()) {
      FILE* f = std::freopen(log.c_str(), "a", stdout);
      if (f) dup2(fileno(stdout), 2);
    }
    std::vector<char*> argv{const_cast<char*>(exe.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

// The daemons' pids, for the signal handler: a `timeout` around this program must not leave a
// worker holding the GPU.
volatile pid_t g_children[2] = {-1, -1};
void on_signal(int sig) {
  for (pid_t p : {g_children[0], g_children[1]})
    if (p > 0) kill(p, SIGTERM);
  _exit(128 + sig);
}

// A private dispatcher + one CUDA worker for the run.
struct Daemons {
  std::string dir, address;
  pid_t dispatcher = -1, worker = -1;
  Daemons(const std::string& device, bool allow_tf32) {
    char tmpl[] = "/tmp/gt-bench-gpu-XXXXXX";
    dir = mkdtemp(tmpl);
    const std::string bin = self_dir();
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    // The worker registers over the Unix socket (no worker secret: TCP workers are refused).
    const std::string sock = dir + "/dispatcher.sock";
    dispatcher = spawn(bin + "/gt-dispatcherd",
                       {"--port", "0", "--port-file", dir + "/port", "--unix-socket", sock,
                        "--log-level", "warn"},
                       dir + "/dispatcher.log");
    std::string port;
    for (int i = 0; i < 200 && port.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::ifstream f(dir + "/port");
      std::getline(f, port);
    }
    if (port.empty()) {
      std::fprintf(stderr, "gt-bench-gpu: the dispatcher did not start (see %s)\n", dir.c_str());
      std::exit(2);
    }
    address = "127.0.0.1:" + port;
    std::vector<std::string> worker_args = {"--dispatcher", "unix:" + sock, "--device", device,
                                            "--log-level", "warn"};
    if (allow_tf32) worker_args.push_back("--allow-tf32");
    worker = spawn(bin + "/gt-workerd", worker_args, dir + "/worker.log");
    g_children[0] = dispatcher;
    g_children[1] = worker;
  }
  ~Daemons() {
    for (pid_t p : {worker, dispatcher}) {
      if (p > 0) {
        kill(p, SIGTERM);
        waitpid(p, nullptr, 0);
      }
    }
  }
};

// ---- GEMM ----

#define BENCH_CUDA(x)                                                              \
  do {                                                                             \
    if (cudaError_t e_ = (x); e_ != cudaSuccess) {                                 \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                \
      std::exit(3);                                                                \
    }                                                                              \
  } while (0)


double gt_gemm_tflops(int64_t n, gt::DType dt, int reps, int iters) {
  gt::Tensor a = gt::randn({n, n}).to(dt), b = gt::randn({n, n}).to(dt);
  gt::Tensor c = a.matmul(b);  // warm-up (cuBLAS heuristics, allocator)
  gt::synchronize();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_s();
    for (int i = 0; i < iters; ++i) c = a.matmul(b);
    gt::synchronize();
    t.push_back((now_s() - t0) / iters);
  }
  return 2.0 * static_cast<double>(n) * n * n / median(t) / 1e12;
}

// Uniform [-1, 1) values (xorshift on the host, one upload): float32 or bfloat16.
void fill_random(void* dev, int64_t n, gt::DType dt) {
  std::vector<uint32_t> host(static_cast<size_t>(dt == gt::kFloat32 ? n : (n + 1) / 2));
  uint64_t x = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return static_cast<float>(static_cast<int64_t>(x >> 40) - (int64_t{1} << 23)) * 0x1p-23f;
  };
  if (dt == gt::kFloat32) {
    for (auto& w : host) {
      const float f = next();
      std::memcpy(&w, &f, 4);
    }
  } else {
    auto bf = [](float f) {  // truncation is fine for benchmark data
      uint32_t u;
      std::memcpy(&u, &f, 4);
      return u >> 16;
    };
    for (auto& w : host) w = bf(next()) | (bf(next()) << 16);
  }
  BENCH_CUDA(cudaMemcpy(dev, host.data(), static_cast<size_t>(n) * (dt == gt::kFloat32 ? 4 : 2),
                        cudaMemcpyHostToDevice));
}

double cublas_gemm_tflops(int64_t n, gt::DType dt, bool tf32, int reps, int iters) {
  const cudaDataType_t ty = dt == gt::kFloat32 ? CUDA_R_32F : CUDA_R_16BF;
  const size_t es = dt == gt::kFloat32 ? 4 : 2;
  void *a, *b, *c;
  const size_t bytes = static_cast<size_t>(n * n) * es;
  BENCH_CUDA(cudaMalloc(&a, bytes));
  BENCH_CUDA(cudaMalloc(&b, bytes));
  BENCH_CUDA(cudaMalloc(&c, bytes));
  // Random operands like GT's (randn): tensor-core power, hence clocks, depends on the data.
  fill_random(a, n * n, dt);
  fill_random(b, n * n, dt);
  cublasHandle_t h;
  cublasCreate(&h);
  cudaStream_t s;
  BENCH_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasSetStream(h, s);
  const float alpha = 1, beta = 0;
  const cublasComputeType_t ct = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  auto run = [&] {
    cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(n),
                 static_cast<int>(n), &alpha, b, ty, static_cast<int>(n), a, ty,
                 static_cast<int>(n), &beta, c, ty, static_cast<int>(n), ct, CUBLAS_GEMM_DEFAULT);
  };
  run();
  BENCH_CUDA(cudaStreamSynchronize(s));
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_s();
    for (int i = 0; i < iters; ++i) run();
    BENCH_CUDA(cudaStreamSynchronize(s));
    t.push_back((now_s() - t0) / iters);
  }
  cublasDestroy(h);
  cudaStreamDestroy(s);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return 2.0 * static_cast<double>(n) * n * n / median(t) / 1e12;
}

void bench_gemm(bool tf32, bool quick) {
  const int64_t n = quick ? 4096 : 8192;
  const int reps = 5;
  struct Case {
    const char* name;
    gt::DType dt;
    bool tf32;
  };
  std::vector<Case> cases;
  if (tf32) cases.push_back({"gemm tf32", gt::kFloat32, true});
  else cases = {{"gemm fp32", gt::kFloat32, false}, {"gemm bf16", gt::kBFloat16, false}};
  for (const Case& c : cases) {
    // Enough products between two sync points (>= ~100 ms) that the sync's round trip through
    // client, dispatcher and worker stays well under 1% of the timed span.
    const int iters = quick ? 3 : c.dt == gt::kFloat32 && !c.tf32 ? 8 : 48;
    const double g = gt_gemm_tflops(n, c.dt, reps, iters);
    const double d = cublas_gemm_tflops(n, c.dt, c.tf32, reps, iters);
    std::printf("%s %lld^3: GT %.1f TFLOP/s, cuBLAS direct %.1f TFLOP/s, ratio %.3f\n", c.name,
                static_cast<long long>(n), g, d, g / d);
    add_row(std::string(c.name) + " " + std::to_string(n) + "^3", g, d, "TFLOP/s", 0.95);
  }
}

// ---- elementwise add vs D2D copy ----

double d2d_copy_gbps(size_t bytes, int reps, int iters) {
  void *a, *b;
  BENCH_CUDA(cudaMalloc(&a, bytes));
  BENCH_CUDA(cudaMalloc(&b, bytes));
  BENCH_CUDA(cudaMemset(a, 1, bytes));
  cudaStream_t s;
  BENCH_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  BENCH_CUDA(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
  BENCH_CUDA(cudaStreamSynchronize(s));
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_s();
    for (int i = 0; i < iters; ++i)
      BENCH_CUDA(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
    BENCH_CUDA(cudaStreamSynchronize(s));
    t.push_back((now_s() - t0) / iters);
  }
  cudaStreamDestroy(s);
  cudaFree(a);
  cudaFree(b);
  return 2.0 * static_cast<double>(bytes) / median(t) / 1e9;  // read + write
}

void bench_add(bool quick) {
  const int64_t n = quick ? (int64_t{1} << 26) : (int64_t{1} << 28);  // 1 GiB of float32
  // ~0.8 ms per add on an H200: 32 between sync points keep the round trip under 1%.
  const int reps = 7, iters = quick ? 8 : 32;
  gt::Tensor a = gt::randn({n}), b = gt::randn({n});
  gt::Tensor c = a + b;
  gt::synchronize();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_s();
    for (int i = 0; i < iters; ++i) c = a + b;
    gt::synchronize();
    t.push_back((now_s() - t0) / iters);
  }
  const double gt_gbps = 3.0 * static_cast<double>(n) * 4 / median(t) / 1e9;
  const double copy = d2d_copy_gbps(static_cast<size_t>(n) * 4, reps, iters);
  std::printf("add 2 x %lld float32: GT %.0f GB/s, D2D copy %.0f GB/s, ratio %.3f\n",
              static_cast<long long>(n), gt_gbps, copy, gt_gbps / copy);
  add_row("add 2 x 1 GiB fp32", gt_gbps, copy, "GB/s", 0.90);
}

// ---- pipelined small ops ----

void bench_smallops(bool quick) {
  const int ops = quick ? 20000 : 200000;
  gt::Tensor x = gt::zeros({16});
  gt::synchronize();
  std::vector<double> rates;
  for (int r = 0; r < 3; ++r) {
    gt::Tensor y = x;
    const double t0 = now_s();
    for (int i = 0; i < ops; ++i) y = y + 1.0f;
    gt::synchronize();
    rates.push_back(ops / (now_s() - t0));
    const float v = y.to_vector<float>().at(0);
    if (v != static_cast<float>(ops)) std::printf("smallops: WRONG RESULT %f != %d\n", v, ops);
  }
  const double rate = median(rates);
  std::printf("small-op stream: %.0f ops/s (target 150000)\n", rate);
  add_row("small-op stream", rate / 1000, 150, "kops/s", 1.0);
}

// ---- concurrent clients ----

int client_main(const std::string& address, int64_t n, int iters, double start_at) {
  gt::connect(address);
  gt::Tensor a = gt::randn({n, n}), b = gt::randn({n, n});
  gt::Tensor c = a.matmul(b);
  gt::synchronize();
  while (wall_s() < start_at) std::this_thread::sleep_for(std::chrono::microseconds(200));
  for (int i = 0; i < iters; ++i) c = a.matmul(b);
  gt::synchronize();
  std::printf("%.6f\n", wall_s());
  return 0;
}

// Wall seconds for `k` clients each running `iters` GEMMs, from a common start to the last end.
double run_clients(const std::string& address, int k, int64_t n, int iters) {
  const double start_at = wall_s() + 5.0;  // time for every client to connect and warm up
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<FILE*> pipes;
  for (int i = 0; i < k; ++i) {
    const std::string cmd = exe + " --client " + address + " " + std::to_string(n) + " " +
                            std::to_string(iters) + " " + std::to_string(start_at);
    pipes.push_back(popen(cmd.c_str(), "r"));
  }
  double last = 0;
  for (FILE* p : pipes) {
    double end = 0;
    if (!p || std::fscanf(p, "%lf", &end) != 1) std::printf("clients: a client failed\n");
    if (p) pclose(p);
    if (end > last) last = end;
  }
  return last - start_at;
}

void bench_clients(const std::string& address, bool quick) {
  const int64_t n = 4096;
  const int iters = quick ? 10 : 40;
  const double flop = 2.0 * static_cast<double>(n) * n * n * iters;
  const double one = flop / run_clients(address, 1, n, iters) / 1e12;
  const double eight = 8 * flop / run_clients(address, 8, n, iters) / 1e12;
  std::printf("GEMM %lld^3 clients: 1 client %.1f TFLOP/s, 8 clients %.1f TFLOP/s aggregate, "
              "ratio %.3f\n",
              static_cast<long long>(n), one, eight, eight / one);
  add_row("8 clients vs 1 (GEMM 4096)", eight, one, "TFLOP/s", 0.90);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 6 && std::strcmp(argv[1], "--client") == 0)
    return client_main(argv[2], std::atoll(argv[3]), std::atoi(argv[4]), std::atof(argv[5]));
  std::string only;
  bool tf32 = false, quick = false, cpu_smoke = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    else if (std::strcmp(argv[i], "--tf32") == 0) tf32 = true;
    else if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    // Checks the harness (daemons, connection, small-op stream) on a CPU worker, no GPU needed.
    else if (std::strcmp(argv[i], "--cpu-smoke") == 0) cpu_smoke = quick = true;
    else {
      std::fprintf(stderr, "usage: %s [--only gemm|add|smallops|clients] [--tf32] [--quick]\n",
                   argv[0]);
      return 1;
    }
  }
  int devices = 0;
  if (!cpu_smoke && (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)) {
    std::fprintf(stderr, "gt-bench-gpu: no CUDA device\n");
    return 2;
  }
  Daemons d(cpu_smoke ? "cpu" : "0", tf32);
  try {
    gt::connect(d.address);
    for (int i = 0; i < 600 && gt::worker_stats().empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto ws = gt::worker_stats();
    if (ws.empty()) {
      std::fprintf(stderr, "gt-bench-gpu: no worker registered (see %s)\n", d.dir.c_str());
      return 2;
    }
    std::printf("worker: %s\n", ws[0].device.c_str());
    if (cpu_smoke) {
      bench_smallops(true);
      const double t = run_clients(d.address, 2, 64, 5);
      std::printf("2 clients x 5 GEMMs of 64^3: %.3f s after the common start\n", t);
    } else if (tf32) {
      bench_gemm(true, quick);
    } else {
      if (only.empty() || only == "gemm") bench_gemm(false, quick);
      if (only.empty() || only == "add") bench_add(quick);
      if (only.empty() || only == "smallops") bench_smallops(quick);
      if (only.empty() || only == "clients") bench_clients(d.address, quick);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gt-bench-gpu: %s (logs in %s)\n", e.what(), d.dir.c_str());
    return 1;
  }
  for (const Row& r : g_rows)
    std::printf("SUMMARY | %-28s | %-18s | %-18s | %-6s | %-7s | %s |\n", r.metric.c_str(),
                r.gt.c_str(), r.baseline.c_str(), r.ratio.c_str(), r.target.c_str(),
                r.pass ? "PASS" : "FAIL");
  return 0;
}
