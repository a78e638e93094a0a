// gt::data (issue 13): TensorDataset and DataLoader in C++ against what they must hold: every
// sample exactly once per epoch, batches of batch_size (the last shorter unless drop_last), the
// rows of all tensors kept together, seeded shuffles reproducible, and a model trained through
// the loader.
#include <algorithm>
#include <set>

#include "ag_test_util.h"
#include "gt/data.h"

using gt::Tensor;
using gt::data::DataLoader;
using gt::data::DataLoaderOptions;
using gt::data::TensorDataset;

namespace {
// x row i = (2i, 2i + 1), y[i] = i: a batch's x rows are checked against its labels.
TensorDataset numbered(int64_t n) {
  return TensorDataset({gt::arange(2 * n, gt::kFloat32).reshape({n, 2}), gt::arange(n)});
}

// The labels of every batch of one epoch, checking each batch's x rows against them.
std::vector<std::vector<int64_t>> epoch(DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (const std::vector<Tensor>& batch : loader) {
    REQUIRE(batch.size() == 2);
    const std::vector<int64_t> y = batch[1].to_vector<int64_t>();
    const std::vector<float> x = batch[0].to_vector<float>();
    REQUIRE(batch[0].sizes() == std::vector<int64_t>{static_cast<int64_t>(y.size()), 2});
    for (size_t i = 0; i < y.size(); ++i) {
      CHECK(x[2 * i] == static_cast<float>(2 * y[i]));
      CHECK(x[2 * i + 1] == static_cast<float>(2 * y[i] + 1));
    }
    out.push_back(y);
  }
  return out;
}
}  // namespace

TEST_CASE("DataLoader batches in order, the last one shorter unless drop_last", "[data]") {
  agt::daemons();
  DataLoader in_order(numbered(10), DataLoaderOptions(4));
  CHECK(in_order.size() == 3);
  CHECK(epoch(in_order) ==
        std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}});
  DataLoader dropped(numbered(10), DataLoaderOptions(4).drop_last(true));
  CHECK(dropped.size() == 2);
  CHECK(epoch(dropped) == std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  DataLoader empty(TensorDataset({gt::zeros({0, 3})}), DataLoaderOptions(4));
  CHECK(empty.begin() == empty.end());
  const auto sample = numbered(10).get(-1);
  CHECK(sample[1].item<int64_t>() == 9);
}

TEST_CASE("DataLoader shuffles each epoch, a seed makes the epochs reproducible", "[data]") {
  agt::daemons();
  DataLoader a(numbered(23), DataLoaderOptions(5).shuffle(true).seed(7));
  DataLoader b(numbered(23), DataLoaderOptions(5).shuffle(true).seed(7));
  const auto a1 = epoch(a), a2 = epoch(a), b1 = epoch(b);
  for (const auto& e : {a1, a2}) {  // every sample once per epoch
    std::vector<int64_t> all;
    for (const auto& batch : e) all.insert(all.end(), batch.begin(), batch.end());
    std::sort(all.begin(), all.end());
    std::vector<int64_t> want(23);
    for (int64_t i = 0; i < 23; ++i) want[static_cast<size_t>(i)] = i;
    CHECK(all == want);
    CHECK(e.size() == 5);
    CHECK(e.back().size() == 3);
  }
  CHECK(a1 != a2);  // a new order every epoch
  CHECK(a1 == b1);  // the same seed, the same first epoch
  DataLoader c(numbered(23), DataLoaderOptions(5).shuffle(true).seed(8));
  CHECK(epoch(c) != a1);
}

TEST_CASE("DataLoader errors", "[data]") {
  agt::daemons();
  CHECK_THROWS_WITH(TensorDataset({gt::zeros({3, 2}), gt::zeros({4})}),
                    Catch::Contains("size mismatch"));
  CHECK_THROWS_WITH(TensorDataset({gt::zeros({})}), Catch::Contains("dim 0"));
  CHECK_THROWS_WITH(TensorDataset({}), Catch::Contains("at least one"));
  CHECK_THROWS_WITH(DataLoader(numbered(3), DataLoaderOptions(0)), Catch::Contains("positive"));
  CHECK_THROWS_WITH(numbered(3).get(3), Catch::Contains("out of range"));
}

TEST_CASE("a linear model trains through the DataLoader", "[data]") {
  agt::daemons();
  // y = 3 x - 1 on 64 points; SGD over shuffled minibatches of 16.
  const Tensor x = gt::linspace(-1, 1, 64).reshape({64, 1});
  const Tensor y = x * 3 - 1;
  gt::nn::Linear model(1, 1);
  gt::optim::SGD opt(model->parameters(), gt::optim::SGDOptions(0.2));
  DataLoader loader(TensorDataset({x, y}), DataLoaderOptions(16).shuffle(true).seed(1));
  auto full_loss = [&] { return gt::nn::functional::mse_loss(model->forward(x), y).item<double>(); };
  const double before = full_loss();
  for (int e = 0; e < 30; ++e)
    for (const auto& batch : loader) {
      opt.zero_grad();
      gt::nn::functional::mse_loss(model->forward(batch[0]), batch[1]).backward();
      opt.step();
    }
  const double after = full_loss();
  CHECK(after < before * 0.01);
  CHECK(std::abs(model->weight.item<double>() - 3.0) < 0.05);
}
