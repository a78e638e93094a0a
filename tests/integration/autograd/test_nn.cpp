// nn modules: parameter trees, init, train/eval, zero_grad, forward values against host
// references, and state-dict files (round trip, validation errors).
#include <unistd.h>

#include <cmath>
#include <fstream>

#include "ag_test_util.h"

using gt::Tensor;
namespace nn = gt::nn;

namespace {

// Built both ways: Sequential(modules...) and push_back of a holder / a shared_ptr.
nn::Sequential mlp() {
  nn::Sequential m(nn::Linear(3, 4), nn::ReLU());
  m->push_back(nn::LayerNorm(gt::Dims{4}));
  m->push_back(std::make_shared<nn::DropoutImpl>(0.5));
  m->push_back(nn::Linear(4, 2, false));
  return m;
}

std::string temp_path(const std::string& name) {
  return agt::daemons().dir() + "/" + name + "." + std::to_string(::getpid());
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST_CASE("Module tree: named parameters, children, train/eval, zero_grad", "[nn]") {
  agt::daemons();
  auto m = mlp();
  std::vector<std::string> names;
  for (auto& [n, t] : m->named_parameters()) {
    names.push_back(n);
    CHECK(t.requires_grad());
    CHECK(t.is_leaf());
  }
  CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias", "4.weight"});
  CHECK(m->children().size() == 5);
  CHECK(m->named_parameters(false).empty());
  CHECK(m->is_training());
  m->eval();
  for (auto& c : m->children()) CHECK_FALSE(c->is_training());
  m->train();
  CHECK((*m)[3]->is_training());

  Tensor x = agt::tensor(agt::spread_values(6, 5), {2, 3});
  m->eval();
  m(x).sum().backward();
  for (auto& p : m->parameters()) CHECK(p.grad().defined());
  m->zero_grad(false);
  for (auto& p : m->parameters()) {
    std::vector<double> g = agt::host(p.grad());
    CHECK(std::all_of(g.begin(), g.end(), [](double v) { return v == 0; }));
  }
  m->zero_grad();
  for (auto& p : m->parameters()) CHECK_FALSE(p.grad().defined());
}

TEST_CASE("Linear: PyTorch's default init bounds and y = x W^T + b", "[nn]") {
  agt::daemons();
  gt::manual_seed(3);
  nn::Linear lin(16, 8);
  CHECK(lin->weight.sizes() == std::vector<int64_t>{8, 16});
  CHECK(lin->bias.sizes() == std::vector<int64_t>{8});
  std::vector<double> w = agt::host(lin->weight), b = agt::host(lin->bias);
  const double bound = 1 / std::sqrt(16.0);
  double lo = 1, hi = -1;
  for (double v : w) lo = std::min(lo, v), hi = std::max(hi, v);
  CHECK(lo >= -bound);
  CHECK(hi <= bound);
  CHECK(lo < -0.8 * bound);  // spread over the whole interval
  CHECK(hi > 0.8 * bound);
  for (double v : b) CHECK(std::abs(v) <= bound);

  std::vector<double> xv = agt::spread_values(32, 9);
  Tensor y = lin(agt::tensor(xv, {2, 16}));
  std::vector<double> yv = agt::host(y);
  for (int r = 0; r < 2; ++r)
    for (int o = 0; o < 8; ++o) {
      double acc = b[o];
      for (int i = 0; i < 16; ++i) acc += xv[r * 16 + i] * w[o * 16 + i];
      CHECK(yv[r * 8 + o] == Approx(acc).epsilon(1e-5).margin(1e-6));
    }
}

TEST_CASE("LayerNorm, Embedding and activation modules compute the right values", "[nn]") {
  agt::daemons();
  nn::LayerNorm ln(gt::Dims{4});
  std::vector<double> xv{1, 2, 3, 6, -1, 0, 1, 0};
  std::vector<double> y = agt::host(ln(agt::tensor(xv, {2, 4})));
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < 4; ++i) mean += xv[r * 4 + i] / 4;
    for (int i = 0; i < 4; ++i) var += std::pow(xv[r * 4 + i] - mean, 2) / 4;
    for (int i = 0; i < 4; ++i)
      CHECK(y[r * 4 + i] == Approx((xv[r * 4 + i] - mean) / std::sqrt(var + 1e-5)).margin(1e-5));
  }

  nn::Embedding emb(5, 3);
  std::vector<double> table = agt::host(emb->weight);
  std::vector<double> rows = agt::host(emb(agt::tensor({4, 0, 4}, {3}, gt::kInt64)));
  REQUIRE(rows.size() == 9);
  for (int j = 0; j < 3; ++j) {
    CHECK(rows[j] == Approx(table[12 + j]));
    CHECK(rows[3 + j] == Approx(table[j]));
  }

  Tensor x = agt::tensor({-1, 0.5, 2}, {3});
  std::vector<double> g = agt::host(nn::GELU()(x));
  for (int i = 0; i < 3; ++i) {
    double v = std::vector<double>{-1, 0.5, 2}[i];
    CHECK(g[i] == Approx(0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))).margin(1e-6));
  }
  std::vector<double> gt_ = agt::host(nn::GELU("tanh")(x));
  CHECK(gt_[2] == Approx(0.5 * 2 * (1 + std::tanh(std::sqrt(2 / M_PI) * (2 + 0.044715 * 8)))));
  CHECK(agt::host(nn::SiLU()(x))[2] == Approx(2 / (1 + std::exp(-2.0))));
  CHECK(agt::host(nn::Tanh()(x))[0] == Approx(std::tanh(-1.0)));
  CHECK(agt::host(nn::Sigmoid()(x))[1] == Approx(1 / (1 + std::exp(-0.5))));
  CHECK(agt::host(nn::ReLU()(x)) == std::vector<double>{0, 0.5, 2});
}

