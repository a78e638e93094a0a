// Signal-based sharding against real daemons (ARCHITECTURE §5): for every rule, the result computed
// sharded over several CPU workers equals the one computed on one worker from the same seed;
// workers hold only their shards; shard exchange goes worker to worker, never through the
// dispatcher; pipeline stages run where their config says.
#include <catch2/catch.hpp>
#include <gt/gt.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <fstream>
#include <string>

#include "daemons.h"
#include "libgtclient/run_op.h"
#include "libgtcore/instr_codec.h"
#include "libgtcore/philox.h"
#include "raw_client.h"

using namespace gt::testing;

namespace {

constexpr int kWorkers = 3;

Daemons& daemons() {
  static Daemons d(DaemonOptions{kWorkers});
  static bool ready = [] {
    gt::connect(d.address());
    // Configs registered by the program (the same schema as a YAML file).
    gt::register_config("rows", gt::SignalConfig{gt::ShardConfig{0, {}, false}, "", false});
    gt::register_config("cols", gt::SignalConfig{gt::ShardConfig{1, {}, false}, "", false});
    gt::register_config("rep", gt::SignalConfig{gt::ShardConfig{0, {}, true}, "", false});
    gt::register_config("two", gt::SignalConfig{gt::ShardConfig{0, {0, 2}, false}, "", false});
    gt::register_config("stage0", gt::SignalConfig{gt::ShardConfig{0, {0}, false}, "stage0_bwd", false});
    gt::register_config("stage1", gt::SignalConfig{gt::ShardConfig{0, {1}, false}, "stage1_bwd", false});
    gt::register_config("stage0_bwd", gt::SignalConfig{gt::ShardConfig{0, {2}, false}, "", false});
    gt::register_config("stage1_bwd", gt::SignalConfig{gt::ShardConfig{0, {2}, false}, "", false});
    return true;
  }();
  (void)ready;
  return d;
}

void expect_close(const gt::Tensor& got, const gt::Tensor& want, double tol = 1e-4) {
  REQUIRE(got.sizes() == want.sizes());
  REQUIRE(got.dtype() == want.dtype());
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i);
    REQUIRE(std::fabs(g[i] - w[i]) <= tol * (1 + std::fabs(w[i])));
  }
}

// A random tensor made in a scope (sharded there) and the same values made on one worker.
std::pair<gt::Tensor, gt::Tensor> pair_randn(const char* scope, std::vector<int64_t> shape, uint64_t seed) {
  gt::manual_seed(seed);
  gt::Tensor plain = gt::randn(shape);
  gt::manual_seed(seed);
  gt::signal::Scope s(scope);
  gt::Tensor sharded = gt::randn(shape);
  return {sharded, plain};
}

// Per worker, indexed by worker id (replies arrive in any order).
std::vector<gt::v1::WorkerStats> raw_stats() {
  std::vector<gt::v1::WorkerStats> s = sorted_worker_stats(daemons().address());
  REQUIRE(s.size() == kWorkers);
  return s;
}

gt::v1::DispatcherStats dispatcher_stats() {
  RawClient c(daemons().address());
  REQUIRE(c.hello().kind_case() == gt::v1::ServerMessage::kWelcome);
  return c.request(gt::v1::Request::STATS).dispatcher();
}

}  // namespace

TEST_CASE("sharded creation: same random values, each worker holds only its slice", "[sharding]") {
  daemons();
  std::vector<gt::v1::WorkerStats> before = raw_stats();
  auto [x, ref] = pair_randn("rows", {30, 1000}, 7);  // 10 rows per worker: 40000 bytes each
  gt::synchronize();
  std::vector<gt::v1::WorkerStats> after = raw_stats();
  expect_close(x, ref, 0);
  // ref lives whole on the home worker; x adds one 10x1000 slice (40000 bytes, 64 KiB in the
  // allocator's size class) to every worker — never the whole 120000 bytes elsewhere.
  std::vector<int64_t> grew;
  for (int w = 0; w < kWorkers; ++w)
    grew.push_back(static_cast<int64_t>(after[w].bytes()) - static_cast<int64_t>(before[w].bytes()));
  std::sort(grew.begin(), grew.end());
  INFO("growth per worker: " << grew[0] << " " << grew[1] << " " << grew[2]);
  CHECK(grew[0] >= 40000);
  CHECK(grew[1] == grew[0]);
  CHECK(grew[1] <= 65536);
  CHECK(grew[2] >= grew[0] + 120000);
  auto [y, yref] = pair_randn("cols", {4, 10}, 8);  // uneven: 4 + 3 + 3 columns
  expect_close(y, yref, 0);
  auto [z, zref] = pair_randn("rep", {5, 3}, 9);
  expect_close(z, zref, 0);
}

