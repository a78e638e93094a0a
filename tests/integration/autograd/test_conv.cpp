// conv2d / max_pool2d / avg_pool2d / batch_norm (functional composites) and the Conv2d,
// BatchNorm, pooling and Flatten modules: values against direct host loops in double,
// gradients against finite differences through GT, running statistics against their closed
// form, module initialization bounds and errors.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ag_test_util.h"

using namespace agt;
namespace F = gt::nn::functional;
namespace nn = gt::nn;

namespace {

struct ConvCase {
  int64_t n, c, h, w, oc, kh, kw, sh, sw, ph, pw, dh, dw, groups;
};

// Direct convolution: out[b, o, y, x] = bias[o] + sum over the group's channels and the kernel.
std::vector<double> conv_ref(const ConvCase& k, const std::vector<double>& x,
                             const std::vector<double>& w, const std::vector<double>& b,
                             int64_t& oh, int64_t& ow) {
  oh = (k.h + 2 * k.ph - k.dh * (k.kh - 1) - 1) / k.sh + 1;
  ow = (k.w + 2 * k.pw - k.dw * (k.kw - 1) - 1) / k.sw + 1;
  const int64_t cg = k.c / k.groups, og = k.oc / k.groups;
  std::vector<double> out;
  for (int64_t bi = 0; bi < k.n; ++bi)
    for (int64_t o = 0; o < k.oc; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          double s = b[o];
          const int64_t g = o / og;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                const int64_t yy = y * k.sh + i * k.dh - k.ph, xx = xo * k.sw + j * k.dw - k.pw;
                if (yy < 0 || yy >= k.h || xx < 0 || xx >= k.w) continue;
                const int64_t ch = g * cg + ci;
                s += x[((bi * k.c + ch) * k.h + yy) * k.w + xx] *
                     w[((o * cg + ci) * k.kh + i) * k.kw + j];
              }
          out.push_back(s);
        }
  return out;
}

std::vector<double> rnd(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(-64, 64);
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(u(rng) / 32.0);  // exact in float32
  return v;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])));
  }
}

}  // namespace

TEST_CASE("conv2d equals direct convolution: stride, padding, dilation, groups", "[nn][conv]") {
  daemons();
  const ConvCase cases[] = {
      {2, 3, 6, 5, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1}, {1, 2, 7, 7, 3, 3, 2, 2, 1, 1, 2, 1, 1, 1},
      {2, 4, 8, 8, 6, 3, 3, 1, 2, 2, 1, 2, 1, 2}, {1, 3, 5, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 3},
      {1, 1, 4, 6, 2, 1, 1, 2, 3, 0, 0, 1, 1, 1}};
  uint32_t seed = 1;
  for (const ConvCase& k : cases) {
    const auto x = rnd(k.n * k.c * k.h * k.w, seed++);
    const auto w = rnd(k.oc * (k.c / k.groups) * k.kh * k.kw, seed++);
    const auto b = rnd(k.oc, seed++);
    int64_t oh = 0, ow = 0;
    const auto want = conv_ref(k, x, w, b, oh, ow);
    gt::Tensor y = F::conv2d(tensor(x, {k.n, k.c, k.h, k.w}),
                             tensor(w, {k.oc, k.c / k.groups, k.kh, k.kw}), tensor(b, {k.oc}),
                             {k.sh, k.sw}, {k.ph, k.pw}, {k.dh, k.dw}, k.groups);
    CHECK(y.sizes() == std::vector<int64_t>{k.n, k.oc, oh, ow});
    check_close(host(y), want, 1e-5);
  }
  // Unbatched [C, H, W] input gives [out, oh, ow].
  gt::Tensor u = F::conv2d(gt::ones({2, 4, 4}), gt::ones({3, 2, 3, 3}));
  CHECK(u.sizes() == std::vector<int64_t>{3, 2, 2});
  check_close(host(u), std::vector<double>(12, 18.0), 0);
}

