// Devices against real daemons (gt/device.h): a device names a worker. Where a tensor lives is
// read from the workers' own statistics (bytes held, ops executed), never from the client's label.
#include <catch2/catch.hpp>
#include <gt/gt.h>

#include <algorithm>
#include <cmath>

#include "daemons.h"
#include "raw_client.h"

using namespace gt::testing;

namespace {

constexpr int kWorkers = 3;

Daemons& daemons() {
  static Daemons d(DaemonOptions{kWorkers});
  static bool ready = [] {
    gt::connect(d.address());
    gt::register_config("rows", gt::SignalConfig{gt::ShardConfig{0, {}, false}, "", false});
    return true;
  }();
  (void)ready;
  return d;
}

// Per worker, indexed by worker id, after everything queued so far has executed.
std::vector<gt::v1::WorkerStats> stats() {
  gt::synchronize();
  std::vector<gt::v1::WorkerStats> s = sorted_worker_stats(daemons().address());
  REQUIRE(s.size() == kWorkers);
  return s;
}

std::vector<int64_t> bytes_grown(const std::vector<gt::v1::WorkerStats>& a,
                                 const std::vector<gt::v1::WorkerStats>& b) {
  std::vector<int64_t> d;
  for (int w = 0; w < kWorkers; ++w) d.push_back(static_cast<int64_t>(b[w].bytes()) - static_cast<int64_t>(a[w].bytes()));
  return d;
}

std::vector<int64_t> ops_run(const std::vector<gt::v1::WorkerStats>& a, const std::vector<gt::v1::WorkerStats>& b) {
  std::vector<int64_t> d;
  for (int w = 0; w < kWorkers; ++w) d.push_back(static_cast<int64_t>(b[w].ops_executed() - a[w].ops_executed()));
  return d;
}

void expect_values(const gt::Tensor& got, const std::vector<float>& want) {
  std::vector<float> g = got.to_vector<float>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i);
    CHECK(std::fabs(g[i] - want[i]) <= 1e-5f * (1 + std::fabs(want[i])));
  }
}

}  // namespace

TEST_CASE("device names parse as torch's and name workers", "[device]") {
  CHECK(gt::Device("cuda:2").worker() == 2);
  CHECK(gt::Device("cuda:2").str() == "cuda:2");
  CHECK(gt::Device("cuda").worker() == -1);
  CHECK(gt::Device("cpu").is_cpu());
  CHECK(gt::Device("auto").worker() == -1);
  CHECK(gt::Device(gt::kCUDA, 1) == gt::Device("cuda:1"));
  CHECK_FALSE(gt::Device("cuda:1") == gt::Device("cuda:0"));
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:1x", "cpu:1", ""})
    CHECK_THROWS_WITH(gt::Device(bad), Catch::Contains("invalid device"));
  CHECK_THROWS_WITH(gt::Device(gt::kCPU, 0), Catch::Contains("only cuda devices take an index"));
}

TEST_CASE("device_count is the dispatcher's worker count, a missing worker is refused", "[device]") {
  daemons();
  CHECK(gt::cuda::device_count() == kWorkers);
  CHECK(gt::cuda::is_available());
  gt::Tensor x = gt::ones({3});
  CHECK_THROWS_WITH(x.to("cuda:7"), Catch::Contains("no such worker") && Catch::Contains("workers 0, 1, 2"));
  CHECK_THROWS_WITH(gt::zeros({2}, gt::Device("cuda:9")), Catch::Contains("no such worker"));
  CHECK(x.sum().item<float>() == 3.0f);  // the session goes on
}

