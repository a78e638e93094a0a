// C++ reductions over several dims at once (sum({0, 2}), mean, var, std, logsumexp) against
// host references; keepdim; negative and unordered dims; a repeated dim is refused.
#include <cmath>

#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

namespace {

// Reduces `a` over `dims` with f(values of one group) -> value.
Ref reduce_over(const Ref& a, const std::vector<int64_t>& dims, bool keepdim,
                const std::function<double(const std::vector<double>&)>& f) {
  const int64_t r = static_cast<int64_t>(a.shape.size());
  std::vector<bool> red(static_cast<size_t>(r), false);
  for (int64_t d : dims) red[static_cast<size_t>(d < 0 ? d + r : d)] = true;
  Shp out_shape, group_shape;
  for (int64_t d = 0; d < r; ++d) {
    if (!red[d]) out_shape.push_back(a.shape[d]);
    else if (keepdim) out_shape.push_back(1);
  }
  std::vector<std::vector<double>> groups(static_cast<size_t>(numel_of(out_shape)));
  const Shp ost = strides_of(out_shape);
  for_each_index(a.shape, [&](const Shp& idx, int64_t lin) {
    int64_t o = 0, k = 0;
    for (int64_t d = 0; d < r; ++d) {
      if (red[d] && !keepdim) continue;
      o += (red[d] ? 0 : idx[d]) * ost[k++];
    }
    groups[static_cast<size_t>(o)].push_back(a.v[lin]);
  });
  Ref out{out_shape, {}};
  for (const auto& g : groups) out.v.push_back(f(g));
  return out;
}

double var_of(const std::vector<double>& g, double correction) {
  double m = 0, s = 0;
  for (double x : g) m += x / static_cast<double>(g.size());
  for (double x : g) s += (x - m) * (x - m);
  return s / (static_cast<double>(g.size()) - correction);
}

}  // namespace

TEST_CASE("sum/mean/var/std/logsumexp over several dims in C++", "[ops][reduce]") {
  daemons();
  const Ref x = rnd_for(gt::kFloat32, {3, 4, 5}, 1500);
  const Tensor t = up(x, gt::kFloat32);
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{0, 2}, {2, 0}, {-1, -2}, {0, 1, 2}, {1}}) {
    for (bool keep : {false, true}) {
      INFO("dims " << shape_str(dims) << " keepdim " << keep);
      CHECK_TENSOR(t.sum(dims, keep), reduce_over(x, dims, keep, ref_sum), gt::kFloat32);
      CHECK_TENSOR(t.mean(dims, keep), reduce_over(x, dims, keep, ref_mean), gt::kFloat32);
      CHECK_TENSOR(t.var(dims, 1, keep),
                   reduce_over(x, dims, keep, [](const auto& g) { return var_of(g, 1); }),
                   gt::kFloat32);
      CHECK_TENSOR(t.std(dims, 0, keep),
                   reduce_over(x, dims, keep, [](const auto& g) { return std::sqrt(var_of(g, 0)); }),
                   gt::kFloat32);
      CHECK_TENSOR(t.logsumexp(dims, keep), reduce_over(x, dims, keep, [](const auto& g) {
                     double s = 0;
                     for (double v : g) s += std::exp(v);
                     return std::log(s);
                   }),
                   gt::kFloat32);
    }
  }
  // Integer sums stay int64; the gradient of a multi-dim mean is 1 / count everywhere.
  CHECK_TENSOR(up(x, gt::kInt32).sum({0, 1}), reduce_over(to_dtype(x, gt::kInt32), {0, 1}, false, ref_sum),
               gt::kInt64);
  Tensor leaf = up(x, gt::kFloat32).requires_grad_(true);
  leaf.mean({0, 2}).sum().backward();
  CHECK_TENSOR(leaf.grad(), map1(x, [](double) { return 1.0 / 15; }), gt::kFloat32);
  CHECK_THROWS_WITH(t.sum({0, -3}), Catch::Contains("repeated"));
  CHECK_THROWS_AS(t.mean({0, 3}), gt::Error);
}