TEST_CASE("conv2d, pooling and batch_norm gradients match finite differences", "[nn][conv]") {
  gradcheck({"conv2d stride 2 padding 1 groups 2",
             {{{2, 2, 5, 4}, spread_values(80, 11, -2, 2, false, 0.01)},
              {{4, 1, 3, 3}, spread_values(36, 12, -2, 2, false, 0.01)},
              {{4}, spread_values(4, 13)}},
             [](const std::vector<gt::Tensor>& t) {
               return F::conv2d(t[0], t[1], t[2], {2}, {1}, {1}, 2);
             }});
  gradcheck({"conv2d dilation 2",
             {{{1, 2, 6, 6}, spread_values(72, 14, -2, 2, false, 0.01)},
              {{2, 2, 2, 2}, spread_values(16, 15)}},
             [](const std::vector<gt::Tensor>& t) {
               return F::conv2d(t[0], t[1], gt::Tensor(), {1}, {0}, {2});
             }});
  // Distinct values (gap 0.06 > 2 eps): the window maxima do not change under a perturbation.
  gradcheck({"max_pool2d 3x3 stride 2 padding 1",
             {{{1, 2, 5, 5}, spread_values(50, 16, -4, 4, false, 0.06)}},
             [](const std::vector<gt::Tensor>& t) { return F::max_pool2d(t[0], {3}, {2}, {1}); }});
  gradcheck({"avg_pool2d without padding counts",
             {{{2, 1, 5, 4}, spread_values(40, 17, -2, 2, false, 0.01)}},
             [](const std::vector<gt::Tensor>& t) {
               return F::avg_pool2d(t[0], {3, 2}, {1}, {1}, /*ceil_mode=*/false, /*count_include_pad=*/false);
             }});
  gradcheck({"batch_norm training",
             {{{4, 3, 2, 2}, spread_values(48, 18, -2, 2, false, 0.01)},
              {{3}, positive_values(3, 19)},
              {{3}, spread_values(3, 20)}},
             [](const std::vector<gt::Tensor>& t) {
               return F::batch_norm(t[0], gt::Tensor(), gt::Tensor(), t[1], t[2], true);
             },
             1e-2, 1e-2, 2e-2});
}

TEST_CASE("max_pool2d and avg_pool2d values", "[nn][conv]") {
  daemons();
  std::vector<double> v(16);
  for (int i = 0; i < 16; ++i) v[static_cast<size_t>(i)] = i;
  gt::Tensor x = tensor(v, {1, 1, 4, 4});
  check_close(host(F::max_pool2d(x, {2})), {5, 7, 13, 15}, 0);
  check_close(host(F::avg_pool2d(x, {2})), {2.5, 4.5, 10.5, 12.5}, 0);
  // Padding: -inf never wins the max; zeros count in the mean unless count_include_pad = false.
  check_close(host(F::max_pool2d(x, {3}, {3}, {1})), {5, 7, 13, 15}, 0);
  check_close(host(F::avg_pool2d(x, {2}, {2}, {1})), {0.0, 0.75, 0.75, 3, 7.5, 4.5, 3, 6.75, 3.75},
              1e-6);
  check_close(host(F::avg_pool2d(x, {2}, {2}, {1}, /*ceil_mode=*/false,
                                 /*count_include_pad=*/false)),
              {0, 1.5, 3, 6, 7.5, 9, 12, 13.5, 15}, 1e-6);
  check_close(host(F::avg_pool2d(x, {2}, {}, {0}, false, true, /*divisor_override=*/2)),
              {5, 9, 21, 25}, 1e-6);
}

