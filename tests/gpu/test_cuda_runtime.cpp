// CUDA backend runtime behaviour: the registered device, op coverage, the caching allocator
// (reuse, stats, out-of-memory recovery) and sessions on separate streams running at once.
#include <cuda_runtime_api.h>

#include <fmt/format.h>

#include "libgtcore/shape_rules.h"
#include "tests/gpu/parity_harness.h"
#include "require_ok.h"

namespace gt::gpu_test {
namespace {

TEST_CASE("cuda backend: device registration and op coverage", "[.gpu]") {
  GT_REQUIRE_GPU();
  CudaBackend& g = *be->gpu;
  CHECK(g.device_kind() == "cuda");
  CHECK(g.device_name().find("sm_") != std::string::npos);
  CHECK(g.memory_bytes() > (uint64_t{1} << 30));
  for (int i = 0; i < kNumOps; ++i) {
    INFO(op_name(static_cast<OpId>(i)));
    CHECK(g.supports(static_cast<OpId>(i)));
  }
}

TEST_CASE("cuda backend: uploaded bool bytes are stored as 0/1", "[.gpu]") {
  GT_REQUIRE_GPU();
  CudaBackend& g = *be->gpu;
  const std::string wire("\x00\x01\x02\xff\x80", 5);  // any nonzero byte from the wire is true
  const TensorMeta m{Shape{5}, DType::kBool};
  auto st = g.alloc(5);
  GT_REQUIRE_OK(st);
  Tensor t{m, *st, nullptr};
  OpAttrs a = make_shape_dtype(m.shape, DType::kBool);
  a.data = wire;
  GT_REQUIRE_OK(g.run(KernelArgs{OpId::k_from_host, a, {}, t, 1}));
  unsigned char raw[5] = {9, 9, 9, 9, 9};
  GT_REQUIRE_OK(g.copy_to_host(t, 0, raw, 5, 1));
  CHECK(std::vector<int>(raw, raw + 5) == std::vector<int>{0, 1, 1, 1, 1});
  const std::string chunk("\x00\x07", 2);
  OpAttrs c;
  c.push_int(3);
  c.data = chunk;
  const Tensor* ins[] = {&t};
  GT_REQUIRE_OK(g.run(KernelArgs{OpId::k_host_chunk, c, std::span<const Tensor* const>(ins, 1), t, 1}));
  GT_REQUIRE_OK(g.copy_to_host(t, 0, raw, 5, 1));
  CHECK(std::vector<int>(raw, raw + 5) == std::vector<int>{0, 1, 1, 0, 1});
}

// An upload returns before its copy runs when the stream is busy: the backend must own the bytes
// by then (pinned staging), since the caller may overwrite or free its buffer at once.
TEST_CASE("cuda backend: an upload's host buffer may be overwritten as soon as it returns",
          "[.gpu]") {
  GT_REQUIRE_GPU();
  CudaBackend& g = *be->gpu;
  const uint64_t session = 303;
  std::mt19937 rng(33);
  // Keep the stream busy for a while (~50 ms on an H200): GEMMs queued ahead of the upload,
  // on the GPU only (the harness's CPU twin would let the GPU drain meanwhile).
  const Pair a = random_pair(Shape{4096, 4096}, DType::kFloat32, rng, -0.02, 0.02, session);
  const TensorMeta sq = a.meta();
  auto prod = g.alloc(static_cast<size_t>(sq.nbytes()));
  GT_REQUIRE_OK(prod);
  Tensor p{sq, *prod, nullptr};
  for (int i = 0; i < 16; ++i) {
    const Tensor* ins[] = {&a.g, &a.g};
    GT_REQUIRE_OK(g.run(KernelArgs{OpId::k_matmul, OpAttrs{}, ins, p, session}));
  }
  const size_t n = 1 << 20;
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i % 1000) * 0.5f;
  const std::vector<float> want = host;
  auto st = g.alloc(n * sizeof(float));
  GT_REQUIRE_OK(st);
  Tensor t{TensorMeta{Shape{static_cast<int64_t>(n)}, DType::kFloat32}, *st, nullptr};
  GT_REQUIRE_OK(g.copy_from_host(t, 0, host.data(), n * sizeof(float), session));
  std::fill(host.begin(), host.end(), -7.0f);  // the caller reuses its buffer at once
  std::vector<float> back(n);
  GT_REQUIRE_OK(g.copy_to_host(t, 0, back.data(), n * sizeof(float), session));
  CHECK(back == want);
  GT_REQUIRE_OK(g.synchronize(session));
  g.end_session(session);
}

TEST_CASE("cuda backend: caching allocator reuses blocks and keeps stats", "[.gpu]") {
  GT_REQUIRE_GPU();
  CudaBackend& g = *be->gpu;
  const BackendStats before = g.stats();
  void* first = nullptr;
  {
    auto s = g.alloc(3 << 20);
    GT_REQUIRE_OK(s);
    first = (*s)->data();
    CHECK(g.stats().allocated_bytes >= before.allocated_bytes + (3u << 20));
  }
  auto again = g.alloc((3 << 20) - 100);  // same size class
  GT_REQUIRE_OK(again);
  CHECK((*again)->data() == first);
  CHECK(g.stats().peak_bytes >= g.stats().allocated_bytes);
  CHECK(g.stats().reserved_bytes >= g.stats().allocated_bytes);
}

TEST_CASE("cuda backend: out of memory is an error, and memory comes back", "[.gpu]") {
  GT_REQUIRE_GPU();
  CudaBackend& g = *be->gpu;
  std::vector<std::shared_ptr<Storage>> held;
  const size_t chunk = size_t{4} << 30;
  Status last;
  for (int i = 0; i < 1024; ++i) {
    auto s = g.alloc(chunk);
    if (!s.is_ok()) {
      last = s.status();
      break;
    }
    held.push_back(*s);
  }
  INFO(last.message());
  REQUIRE(last.code() == Code::kResourceExhausted);
  CHECK(!held.empty());
  std::mt19937 rng(31);
  held.clear();
  // After the tensors are freed the same sizes allocate again (from the cache).
  for (int i = 0; i < 4; ++i) {
    auto s = g.alloc(chunk);
    GT_REQUIRE_OK(s);
    held.push_back(*s);
  }
  held.clear();
  g.trim_cache();
  // Ops still work afterwards.
  const Pair a = random_pair(Shape{1023}, DType::kFloat32, rng);
  check_op(OpId::k_exp, OpAttrs{}, {&a}, "exp after OOM", {4e-6, 1e-6});
}

TEST_CASE("cuda backend: a tiny memory limit gives ResourceExhausted on the op's output",
          "[.gpu]") {
  GT_REQUIRE_GPU();
  CudaBackendOptions o;
  o.max_memory_bytes = 1 << 20;
  auto small = CudaBackend::create(0, o);
  GT_REQUIRE_OK(small);
  auto ok = (*small)->alloc(1000);
  GT_REQUIRE_OK(ok);
  auto too_big = (*small)->alloc(2 << 20);
  CHECK(too_big.status().code() == Code::kResourceExhausted);
}

// Two sessions issue interleaved work (a long GEMM chain each) on their own streams; blocks one
// session frees are immediately reused by the other. Results must match the CPU.
TEST_CASE("cuda backend: two sessions on two streams run concurrently and correctly", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(32);
  const uint64_t s1 = 101, s2 = 202;
  const Shape sq{512, 512};
  // Entries of standard deviation 1/sqrt(512): products keep their scale, so rounding
  // differences stay small over the chain while a mix-up between sessions would not.
  const Pair a1 = random_pair(sq, DType::kFloat32, rng, -0.0765, 0.0765, s1);
  const Pair a2 = random_pair(sq, DType::kFloat32, rng, -0.0765, 0.0765, s2);
  std::vector<RunResult> chain1, chain2;
  chain1.reserve(32);  // x1/x2 point into the vectors: no reallocation
  chain2.reserve(32);
  const Pair* x1 = &a1;
  const Pair* x2 = &a2;
  for (int step = 0; step < 6; ++step) {
    chain1.push_back(run_both(OpId::k_matmul, OpAttrs{}, {x1, &a1}, s1));
    chain2.push_back(run_both(OpId::k_matmul, OpAttrs{}, {x2, &a2}, s2));
    GT_REQUIRE_OK(chain1.back().gpu);
    GT_REQUIRE_OK(chain2.back().gpu);
    x1 = &chain1.back().out;
    x2 = &chain2.back().out;
    // Keep values bounded: tanh after every product.
    chain1.push_back(run_both(OpId::k_tanh, OpAttrs{}, {x1}, s1));
    chain2.push_back(run_both(OpId::k_tanh, OpAttrs{}, {x2}, s2));
    x1 = &chain1.back().out;
    x2 = &chain2.back().out;
    // Free the intermediates early (except the last): their blocks go back to the cache
    // while still in use on their stream, and the other session may get them next.
    if (chain1.size() > 2) {
      chain1[chain1.size() - 3].out = Pair{};
      chain2[chain2.size() - 3].out = Pair{};
    }
  }
  GT_REQUIRE_OK(be->gpu->synchronize(s1));
  expect_close(*x1, {1e-3, 2e-4}, "session 1 chain", s1);
  expect_close(*x2, {1e-3, 2e-4}, "session 2 chain", s2);
  be->gpu->end_session(s1);
  be->gpu->end_session(s2);
  GT_CHECK_OK(be->gpu->synchronize(s1));  // an ended session has nothing queued
}

}  // namespace
}  // namespace gt::gpu_test