TEST_CASE("elementwise on aligned shards, with replicated and broadcast operands", "[sharding]") {
  daemons();
  auto [a, ar] = pair_randn("rows", {12, 8}, 1);
  auto [b, br] = pair_randn("rows", {12, 8}, 2);
  auto [c, cr] = pair_randn("rep", {8}, 3);
  gt::Tensor one = gt::randn({12, 1});  // single, on the home worker
  expect_close(a + b, ar + br);
  expect_close((a * c).relu(), (ar * cr).relu());
  expect_close(a - one, ar - one);               // broadcast along the non-sharded axis
  expect_close(gt::where(a > b, a, c), gt::where(ar > br, ar, cr));
  auto [d, dr] = pair_randn("cols", {12, 8}, 4);  // misaligned shards: re-placed first
  expect_close(a * d, ar * dr);
  expect_close((a + 1.5).exp() / 2.0, (ar + 1.5).exp() / 2.0);
}

TEST_CASE("matmul: rows x replicated, replicated x cols, contraction (Partial), both sharded",
          "[sharding]") {
  daemons();
  auto [x, xr] = pair_randn("rows", {9, 6}, 11);
  auto [w, wr] = pair_randn("rep", {6, 5}, 12);
  expect_close(x.matmul(w), xr.matmul(wr));                // rows x replicated -> rows
  auto [v, vr] = pair_randn("cols", {6, 7}, 13);
  auto [m, mr] = pair_randn("rep", {4, 6}, 14);
  expect_close(m.matmul(v), mr.matmul(vr));                // replicated x cols -> cols
  auto [k1, k1r] = pair_randn("cols", {5, 9}, 15);         // contraction dim sharded ...
  auto [k2, k2r] = pair_randn("rows", {9, 4}, 16);
  gt::Tensor p = k1.matmul(k2);                            // ... -> Partial(sum)
  expect_close(p, k1r.matmul(k2r));
  expect_close(p * 2.0 + p, (k1r.matmul(k2r)) * 3.0);      // linear ops keep it Partial
  expect_close(p.relu(), k1r.matmul(k2r).relu());          // non-linear: resolved first
  expect_close(x.matmul(v.slice(0, 0, 6)), xr.matmul(vr)); // rows x cols
  auto [bx, bxr] = pair_randn("rows", {3, 4, 5}, 17);      // batch dim sharded
  auto [bw, bwr] = pair_randn("rep", {5, 2}, 18);
  expect_close(bx.matmul(bw), bxr.matmul(bwr));
}

TEST_CASE("reductions over the sharded axis and over others", "[sharding]") {
  daemons();
  auto [x, r] = pair_randn("rows", {10, 6}, 21);
  expect_close(x.sum(1), r.sum(1));          // other axis: local
  expect_close(x.sum(0), r.sum(0));          // sharded axis: Partial
  expect_close(x.sum(), r.sum());
  expect_close(x.mean(0, true), r.mean(0, true));
  expect_close(x.mean(), r.mean());
  expect_close(std::get<0>(x.max(0)), std::get<0>(r.max(0)));          // all-reduce max
  expect_close(x.min(), r.min());
  expect_close(x.argmax(0), r.argmax(0), 0);  // no rule: gathered
  expect_close(std::get<0>(x.max(1, true)), std::get<0>(r.max(1, true)));
}

TEST_CASE("cumsum and sort of a sharded input along either axis", "[sharding]") {
  daemons();
  auto [x, r] = pair_randn("rows", {10, 6}, 25);
  expect_close(x.cumsum(0), r.cumsum(0));    // along the sharded axis: gathered
  expect_close(x.cumsum(-1), r.cumsum(-1));  // along another: local, still sharded
  expect_close(x.argsort(1), r.argsort(1), 0);
  expect_close(x.argsort(0, true), r.argsort(0, true), 0);
  expect_close(std::get<0>(x.topk(3, 1)), std::get<0>(r.topk(3, 1)));
  expect_close(std::get<0>(x.sort(0)).sum(1), std::get<0>(r.sort(0)).sum(1));
  auto [y, yr] = pair_randn("cols", {4, 10}, 26);  // uneven: 4 + 3 + 3 columns
  expect_close(y.cumsum(1), yr.cumsum(1));
  expect_close(y.cumsum(1).sum(0) * 2.0, yr.cumsum(1).sum(0) * 2.0);  // and feeds later ops
}