TEST_CASE("ceil_mode, return_indices and padding 'same' against closed forms", "[nn][conv]") {
  daemons();
  std::vector<double> v(25);
  for (int i = 0; i < 25; ++i) v[static_cast<size_t>(i)] = i;  // x[r][c] = 5 r + c
  gt::Tensor x = tensor(v, {1, 1, 5, 5});
  // 2x2 windows, stride 2, ceil_mode: 3x3 outputs, the last row / column of windows one wide.
  // Window (r, c) covers rows 2r..min(2r+1, 4), columns likewise.
  std::vector<double> maxes, means;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) {
      const int r1 = std::min(2 * r + 1, 4), c1 = std::min(2 * c + 1, 4);
      maxes.push_back(5 * r1 + c1);
      double sum = 0, n = 0;
      for (int i = 2 * r; i <= r1; ++i)
        for (int j = 2 * c; j <= c1; ++j) sum += 5 * i + j, ++n;
      means.push_back(sum / n);  // the divisor: the window within the input
    }
  check_close(host(F::max_pool2d(x, {2}, {2}, {0}, {1}, /*ceil_mode=*/true)), maxes, 0);
  check_close(host(F::avg_pool2d(x, {2}, {2}, {0}, /*ceil_mode=*/true)), means, 1e-6);
  // The indices are positions in the 5x5 plane: here the values themselves.
  auto [values, indices] = F::max_pool2d_with_indices(x, {2}, {2}, {0}, {1}, true);
  CHECK(indices.dtype() == gt::kInt64);
  CHECK(indices.sizes() == std::vector<int64_t>{1, 1, 3, 3});
  check_close(host(indices), maxes, 0);
  check_close(host(values), maxes, 0);
  nn::MaxPool2d pool(gt::Dims{2}, gt::Dims{2}, gt::Dims{0}, gt::Dims{1}, true);
  check_close(host(std::get<1>(pool->forward_with_indices(x))), maxes, 0);

  // padding "same" with a 2x2 kernel of ones: the extra row / column of zeros is after.
  gt::Tensor w = gt::ones({1, 1, 2, 2});
  std::vector<double> sums;
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 5; ++c) {
      double s = 0;
      for (int i = r; i <= std::min(r + 1, 4); ++i)
        for (int j = c; j <= std::min(c + 1, 4); ++j) s += 5 * i + j;
      sums.push_back(s);
    }
  check_close(host(F::conv2d(x, w, gt::Tensor(), {1}, gt::kSame)), sums, 1e-5);
  nn::Conv2d same(nn::Conv2dOptions(1, 2, {3}).padding(gt::kSame));
  CHECK(same(x).sizes() == std::vector<int64_t>{1, 2, 5, 5});
  CHECK(F::conv2d(x, w, gt::Tensor(), {1}, gt::kValid).sizes() == std::vector<int64_t>{1, 1, 4, 4});
  CHECK_THROWS_WITH(F::conv2d(x, w, gt::Tensor(), {2}, gt::kSame), Catch::Contains("strided"));
}

TEST_CASE("BatchNorm2d: batch statistics, running statistics and eval", "[nn][conv]") {
  daemons();
  nn::BatchNorm2d bn(2, 1e-5, 0.25);
  const auto v = rnd(2 * 2 * 3, 30);  // [N=2, C=2, 3, 1]
  gt::Tensor x = tensor(v, {2, 2, 3, 1});
  const std::vector<double> y = host(bn(x));
  std::vector<double> mean(2), var(2), unbiased(2);
  for (int c = 0; c < 2; ++c) {
    std::vector<double> xs;
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 3; ++i) xs.push_back(v[static_cast<size_t>((b * 2 + c) * 3 + i)]);
    double m = 0, s = 0;
    for (double e : xs) m += e / 6;
    for (double e : xs) s += (e - m) * (e - m);
    mean[c] = m, var[c] = s / 6, unbiased[c] = s / 5;
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 3; ++i) {
        const size_t at = static_cast<size_t>((b * 2 + c) * 3 + i);
        CHECK(std::abs(y[at] - (v[at] - m) / std::sqrt(var[c] + 1e-5)) < 1e-4);
      }
  }
  check_close(host(bn->running_mean), {0.25 * mean[0], 0.25 * mean[1]}, 1e-6);
  check_close(host(bn->running_var), {0.75 + 0.25 * unbiased[0], 0.75 + 0.25 * unbiased[1]}, 1e-6);
  CHECK(host(bn->num_batches_tracked) == std::vector<double>{1});
  bn->eval();
  const std::vector<double> e = host(bn(x));
  const std::vector<double> rm = host(bn->running_mean), rv = host(bn->running_var);
  for (size_t at = 0; at < v.size(); ++at) {
    const size_t c = (at / 3) % 2;
    CHECK(std::abs(e[at] - (v[at] - rm[c]) / std::sqrt(rv[c] + 1e-5)) < 1e-4);
  }
  CHECK(host(bn->num_batches_tracked) == std::vector<double>{1});  // eval does not count
  std::vector<std::string> names;
  for (const auto& [name, t] : bn->state_dict()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"weight", "bias", "running_mean", "running_var",
                                          "num_batches_tracked"});
}

