// Indexing primitives (index_select gather scatter_add index_add one_hot), masked_fill, clamp,
// expand, var and logsumexp through real daemons against host references written here; index
// values out of range fail the op on the worker (reported at the fetch, naming the op) and leave
// the session usable; the composites built on these primitives (embedding, nll_loss,
// cross_entropy, softmax family) against host formulas.
#include <cmath>
#include <limits>
#include <vector>

#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;
namespace F = gt::nn::functional;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

Shp with_dim(Shp s, int64_t d, int64_t v) {
  s[static_cast<size_t>(d)] = v;
  return s;
}

int64_t offset_of(const Shp& shape, const Shp& idx) {
  Shp st = strides_of(shape);
  int64_t o = 0;
  for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * st[d];
  return o;
}

Ref index_select_ref(const Ref& x, int64_t d, const std::vector<int64_t>& index) {
  Ref r{with_dim(x.shape, d, static_cast<int64_t>(index.size())), {}};
  for_each_index(r.shape, [&](const Shp& idx, int64_t) {
    Shp i = idx;
    i[d] = index[idx[d]];
    r.v.push_back(x.v[offset_of(x.shape, i)]);
  });
  return r;
}

// torch.gather: out[i] = x[i with i[d] replaced by index[i]], out has the index's shape.
Ref take_along_ref(const Ref& x, int64_t d, const Ref& index) {
  Ref r{index.shape, {}};
  for_each_index(index.shape, [&](const Shp& idx, int64_t lin) {
    Shp i = idx;
    i[d] = static_cast<int64_t>(index.v[lin]);
    r.v.push_back(x.v[offset_of(x.shape, i)]);
  });
  return r;
}

// `combine(old, src)`: + for numbers, or for bool.
double combine(double a, double b, gt::DType dt) {
  return dt == gt::kBool ? ((a != 0 || b != 0) ? 1 : 0) : a + b;
}

Ref scatter_add_ref(const Ref& x, int64_t d, const Ref& index, const Ref& src, gt::DType dt) {
  Ref r = x;
  for_each_index(index.shape, [&](const Shp& idx, int64_t lin) {
    Shp i = idx;
    i[d] = static_cast<int64_t>(index.v[lin]);
    double& o = r.v[offset_of(x.shape, i)];
    o = combine(o, src.v[offset_of(src.shape, idx)], dt);
  });
  return r;
}

Ref index_add_ref(const Ref& x, int64_t d, const std::vector<int64_t>& index, const Ref& src,
                  gt::DType dt) {
  Ref r = x;
  for_each_index(src.shape, [&](const Shp& idx, int64_t lin) {
    Shp i = idx;
    i[d] = index[idx[d]];
    double& o = r.v[offset_of(x.shape, i)];
    o = combine(o, src.v[lin], dt);
  });
  return r;
}

std::vector<int64_t> idx_values(int64_t count, int64_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<int64_t> v;
  for (int64_t i = 0; i < count; ++i) v.push_back(static_cast<int64_t>(g() % n));
  return v;
}

Ref idx_ref(const Shp& shape, int64_t n, uint64_t seed) {
  Ref r{shape, {}};
  for (int64_t v : idx_values(numel_of(shape), n, seed)) r.v.push_back(static_cast<double>(v));
  return r;
}

Tensor idx_tensor(const std::vector<int64_t>& v, gt::DType dt = gt::kInt64) {
  return gt::from_vector<int64_t>(v, gt::Dims{static_cast<int64_t>(v.size())}, dt);
}

// Values exact in every dtype and in sums of a few of them (integers in [-20, 20], bools 0/1).
Ref small_ints(gt::DType d, const Shp& shape, uint64_t seed) {
  return d == gt::kBool ? rnd(shape, 0, 1, 1, seed) : rnd(shape, -20, 20, 1, seed);
}

double ref_var(const std::vector<double>& v, double correction) {
  if (v.empty()) return std::nan("");
  const double mean = ref_mean(v);
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return ss / std::max(0.0, static_cast<double>(v.size()) - correction);
}

double ref_lse(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::exp(x);
  return std::log(s);
}