TEST_CASE("layout ops that keep or destroy the sharded axis", "[sharding]") {
  daemons();
  auto [x, r] = pair_randn("rows", {6, 4, 5}, 31);
  expect_close(x.reshape({6, 20}), r.reshape({6, 20}));   // keeps axis 0
  expect_close(x.reshape({24, 5}), r.reshape({24, 5}));   // destroys it: gathered
  expect_close(x.permute({2, 0, 1}), r.permute({2, 0, 1}));
  expect_close(x.transpose(0, 1).sum(0), r.transpose(0, 1).sum(0));
  expect_close(x.slice(1, 1, 3), r.slice(1, 1, 3));       // another axis: local
  expect_close(x.slice(0, 1, 5, 2), r.slice(0, 1, 5, 2)); // the sharded axis: gathered
  auto [y, yr] = pair_randn("rows", {6, 2, 5}, 32);
  expect_close(gt::cat({x, y}, 1), gt::cat({r, yr}, 1));   // along another axis: local
  auto [y2, y2r] = pair_randn("rows", {6, 4, 5}, 33);
  expect_close(gt::cat({x, y2}, 0), gt::cat({r, y2r}, 0));  // along the sharded axis: gathered
  expect_close(x.to(gt::kInt64), r.to(gt::kInt64), 0);
  gt::Tensor dst = gt::zeros({6, 4, 5});
  dst.copy_(x);                                             // into a single tensor
  expect_close(dst, r);
}

TEST_CASE("strided_copy_ into sharded and replicated tensors writes whole-tensor positions",
          "[sharding][strided]") {
  daemons();
  // Column 1 of a [rows, 256] tensor: positions 1, 257, 513, ... span both shards.
  auto write_col = [](gt::Tensor& dst, const gt::Tensor& src, int64_t rows) {
    const int64_t stride[] = {256};
    gt::detail::run_op(gt::OpId::k_strided_copy_, gt::make_strided(gt::Shape{rows}, stride, 1),
                       {&dst, &src});
  };
  auto [x, r] = pair_randn("two", {4000, 256}, 81);  // 2000 rows on workers 0 and 2
  gt::Tensor col = gt::arange(0, 4000, 1, gt::kFloat32);
  gt::synchronize();
  std::vector<gt::v1::WorkerStats> before = raw_stats();
  write_col(x, col, 4000);  // sharded: gathered to worker 0 first
  write_col(r, col, 4000);  // the same write on one worker
  gt::synchronize();
  std::vector<gt::v1::WorkerStats> after = raw_stats();
  expect_close(x, r, 0);
  std::vector<float> v = x.to_vector<float>();
  for (int64_t i : {int64_t{0}, int64_t{1999}, int64_t{2000}, int64_t{3999}})
    CHECK(v[i * 256 + 1] == i);
  // The destination's old shards are freed: worker 2 gave back its 2000 x 256 floats.
  const int64_t shard = 2000 * 256 * 4;
  INFO("worker 2 bytes " << before[2].bytes() << " -> " << after[2].bytes());
  CHECK(static_cast<int64_t>(before[2].bytes()) - static_cast<int64_t>(after[2].bytes()) >= shard);
  expect_close(x.sum(0), r.sum(0));  // and it keeps working where it now lives
  // A source spread over workers into a single destination.
  auto [s, sr] = pair_randn("rows", {9}, 82);
  gt::Tensor d = gt::zeros({9, 256}), dr = gt::zeros({9, 256});
  write_col(d, s, 9);
  write_col(dr, sr, 9);
  expect_close(d, dr, 0);
  // Replicated: every replica is written (a rows-sharded copy reads each member's own replica).
  auto [z, zr] = pair_randn("rep", {9, 256}, 83);
  write_col(z, sr, 9);
  write_col(zr, sr, 9);
  gt::Tensor per_member;
  {
    gt::signal::Scope sc("rows");
    per_member = z * 1.0;
  }
  expect_close(per_member, zr, 0);
}