TEST_CASE("Conv2d module: options builder, init bounds, a small CNN's shapes", "[nn][conv]") {
  daemons();
  gt::manual_seed(3);
  nn::Conv2d conv(nn::Conv2dOptions(3, 8, {3}).padding({1}).bias(false));
  CHECK(conv->weight.sizes() == std::vector<int64_t>{8, 3, 3, 3});
  CHECK_FALSE(conv->bias.defined());
  const std::vector<double> w = host(conv->weight);
  const double bound = 1 / std::sqrt(27.0);
  const double top = std::abs(*std::max_element(w.begin(), w.end(), [](double a, double b) {
    return std::abs(a) < std::abs(b);
  }));
  CHECK(top <= bound);
  CHECK(top > 0.8 * bound);
  nn::Sequential model(nn::Conv2d(1, 4, gt::Dims{3}), nn::BatchNorm2d(4), nn::ReLU(),
                       nn::MaxPool2d(gt::Dims{2}), nn::AvgPool2d(gt::Dims{1}), nn::Flatten(),
                       nn::Linear(4 * 3 * 3, 2));
  CHECK(model(gt::randn({5, 1, 8, 8})).sizes() == std::vector<int64_t>{5, 2});
  CHECK(model->parameters().size() == 6);
}

TEST_CASE("conv2d, pooling and batch norm refuse bad shapes with clear errors", "[nn][conv]") {
  daemons();
  gt::Tensor x = gt::zeros({1, 3, 5, 5});
  CHECK_THROWS_WITH(F::conv2d(x, gt::zeros({4, 2, 3, 3})), Catch::Contains("groups"));
  CHECK_THROWS_WITH(F::conv2d(x, gt::zeros({4, 3, 7, 7})), Catch::Contains("larger than the padded"));
  CHECK_THROWS_WITH(F::conv2d(gt::zeros({5, 5}), gt::zeros({1, 1, 3, 3})), Catch::Contains("3-d"));
  CHECK_THROWS_WITH(F::conv2d(x, gt::zeros({4, 3, 3, 3}), gt::zeros({3})), Catch::Contains("bias"));
  CHECK_THROWS_WITH(F::conv2d(x, gt::zeros({4, 3, 3, 3}), gt::Tensor(), {0}), Catch::Contains("positive"));
  CHECK_THROWS_WITH(F::max_pool2d(x, {2}, {}, {2}), Catch::Contains("half of the kernel"));
  CHECK_THROWS_WITH(F::avg_pool2d(gt::zeros({1, 1, 4, 4}, gt::kInt64), {2}), Catch::Contains("floating"));
  CHECK_THROWS_WITH(nn::BatchNorm1d(3)(gt::zeros({1, 3})), Catch::Contains("more than 1 value"));
  CHECK_THROWS_WITH(nn::BatchNorm2d(3)(gt::zeros({2, 3})), Catch::Contains("4-d"));
  CHECK_THROWS_WITH(nn::BatchNorm2d(4)(gt::zeros({2, 3, 2, 2})), Catch::Contains("4 channels"));
  CHECK_THROWS_WITH(nn::Conv2d(3, 4, gt::Dims{3, 3, 3}), Catch::Contains("kernel_size"));
  CHECK_THROWS_WITH(F::batch_norm(x, gt::Tensor(), gt::Tensor()), Catch::Contains("running_mean"));
}