void check_worker_error(const Tensor& t, const std::string& op) {
  INFO("expecting a worker-side " << op << " error");
  CHECK_THROWS_WITH(t.to_vector<double>(), Catch::Contains(op) && Catch::Contains("out of"));
}

}  // namespace

GT_OPS_COVERED("index_select", "gather");
TEST_CASE("index_select and gather: every dtype, dims, int32/int64 indices", "[ops][indexing]") {
  daemons();
  const Shp xs{3, 4, 5};
  uint64_t seed = 900;
  for (gt::DType d : all_dtypes()) {
    Ref x = rnd_for(d, xs, seed++);
    Tensor t = up(x, d);
    for (int64_t dim : {0, 1, 2, -1}) {
      const int64_t dd = dim < 0 ? dim + 3 : dim;
      INFO(dt_name(d) << " dim " << dim);
      std::vector<int64_t> iv = idx_values(7, xs[dd], seed++);
      CHECK_TENSOR(t.index_select(dim, idx_tensor(iv)), index_select_ref(x, dd, iv), d);
      CHECK_TENSOR(gt::index_select(t, dim, idx_tensor(iv, gt::kInt32)), index_select_ref(x, dd, iv), d);
      Shp is = with_dim(Shp{2, 3, 4}, dd, 6);
      Ref ir = idx_ref(is, xs[dd], seed++);
      CHECK_TENSOR(t.gather(dim, up(ir, gt::kInt64)), take_along_ref(x, dd, ir), d);
      CHECK_TENSOR(gt::gather(t, dim, up(ir, gt::kInt32)), take_along_ref(x, dd, ir), d);
    }
  }
  // A 0-d index keeps the dim (extent 1); empty indices give empty results.
  Ref x = ref_of({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor t = up(x, gt::kFloat32);
  CHECK_TENSOR(t.index_select(1, gt::scalar_tensor(2, gt::kInt64)), ref_of({2, 1}, {3, 6}), gt::kFloat32);
  CHECK_TENSOR(t.index_select(0, gt::zeros({0}, gt::kInt64)), ref_of({0, 3}, {}), gt::kFloat32);
  CHECK_TENSOR(t.gather(1, gt::zeros({2, 0}, gt::kInt64)), ref_of({2, 0}, {}), gt::kFloat32);
}

GT_OPS_COVERED("scatter_add", "index_add");
TEST_CASE("scatter_add and index_add accumulate repeated indices, out of place", "[ops][indexing]") {
  daemons();
  const Shp xs{4, 3};
  uint64_t seed = 950;
  for (gt::DType d : all_dtypes()) {
    Ref x = small_ints(d, xs, seed++);
    Tensor t = up(x, d);
    for (int64_t dim : {0, 1, -2}) {
      const int64_t dd = dim < 0 ? dim + 2 : dim;
      INFO(dt_name(d) << " dim " << dim);
      const Shp is = dd == 0 ? Shp{5, 2} : Shp{3, 4};  // longer than x along dim: repeats
      Ref ir = idx_ref(is, xs[dd], seed++);
      Ref src = small_ints(d, dd == 0 ? Shp{5, 3} : Shp{4, 4}, seed++);  // larger than the index
      CHECK_TENSOR(t.scatter_add(dim, up(ir, gt::kInt64), up(src, d)),
                   scatter_add_ref(x, dd, ir, src, d), d);
      std::vector<int64_t> iv = idx_values(6, xs[dd], seed++);
      Ref src2 = small_ints(d, with_dim(xs, dd, 6), seed++);
      CHECK_TENSOR(gt::index_add(t, dim, idx_tensor(iv, gt::kInt32), up(src2, d)),
                   index_add_ref(x, dd, iv, src2, d), d);
    }
    CHECK_TENSOR(t, x, d);  // out of place: the input is unchanged
  }
}

GT_OPS_COVERED("one_hot");
TEST_CASE("one_hot: int64 result, inferred num_classes, other dtypes by cast", "[ops][indexing]") {
  daemons();
  Tensor l = gt::from_vector<int64_t>({2, 0, 3, 3, 1, 0}, {2, 3});
  Ref want{{2, 3, 4}, std::vector<double>(24, 0)};
  const int labels[] = {2, 0, 3, 3, 1, 0};
  for (int i = 0; i < 6; ++i) want.v[i * 4 + labels[i]] = 1;
  CHECK_TENSOR(F::one_hot(l, 4), want, gt::kInt64);
  CHECK_TENSOR(F::one_hot(l), want, gt::kInt64);  // num_classes = max + 1
  CHECK_TENSOR(F::one_hot(l.cast(gt::kInt32), 4, gt::kFloat32), want, gt::kFloat32);
  CHECK_TENSOR(F::one_hot(l, 4, gt::kBool), want, gt::kBool);
  CHECK_TENSOR(F::one_hot(gt::zeros({0}, gt::kInt64), 3), ref_of({0, 3}, {}), gt::kInt64);
  CHECK_THROWS_WITH(F::one_hot(gt::ones({2}), 3), Catch::Contains("one_hot"));
}

GT_OPS_COVERED("masked_fill");
TEST_CASE("masked_fill: broadcast mask, every dtype, value converted", "[ops][masked_fill]") {
  daemons();
  uint64_t seed = 980;
  for (gt::DType d : all_dtypes()) {
    Ref x = rnd_for(d, {3, 4}, seed++);
    Ref m = rnd({4}, 0, 1, 1, seed++);
    const double value = d == gt::kBool ? 1 : is_int_dt(d) ? -7 : -2.5;
    Ref want = map2(x, m, [&](double a, double mk) { return mk != 0 ? value : a; });
    CHECK_TENSOR(up(x, d).masked_fill(up(m, gt::kBool), value), want, d);
    Ref m2 = rnd({2, 1, 4}, 0, 1, 1, seed++);  // the mask broadcasts x too
    CHECK_TENSOR(F::masked_fill(up(x, d), up(m2, gt::kBool), value),
                 map2(x, m2, [&](double a, double mk) { return mk != 0 ? value : a; }), d);
  }
  // A float value into an int tensor truncates; -inf into floats.
  Tensor i = gt::from_vector<int32_t>({1, 2, 3});
  Tensor m = gt::from_vector<bool>({true, false, true});
  CHECK_TENSOR(i.masked_fill(m, 2.75), ref_of({3}, {2, 2, 2}), gt::kInt32);
  CHECK_TENSOR(gt::ones({3}).masked_fill(m, -kInf), ref_of({3}, {-kInf, 1, -kInf}), gt::kFloat32);
  CHECK_THROWS_WITH(i.masked_fill(i, 0), Catch::Contains("masked_fill") && Catch::Contains("bool"));
}

GT_OPS_COVERED("clamp");
TEST_CASE("clamp: optional bounds, integer tensors, lo > hi, NaN", "[ops][clamp]") {
  daemons();
  uint64_t seed = 990;
  for (gt::DType d : {gt::kFloat32, gt::kFloat16, gt::kBFloat16, gt::kInt32, gt::kInt64}) {
    Ref x = rnd_for(d, {4, 5}, seed++);
    Tensor t = up(x, d);
    INFO(dt_name(d));
    if (is_float_dt(d)) {
      CHECK_TENSOR(t.clamp(-1.5, 2.25), map1(x, [](double v) { return std::min(std::max(v, -1.5), 2.25); }), d);
      CHECK_TENSOR(F::clamp(t, std::nullopt, 0.5), map1(x, [](double v) { return std::min(v, 0.5); }), d);
    } else {
      // Integer bounds keep the dtype; a floating bound gives float32 (like torch.clamp).
      CHECK_TENSOR(t.clamp(-3, 7), map1(x, [](double v) { return std::min(std::max(v, -3.0), 7.0); }), d);
      CHECK_TENSOR(t.clamp_min(-2.5), map1(x, [](double v) { return std::max(v, -2.5); }), gt::kFloat32);
    }
    CHECK_TENSOR(t.clamp_min(2).clamp_max(1), map1(x, [](double) { return 1.0; }), d);
  }
  Tensor f = gt::from_vector<float>({NAN, -3, 3});
  CHECK_TENSOR(f.clamp(-1, 1), ref_of({3}, {NAN, -1, 1}), gt::kFloat32);
  // NaN bounds as torch.clamp: a lone one changes nothing, one of two gives NaN everywhere.
  CHECK_TENSOR(f.clamp_min(NAN), ref_of({3}, {NAN, -3, 3}), gt::kFloat32);
  CHECK_TENSOR(f.clamp_max(NAN), ref_of({3}, {NAN, -3, 3}), gt::kFloat32);
  CHECK_TENSOR(f.clamp(NAN, 1), ref_of({3}, {NAN, NAN, NAN}), gt::kFloat32);
  CHECK_TENSOR(f.clamp(-1, NAN), ref_of({3}, {NAN, NAN, NAN}), gt::kFloat32);
  Tensor i = gt::from_vector<int64_t>({1, -2});
  CHECK_TENSOR(i.clamp_min(NAN), ref_of({2}, {1, -2}), gt::kFloat32);  // lifted to float32
  CHECK_THROWS_WITH(f.clamp(std::nullopt, std::nullopt), Catch::Contains("clamp"));
  // bool: integer bounds give int64 and float bounds float32 (torch.clamp); a bool result is
  // refused (it used to refuse any bool input)
  CHECK_TENSOR(gt::ones({2}, gt::kBool).clamp(0, 1), ref_of({2}, {1, 1}), gt::kInt64);
  CHECK_TENSOR(gt::ones({2}, gt::kBool).clamp(std::nullopt, 0.5), ref_of({2}, {0.5, 0.5}), gt::kFloat32);
  CHECK_THROWS_WITH(gt::ones({2}, gt::kBool).clamp(true, true), Catch::Contains("clamp"));
  // int64 bounds are exact beyond 2^53; an int32 bound must fit int32
  const int64_t big = (int64_t{1} << 62) + 1;
  CHECK(gt::zeros({2}, gt::kInt64).clamp(big, std::nullopt).to_vector<int64_t>() ==
        std::vector<int64_t>{big, big});
  CHECK_THROWS_WITH(gt::zeros({2}, gt::kInt32).clamp(int64_t{1} << 40, std::nullopt),
                    Catch::Contains("int32"));
}

GT_OPS_COVERED("expand");
TEST_CASE("expand: leading dims, size-1 dims, -1, 0-d, every dtype", "[ops][expand]") {
  daemons();
  uint64_t seed = 1000;
  for (gt::DType d : all_dtypes()) {
    Ref x = rnd_for(d, {3, 1}, seed++);
    Tensor t = up(x, d);
    auto expanded = [&](const Shp& to) {
      Ref r{to, {}};
      for_each_index(to, [&](const Shp& idx, int64_t) { r.v.push_back(x.v[bcast_offset(x.shape, idx)]); });
      return r;
    };
    CHECK_TENSOR(t.expand({2, 3, 4}), expanded({2, 3, 4}), d);
    CHECK_TENSOR(t.expand({-1, 5}), expanded({3, 5}), d);
    CHECK_TENSOR(t.expand_as(gt::zeros({2, 3, 2})), expanded({2, 3, 2}), d);
    CHECK_TENSOR(t.expand({0, 3, 2}), ref_of({0, 3, 2}, {}), d);
  }
  CHECK_TENSOR(gt::scalar_tensor(2.5).expand({2, 2}), ref_of({2, 2}, {2.5, 2.5, 2.5, 2.5}), gt::kFloat32);
  CHECK_THROWS_WITH(gt::ones({2, 3}).expand({2, 4}), Catch::Contains("expand"));
  CHECK_THROWS_WITH(gt::ones({2, 3}).expand({3}), Catch::Contains("expand"));
  CHECK_THROWS_WITH(gt::ones({3}).expand({-1, 3}), Catch::Contains("expand"));
}

GT_OPS_COVERED("var", "logsumexp");
TEST_CASE("var and logsumexp over all elements and every dim", "[ops][reduce]") {
  daemons();
  const Shp shape{3, 4, 5};
  uint64_t seed = 1010;
  for (gt::DType d : all_dtypes()) {
    Ref x = d == gt::kBool ? rnd(shape, 0, 1, 1, seed++) : rnd(shape, -128, 128, 64, seed++);
    if (is_int_dt(d)) x = rnd(shape, -3, 3, 1, seed++);
    Tensor t = up(x, d);
    const gt::DType out = is_float_dt(d) ? d : gt::kFloat32;
    Tol tol = tol_for(out);
    if (out != gt::kFloat32) tol = {tol.atol * 4, tol.rtol * 4};
    // torch.var refuses integer and bool inputs; logsumexp takes them (float32)
    if (!is_float_dt(d)) CHECK_THROWS_WITH(t.var(), Catch::Contains("var"));
    for (double corr : {1.0, 0.0}) {
      if (!is_float_dt(d)) break;
      auto f = [corr](const std::vector<double>& v) { return ref_var(v, corr); };
      INFO(dt_name(d) << " correction " << corr);
      CHECK_TENSOR(t.var(std::nullopt, corr), to_dtype(reduce_ref(x, std::nullopt, false, f), out), out, tol);
      for (int64_t dim : {0, 1, 2, -1})
        for (bool keep : {false, true})
          CHECK_TENSOR(t.var(dim, corr, keep), to_dtype(reduce_ref(x, dim, keep, f), out), out, tol);
    }
    INFO(dt_name(d) << " logsumexp");
    CHECK_TENSOR(t.logsumexp(), to_dtype(reduce_ref(x, std::nullopt, false, ref_lse), out), out, tol);
    for (int64_t dim : {0, 1, 2, -2})
      for (bool keep : {false, true})
        CHECK_TENSOR(t.logsumexp(dim, keep), to_dtype(reduce_ref(x, dim, keep, ref_lse), out), out, tol);
  }
  // Stability and infinities: computed max-shifted on the worker.
  Tensor big = gt::from_vector<double>({1000, 1000, -kInf, -kInf, 5, kInf}, {3, 2}, gt::kFloat32);
  CHECK_TENSOR(big.logsumexp(1), ref_of({3}, {1000 + std::log(2.0), -kInf, kInf}), gt::kFloat32);
  CHECK_TENSOR(gt::zeros({0, 2}).logsumexp(0), ref_of({2}, {-kInf, -kInf}), gt::kFloat32);
  CHECK_TENSOR(gt::from_vector<float>({4}).var(), ref_of({}, {NAN}), gt::kFloat32);  // 0 / 0
  CHECK_TENSOR(F::var(gt::from_vector<float>({1, 2, 3, 4}), 0, false), ref_of({}, {1.25}), gt::kFloat32);
}

TEST_CASE("index values out of range fail that op on the worker, naming it", "[ops][indexing][errors]") {
  daemons();
  Tensor x = gt::arange(6, gt::kFloat32).reshape({2, 3});
  check_worker_error(x.index_select(0, idx_tensor({0, 2})), "index_select");
  check_worker_error(x.index_select(1, idx_tensor({-1})), "index_select");
  check_worker_error(x.gather(1, gt::from_vector<int64_t>({0, 3}, {2, 1})), "gather");
  check_worker_error(x.scatter_add(0, gt::from_vector<int64_t>({5, 0, 0}, {1, 3}), gt::ones({1, 3})),
                     "scatter_add");
  check_worker_error(x.index_add(1, idx_tensor({7}), gt::ones({2, 1})), "index_add");
  check_worker_error(F::one_hot(idx_tensor({0, 3}), 3), "one_hot");
  check_worker_error(F::one_hot(idx_tensor({-1}), 3), "one_hot");
  // Dependents inherit the error (named after the failing op); the session goes on.
  Tensor bad = x.index_select(0, idx_tensor({9}));
  CHECK_THROWS_WITH((bad * 2.0).sum().item<float>(), Catch::Contains("index_select"));
  check_worker_error(F::embedding(idx_tensor({0, 4}), gt::ones({4, 2})), "index_select");
  check_worker_error(F::cross_entropy(gt::zeros({2, 3}), idx_tensor({1, 3})), "gather");
  CHECK(x.sum().item<float>() == 15);
  // Wrong index dtypes and shapes are call-site errors.
  CHECK_THROWS_WITH(x.index_select(0, gt::zeros({1})), Catch::Contains("index_select"));
  CHECK_THROWS_WITH(x.gather(0, idx_tensor({0})), Catch::Contains("gather"));
  CHECK_THROWS_WITH(x.scatter_add(0, gt::zeros({1, 3}, gt::kInt64), gt::ones({1, 3}, gt::kInt64)),
                    Catch::Contains("scatter_add"));
  CHECK(x.sum().item<float>() == 15);
}

TEST_CASE("composites on the new primitives match host formulas", "[ops][composite]") {
  daemons();
  // logits [3, 4], targets with an ignored row (-100) and class weights.
  const std::vector<double> lg{0.5, -1, 2, 0.25, 1, 1, -0.5, 3, -2, 0, 0.75, 1.5};
  Tensor logits = gt::from_vector<double>(lg, {3, 4}, gt::kFloat32);
  Tensor target = gt::from_vector<int64_t>({2, -100, 3});
  const std::vector<double> w{0.5, 1, 2, 1.5};
  Tensor weight = gt::from_vector<double>(w, {4}, gt::kFloat32);
  std::vector<double> logp(12), lse(3);
  for (int r = 0; r < 3; ++r) {
    lse[r] = ref_lse({lg[r * 4], lg[r * 4 + 1], lg[r * 4 + 2], lg[r * 4 + 3]});
    for (int c = 0; c < 4; ++c) logp[r * 4 + c] = lg[r * 4 + c] - lse[r];
  }
  CHECK_TENSOR(gt::log_softmax(logits, 1), ref_of({3, 4}, logp), gt::kFloat32, Tol{1e-5, 1e-5});
  CHECK_TENSOR(F::logsumexp(logits, -1, true), ref_of({3, 1}, lse), gt::kFloat32, Tol{1e-5, 1e-5});
  std::vector<double> sm(12);
  for (int i = 0; i < 12; ++i) sm[i] = std::exp(logp[i]);
  CHECK_TENSOR(gt::softmax(logits, 1), ref_of({3, 4}, sm), gt::kFloat32, Tol{1e-6, 1e-5});
  // nll / cross entropy: rows 0 and 2 count (targets 2 and 3).
  const double l0 = -logp[2], l2 = -logp[11];
  CHECK(F::cross_entropy(logits, target).item<double>() == Approx((l0 + l2) / 2).epsilon(1e-5));
  CHECK(F::nll_loss(gt::log_softmax(logits, 1), target, {.weight = weight}).item<double>() ==
        Approx((w[2] * l0 + w[3] * l2) / (w[2] + w[3])).epsilon(1e-5));
  CHECK_TENSOR(F::cross_entropy(logits, target, {.reduction = F::Reduction::kNone}),
               ref_of({3}, {l0, 0, l2}), gt::kFloat32, Tol{1e-5, 1e-5});
  CHECK(F::cross_entropy(logits, target, {.reduction = F::Reduction::kSum}).item<double>() ==
        Approx(l0 + l2).epsilon(1e-5));
  // Label smoothing eps: (1 - eps) nll + eps / C * sum_c -logp (ignored rows count 0).
  const double eps = 0.2;
  auto smooth = [&](int r) {
    double s = 0;
    for (int c = 0; c < 4; ++c) s -= logp[r * 4 + c];
    return s;
  };
  const double s0 = (1 - eps) * l0 + eps / 4 * smooth(0), s2 = (1 - eps) * l2 + eps / 4 * smooth(2);
  CHECK(F::cross_entropy(logits, target, {.label_smoothing = eps}).item<double>() ==
        Approx((s0 + s2) / 2).epsilon(1e-5));
  // An ignore_index inside [0, C) ignores that class's rows.
  CHECK(F::cross_entropy(logits, gt::from_vector<int64_t>({2, 0, 3}), {.ignore_index = 0}).item<double>() ==
        Approx((l0 + l2) / 2).epsilon(1e-5));
  // embedding: rows of the table for any index shape.
  Tensor table = gt::arange(8, gt::kFloat32).reshape({4, 2});
  CHECK_TENSOR(F::embedding(gt::from_vector<int64_t>({3, 0, 3, 1}, {2, 2}), table),
               ref_of({2, 2, 2}, {6, 7, 0, 1, 6, 7, 2, 3}), gt::kFloat32);
  CHECK_TENSOR(F::embedding(gt::scalar_tensor(2, gt::kInt64), table), ref_of({2}, {4, 5}), gt::kFloat32);
}