TEST_CASE("uneven shards over a subset of workers are fetched assembled in order", "[sharding]") {
  daemons();
  auto [x, r] = pair_randn("two", {7, 3}, 41);  // 4 + 3 rows on workers 0 and 2
  expect_close(x, r, 0);
  gt::Tensor a = gt::arange(0, 21, 1, gt::kFloat32).reshape({7, 3});
  gt::Tensor b;
  {
    gt::signal::Scope s("two");
    b = a * 2.0;  // a (single) is split into two pieces first
  }
  std::vector<float> v = b.to_vector<float>();
  for (int i = 0; i < 21; ++i) CHECK(v[i] == 2.0f * i);
}

TEST_CASE("shard exchange goes worker to worker, never through the dispatcher", "[sharding]") {
  daemons();
  auto [x, r] = pair_randn("rows", {3 * 256, 1024}, 51);  // 3 MiB
  gt::synchronize();
  auto d0 = dispatcher_stats();
  auto s0 = raw_stats();
  gt::Tensor g;
  {
    gt::signal::Scope s("rep");
    g = x * 1.0;  // rows -> replicated: an all-gather of 3 MiB between the workers
  }
  gt::synchronize();
  auto d1 = dispatcher_stats();
  auto s1 = raw_stats();
  uint64_t peer = 0;
  for (int w = 0; w < kWorkers; ++w) peer += s1[w].peer_bytes_received() - s0[w].peer_bytes_received();
  CHECK(peer >= 2 * 3 * 256 * 1024 * 4 / 3 * 2);  // every worker received the others' rows
  uint64_t through = (d1.bytes_from_workers() - d0.bytes_from_workers()) +
                     (d1.bytes_to_workers() - d0.bytes_to_workers());
  INFO("peer bytes " << peer << ", dispatcher<->worker bytes " << through);
  CHECK(through < 64 * 1024);  // instructions and acks only: no payload
  expect_close(g.slice(0, 0, 8), r.slice(0, 0, 8), 0);
}

TEST_CASE("pipeline stages run on their workers, gradients under the backward signal",
          "[sharding][pipeline]") {
  daemons();
  auto ops = [] {
    std::vector<uint64_t> n;
    for (const auto& s : raw_stats()) n.push_back(s.ops_executed());
    return n;
  };
  gt::manual_seed(61);
  gt::Tensor w0 = gt::randn({8, 8}).requires_grad_();
  gt::Tensor w1 = gt::randn({8, 4}).requires_grad_();
  gt::Tensor x = gt::randn({16, 8});
  gt::synchronize();
  std::vector<uint64_t> o0 = ops();
  gt::Tensor h, y;
  {
    gt::signal::Scope s("stage0");
    h = x.matmul(w0).relu();
  }
  gt::synchronize();
  std::vector<uint64_t> o1 = ops();
  {
    gt::signal::Scope s("stage1");
    y = h.matmul(w1).sum();
  }
  gt::synchronize();
  std::vector<uint64_t> o2 = ops();
  y.backward();
  gt::synchronize();
  std::vector<uint64_t> o3 = ops();
  CHECK(o1[0] > o0[0]);  // stage0's ops ran on worker 0
  CHECK(o1[1] == o0[1]);
  CHECK(o2[1] > o1[1]);  // stage1's on worker 1
  CHECK(o3[2] > o2[2]);  // gradient ops under the backward signals: worker 2
  // The gradients equal the ones computed with no sharding at all.
  gt::Tensor w0b = w0.detach().requires_grad_(), w1b = w1.detach().requires_grad_();
  gt::Tensor yb = x.matmul(w0b).relu().matmul(w1b).sum();
  yb.backward();
  expect_close(y, yb);
  expect_close(w0.grad(), w0b.grad());
  expect_close(w1.grad(), w1b.grad());
}