TEST_CASE("state dict: save/load round trip through a file", "[nn][state_dict]") {
  agt::daemons();
  const std::string path = temp_path("model.gtsd");
  auto a = mlp();
  a->save(path);
  gt::manual_seed(99);
  auto b = mlp();  // different init
  std::vector<Tensor> handles = b->parameters();
  CHECK(agt::host(handles[0]) != agt::host(a->parameters()[0]));
  b->load(path);
  auto pa = a->parameters(), pb = b->parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    CHECK(agt::host(pa[i]) == agt::host(pb[i]));
    CHECK(pb[i].impl() == handles[i].impl());  // loaded in place: handles stay valid
    CHECK(pb[i].is_leaf());
  }
  // The file follows the documented layout.
  std::string bytes = slurp(path);
  REQUIRE(bytes.size() > 16);
  CHECK(bytes.substr(0, 4) == "GTSD");
  CHECK(bytes[4] == 1);
  CHECK(bytes[8] == 5);  // 5 entries
  CHECK(bytes.substr(16, 4) == std::string("\x08\0\0\0", 4));
  CHECK(bytes.substr(20, 8) == "0.weight");
  std::remove(path.c_str());
}

TEST_CASE("state dict: load validates names, shapes and the file with clear errors",
          "[nn][state_dict]") {
  agt::daemons();
  auto m = mlp();
  nn::StateDict sd = m->state_dict();

  nn::StateDict missing(sd.begin(), sd.end() - 1);
  CHECK_THROWS_WITH(m->load_state_dict(missing), Catch::Contains("missing keys: \"4.weight\""));
  CHECK_NOTHROW(m->load_state_dict(missing, false));

  nn::StateDict extra = sd;
  extra.emplace_back("5.weight", gt::zeros({1}));
  CHECK_THROWS_WITH(m->load_state_dict(extra), Catch::Contains("unexpected keys: \"5.weight\""));

  nn::StateDict wrong = sd;
  wrong[0].second = gt::zeros({3, 4});
  CHECK_THROWS_WITH(m->load_state_dict(wrong),
                    Catch::Contains("\"0.weight\"") && Catch::Contains("[3, 4]") &&
                        Catch::Contains("[4, 3]"));

  // A mismatching file changes nothing.
  const std::string path = temp_path("other.gtsd");
  nn::Linear other(3, 5);
  other->save(path);
  nn::Linear target(3, 4);
  std::vector<double> before = agt::host(target->weight);
  CHECK_THROWS_WITH(target->load(path), Catch::Contains("size/dtype mismatches"));
  CHECK(agt::host(target->weight) == before);

  std::string good = slurp(path);
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << "NOPE" << good.substr(4);
  }
  CHECK_THROWS_WITH(target->load(path), Catch::Contains("bad magic"));
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << good.substr(0, good.size() - 3);
  }
  CHECK_THROWS_WITH(nn::load_state_dict_file(path), Catch::Contains("truncated"));
  CHECK_THROWS_WITH(nn::load_state_dict_file(path + ".absent"), Catch::Contains("cannot open"));
  std::remove(path.c_str());
}

namespace {
// A user module in libtorch's form: NetImpl plus GT_MODULE(Net), children registered by holder.
struct NetImpl : nn::Module {
  NetImpl(int64_t in, int64_t out)
      : fc1(register_module("fc1", nn::Linear(in, 8))),
        fc2(register_module("fc2", nn::Linear(8, out))) {}
  Tensor forward(const Tensor& x) override { return fc2(fc1(x).relu()); }
  nn::Linear fc1, fc2;
};
GT_MODULE(Net);
}  // namespace

TEST_CASE("module holders: value syntax over shared modules, as torch::nn's", "[nn]") {
  agt::daemons();
  nn::Linear fc(3, 2);
  nn::Linear same = fc;  // a copy shares the module
  CHECK(same.ptr() == fc.ptr());
  CHECK(agt::host(same->weight) == agt::host(fc->weight));
  const Tensor x = agt::tensor({1, -2, 0.5}, {1, 3});
  CHECK(agt::host(fc(x)) == agt::host(fc->forward(x)));  // fc(x) is forward
  // y = x W^T + b from the module's own parameters.
  const std::vector<double> w = agt::host(fc->weight), b = agt::host(fc->bias), y = agt::host(fc(x));
  for (int o = 0; o < 2; ++o)
    CHECK(y[o] == Approx(w[o * 3] * 1 - 2 * w[o * 3 + 1] + 0.5 * w[o * 3 + 2] + b[o]).margin(1e-6));

  nn::Linear empty{nullptr};
  CHECK(empty.is_empty());
  CHECK_THROWS_WITH(empty(x), Catch::Contains("empty"));
  empty = fc;
  CHECK_FALSE(empty.is_empty());

  Net net(3, 4);  // children by name, parameters in registration order
  std::vector<std::string> names;
  for (const auto& [name, t] : net->named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"});
  CHECK(net(x).sizes() == std::vector<int64_t>{1, 4});
  nn::Sequential seq(net, nn::ReLU());  // holders of user modules nest too
  CHECK(seq->size() == 2);
  CHECK(agt::host(seq(x)) == agt::host(net(x).relu()));
}