TEST_CASE("factories given a device create there, unpinned ones stay the dispatcher's choice",
          "[device]") {
  daemons();
  auto s0 = stats();
  gt::Tensor a = gt::zeros({1000, 100}, gt::Device("cuda:2"));  // 400000 bytes
  gt::Tensor b = gt::randn({1000, 100}, gt::TensorOptions().device("cuda:1").requires_grad(true));
  gt::Tensor c = gt::tensor({{1, 2}, {3, 4}}, gt::TensorOptions().dtype(gt::kFloat32).device("cuda:1"));
  auto s1 = stats();
  std::vector<int64_t> grew = bytes_grown(s0, s1);
  CHECK(grew[2] >= 400000);
  CHECK(grew[1] >= 400000);
  CHECK(grew[0] < 400000);
  CHECK(grew[2] < 800000);  // nothing of b on worker 2
  CHECK(a.device() == gt::Device("cuda:2"));
  CHECK(a.is_cuda());
  CHECK(a.get_device() == 2);
  CHECK(b.device() == gt::Device("cuda:1"));
  CHECK(b.requires_grad());
  CHECK(c.dtype() == gt::kFloat32);
  expect_values(c, {1, 2, 3, 4});
  CHECK(gt::zeros({2}).device() == gt::Device(gt::kAuto));
  CHECK_FALSE(gt::zeros({2}).is_cuda());
  CHECK(gt::zeros({2}, gt::Device("cuda")).get_device() == -1);  // no index: the dispatcher's choice

  // The same seed gives the same values wherever they are made.
  gt::manual_seed(5);
  gt::Tensor here = gt::randn({64});
  gt::manual_seed(5);
  gt::Tensor there = gt::randn({64}, gt::Device("cuda:2"));
  expect_values(there, here.to_vector<float>());

  gt::Tensor e = gt::eye(3, gt::TensorOptions().device("cuda:2").dtype(gt::kInt64));
  CHECK(e.device() == gt::Device("cuda:2"));
  CHECK(e.dtype() == gt::kInt64);
  CHECK(e.to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0, 0, 1, 0, 0, 0, 1});
  CHECK(gt::arange(5, gt::Device("cuda:1")).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(gt::linspace(0, 1, 3, gt::Device("cuda:1")).device() == gt::Device("cuda:1"));
  CHECK(gt::randint(0, 4, {8}, gt::Device("cuda:2")).device() == gt::Device("cuda:2"));
}

TEST_CASE("to(device) copies worker to worker, ops on pinned tensors run on their worker",
          "[device]") {
  daemons();
  gt::Tensor x = gt::arange(12).to(gt::kFloat32).reshape({3, 4});
  gt::Tensor x1 = x.to("cuda:1");
  CHECK(x1.device() == gt::Device("cuda:1"));
  CHECK(x1.to("cuda:1").impl() == x1.impl());  // already there: the same tensor, as torch
  CHECK(x1.cpu().impl() == x1.impl());          // values reach the host from any worker
  CHECK(x1.to(gt::kCUDA).impl() == x1.impl());  // "cuda" without an index pins nothing
  expect_values(x1, x.to_vector<float>());

  auto s0 = stats();
  gt::Tensor y = (x1 * 2 + 1).relu().sum(1);
  auto s1 = stats();
  std::vector<int64_t> ran = ops_run(s0, s1);
  CHECK(ran[1] >= 3);
  CHECK(ran[0] == 0);
  CHECK(ran[2] == 0);
  CHECK(y.device() == gt::Device("cuda:1"));
  expect_values(y, {16, 48, 80});

  // An unpinned operand moves to the pinned one's worker; so does one pinned elsewhere.
  gt::Tensor z = gt::ones({3, 4});
  gt::Tensor w2 = gt::full({3, 4}, 10.0f, gt::Device("cuda:2"));
  auto s2 = stats();
  gt::Tensor m1 = z + x1;
  gt::Tensor m2 = x1.matmul(w2.t());
  auto s3 = stats();
  CHECK(m1.device() == gt::Device("cuda:1"));
  CHECK(m2.device() == gt::Device("cuda:1"));
  std::vector<int64_t> ran2 = ops_run(s2, s3);
  CHECK(ran2[1] >= 2);  // both ops ran on worker 1 (moves are peer transfers, not ops)
  std::vector<float> xv = x.to_vector<float>(), want1, want2;
  for (float v : xv) want1.push_back(v + 1);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) {
      float s = 0;
      for (int k = 0; k < 4; ++k) s += xv[r * 4 + k] * 10;
      want2.push_back(s);
    }
  expect_values(m1, want1);
  expect_values(m2, want2);

  // A conversion on the way.
  gt::Tensor h = x1.to(gt::Device("cuda:2"), gt::kFloat16);
  CHECK(h.dtype() == gt::kFloat16);
  CHECK(h.device() == gt::Device("cuda:2"));
  expect_values(h.to(gt::kFloat32), xv);
  // In place on an unpinned tensor with a pinned source: the destination stays unpinned.
  gt::Tensor dst = gt::zeros({3, 4});
  dst.add_(x1);
  CHECK(dst.get_device() == -1);
  expect_values(dst, xv);
}