TEST_CASE("data-parallel MLP training matches single-worker losses for 20 steps",
          "[sharding][training]") {
  daemons();
  auto train = [](bool sharded) {
    gt::manual_seed(71);
    gt::nn::Linear l1(16, 32), l2(32, 4);
    gt::Tensor x = gt::randn({48, 16});
    std::vector<int64_t> lv(48);
    for (int i = 0; i < 48; ++i) lv[i] = i % 4;
    gt::Tensor labels = gt::from_vector(lv, {48});
    std::vector<gt::Tensor> params = l1->parameters();
    for (auto& p : l2->parameters()) params.push_back(p);
    gt::optim::SGD opt(params, gt::optim::SGDOptions(0.1));
    gt::Tensor xs = x;
    if (sharded) {
      gt::signal::Scope s("rows");
      xs = x * 1.0;  // the batch, sharded over the workers
    }
    std::vector<float> losses;
    for (int step = 0; step < 20; ++step) {
      opt.zero_grad();
      gt::Tensor logits = l2(l1(xs).relu());
      gt::Tensor loss = gt::nn::functional::cross_entropy(logits, labels);
      loss.backward();
      opt.step();
      losses.push_back(loss.item<float>());
    }
    return losses;
  };
  std::vector<float> single = train(false), dp = train(true);
  for (int i = 0; i < 20; ++i) {
    INFO("step " << i);
    CHECK(std::fabs(single[i] - dp[i]) < 1e-4 * (1 + std::fabs(single[i])));
  }
  CHECK(single.back() < single.front());
}

TEST_CASE("auto-shard: creations shard on axis 0 when divisible, else replicate",
          "[sharding][auto]") {
  Daemons d(DaemonOptions{2, {"--auto-shard"}});
  RawClient c(d.address());
  REQUIRE(c.hello().kind_case() == gt::v1::ServerMessage::kWelcome);
  gt::v1::ClientMessage m;
  auto add = [&](gt::OpId op, uint64_t out, const gt::OpAttrs& a, std::vector<uint64_t> ins = {}) {
    gt::v1::Instr* in = m.mutable_batch()->add_instrs();
    gt::encode_instr(op, a, in);
    in->set_out(out);
    for (uint64_t i : ins) in->add_inputs(i);
  };
  add(gt::OpId::k_randn, 1, gt::make_random(gt::Shape{1000, 100}, gt::DType::kFloat32, 5, 0));
  add(gt::OpId::k_randn, 2, gt::make_random(gt::Shape{999, 100}, gt::DType::kFloat32, 5, 0));
  add(gt::OpId::k_sum, 3, gt::make_reduce(0, false), {1});
  c.send(m);
  REQUIRE(c.request(gt::v1::Request::SYNC).errors_size() == 0);
  auto stats = c.worker_stats();
  REQUIRE(stats.size() == 2);
  for (const auto& s : stats) {
    // 500 rows of tensor 1 (200000 bytes, a 256 KiB block) and a whole replica of tensor 2
    // (399600 bytes, 512 KiB), plus the small partial sums — never all of tensor 1 (another
    // 256 KiB at least).
    CHECK(s.bytes() < 262144 + 524288 + 4096);
    CHECK(s.bytes() >= 200000 + 399600);
  }
  gt::v1::Reply r1 = c.request(gt::v1::Request::FETCH, 1);
  REQUIRE(r1.errors_size() == 0);
  std::vector<float> v(r1.tensor().data().size() / 4);
  std::memcpy(v.data(), r1.tensor().data().data(), v.size() * 4);
  REQUIRE(v.size() == 100000);
  for (size_t i : {size_t{0}, size_t{49999}, size_t{50000}, size_t{99999}})
    CHECK(v[i] == gt::philox::normal(5, 0, i));  // the unsharded tensor's values
  gt::v1::Reply r3 = c.request(gt::v1::Request::FETCH, 3);  // a Partial resolved for the fetch
  REQUIRE(r3.errors_size() == 0);
  std::vector<float> col(100);
  std::memcpy(col.data(), r3.tensor().data().data(), 400);
  double want = 0;
  for (int row = 0; row < 1000; ++row) want += v[row * 100 + 7];
  CHECK(col[7] == Approx(want).epsilon(1e-4));
}

TEST_CASE("host-staged peer exchange (the GPU workers' path) trains data parallel like one worker",
          "[sharding][staging]") {
  // Two workers with peer_staging: every communication instruction copies its input to a host
  // buffer, runs the TCP link, and uploads through the backend's host_chunk op, as a CUDA worker
  // does. gt-bench-dp trains the same MLP on 1 worker and data parallel on 2 and exits non-zero
  // when the losses differ; it also reports the bytes the workers exchanged.
  Daemons d(DaemonOptions{2, {}, {"--peer-staging"}, {}});
  DpRun run = run_dp_bench(d, 6);
  INFO(run.out);
  CHECK(run.rc == 0);
  CHECK(run.bytes_per_step > 0);  // shards really moved, through the staging
}