TEST_CASE("to(device) is differentiable: gradients flow back to the source", "[device][autograd]") {
  daemons();
  gt::Tensor w = gt::tensor({1.0f, -2.0f, 3.0f}).requires_grad_();
  gt::Tensor loss = (w.to("cuda:2") * w.to("cuda:1")).sum();  // d/dw sum(w^2) = 2w
  CHECK(loss.device() == gt::Device("cuda:2"));
  loss.backward();
  expect_values(w.grad(), {2, -4, 6});
}

TEST_CASE("Module::to moves parameters in place: an optimizer made before keeps training",
          "[device][nn]") {
  daemons();
  gt::manual_seed(3);
  gt::nn::Linear lin(4, 2);
  gt::Tensor w_before = lin->parameters()[0];
  std::vector<float> w_values = w_before.to_vector<float>();
  gt::optim::SGD opt(lin->parameters(), gt::optim::SGDOptions(0.1));
  lin->to(gt::Device("cuda:2"));
  for (const gt::Tensor& p : lin->parameters()) CHECK(p.device() == gt::Device("cuda:2"));
  CHECK(w_before.device() == gt::Device("cuda:2"));  // the same handle moved
  expect_values(w_before, w_values);

  gt::Tensor x = gt::randn({8, 4}).to("cuda:2");  // the data too, as a torch script does
  gt::Tensor target = gt::randn({8, 2}).to("cuda:2");
  auto s0 = stats();
  float first = 0, last = 0;
  for (int step = 0; step < 20; ++step) {
    opt.zero_grad();
    gt::Tensor loss = (lin(x) - target).pow(2).mean();
    loss.backward();
    opt.step();
    float l = loss.item<float>();
    if (step == 0) first = l;
    last = l;
  }
  auto s1 = stats();
  std::vector<int64_t> ran = ops_run(s0, s1);
  CHECK(last < first * 0.9f);
  CHECK(ran[2] > 100);  // forward, backward and the updates ran on worker 2
  CHECK(ran[0] + ran[1] == 0);
  CHECK(lin->parameters()[0].grad().device() == gt::Device("cuda:2"));

  lin->to(gt::kFloat16);
  CHECK(lin->parameters()[0].dtype() == gt::kFloat16);
  CHECK(lin->parameters()[0].device() == gt::Device("cuda:2"));
}

TEST_CASE("DeviceGuard pins creations on this thread until it ends", "[device]") {
  daemons();
  {
    gt::DeviceGuard g(gt::Device("cuda:1"));
    CHECK(gt::zeros({2}).device() == gt::Device("cuda:1"));
    CHECK(gt::tensor({1, 2, 3}).device() == gt::Device("cuda:1"));
    gt::Tensor u = gt::ones({2}, gt::Device("cuda:2"));  // an explicit device wins
    CHECK(u.device() == gt::Device("cuda:2"));
  }
  CHECK(gt::zeros({2}).get_device() == -1);
  CHECK_THROWS_WITH(gt::DeviceGuard(gt::Device("cuda:5")), Catch::Contains("no such worker"));
}

TEST_CASE("a pinned op inside a sharding scope runs on its device, not the scope's workers",
          "[device][sharding]") {
  daemons();
  gt::Tensor p = gt::ones({30, 10}, gt::Device("cuda:1"));
  gt::Tensor q;
  {
    gt::signal::Scope s("rows");
    gt::Tensor sharded = gt::ones({30, 10});  // unpinned: sharded over the 3 workers
    auto s0 = stats();
    q = p * 3;
    auto s1 = stats();
    std::vector<int64_t> ran = ops_run(s0, s1);
    CHECK(ran[1] == 1);
    CHECK(ran[0] == 0);
    CHECK(ran[2] == 0);
    gt::Tensor mixed = p + sharded;  // the shards gather on worker 1
    CHECK(mixed.device() == gt::Device("cuda:1"));
    CHECK(mixed.sum().item<float>() == 600.0f);
  }
  CHECK(q.device() == gt::Device("cuda:1"));
  CHECK(q.sum().item<float>() == 900.0f);
}
