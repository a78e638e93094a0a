// Reductions through real daemons: sum/mean/max/min/argmax/argmin over all elements and each
// dim (positive and negative), keepdim, every dtype (sum of bool counts), NaN handling.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

namespace {

struct RedOp {
  const char* name;
  Tensor (*all)(const Tensor&);
  Tensor (*dim)(const Tensor&, int64_t, bool);
  double (*ref)(const std::vector<double>&);
};

double argmax_ref(const std::vector<double>& v) { return ref_argext(v, true); }
double argmin_ref(const std::vector<double>& v) { return ref_argext(v, false); }

const std::vector<RedOp>& red_ops() {
  static const std::vector<RedOp> ops{
      {"sum", [](const Tensor& x) { return x.sum(); },
       [](const Tensor& x, int64_t d, bool k) { return gt::sum(x, d, k); }, ref_sum},
      {"mean", [](const Tensor& x) { return gt::mean(x); },
       [](const Tensor& x, int64_t d, bool k) { return x.mean(d, k); }, ref_mean},
      {"max", [](const Tensor& x) { return x.max(); },
       [](const Tensor& x, int64_t d, bool k) { return std::get<0>(x.max(d, k)); }, ref_max},
      {"min", [](const Tensor& x) { return x.min(); },
       [](const Tensor& x, int64_t d, bool k) { return std::get<0>(x.min(d, k)); }, ref_min},
      {"argmax", [](const Tensor& x) { return gt::argmax(x); },
       [](const Tensor& x, int64_t d, bool k) { return x.argmax(d, k); }, argmax_ref},
      {"argmin", [](const Tensor& x) { return x.argmin(); },
       [](const Tensor& x, int64_t d, bool k) { return gt::argmin(x, d, k); }, argmin_ref},
  };
  return ops;
}

gt::DType reduce_dtype(const std::string& op, gt::DType in) {
  if (op == "sum") return is_float_dt(in) ? in : gt::kInt64;
  if (op == "mean") return is_float_dt(in) ? in : gt::kFloat32;
  if (op == "argmax" || op == "argmin") return gt::kInt64;
  return in;
}

// Distinct values (no ties, so argmax/argmin are unambiguous), shuffled; exact in every dtype.
Ref distinct(const Shp& shape, gt::DType d, uint64_t seed) {
  int64_t n = numel_of(shape);
  Ref r{shape, {}};
  for (int64_t i = 0; i < n; ++i) {
    double v = static_cast<double>(i - n / 2);
    r.v.push_back(is_float_dt(d) ? v / 8 : v);
  }
  std::mt19937_64 g(seed);
  std::shuffle(r.v.begin(), r.v.end(), g);
  return r;
}

}  // namespace

GT_OPS_COVERED("sum", "mean", "max", "min", "argmax", "argmin");
TEST_CASE("reductions over all elements and every dim, keepdim, every dtype", "[ops][reduce]") {
  daemons();
  const Shp shape{3, 4, 5};
  uint64_t seed = 500;
  for (gt::DType d : all_dtypes()) {
    // bool inputs: random 0/1 (sum counts); others distinct values (int32/int64 in [-30, 29]).
    Ref x = d == gt::kBool ? rnd(shape, 0, 1, 1, seed++) : distinct(shape, d, seed++);
    Tensor t = up(x, d);
    for (const RedOp& op : red_ops()) {
      std::string name = op.name;
      gt::DType out = reduce_dtype(name, d);
      bool index_op = name == "argmax" || name == "argmin";
      if (d == gt::kBool && index_op) continue;  // refused, as torch: checked separately below
      if (name == "mean" && !is_float_dt(d)) {   // torch.mean refuses integers and bools
        CHECK_THROWS_WITH(op.all(t), Catch::Contains("mean"));
        CHECK_THROWS_WITH(op.dim(t, 0, false), Catch::Contains("mean"));
        continue;
      }
      Tol tol = tol_for(out);
      if (out == gt::kFloat16 || out == gt::kBFloat16) tol = {tol.atol * 4, tol.rtol * 4};
      {
        INFO(name << " of all " << dt_name(d) << shape_str(shape));
        CHECK_TENSOR(op.all(t), to_dtype(reduce_ref(x, std::nullopt, false, op.ref), out), out, tol);
      }
      for (int64_t dim : {0, 1, 2, -1, -2, -3}) {
        for (bool keep : {false, true}) {
          INFO(name << " of " << dt_name(d) << shape_str(shape) << " dim " << dim << " keepdim " << keep);
          CHECK_TENSOR(op.dim(t, dim, keep), to_dtype(reduce_ref(x, dim, keep, op.ref), out), out, tol);
        }
      }
    }
  }
}

TEST_CASE("reductions: bool counts, NaN, ties, large sums, errors", "[ops][reduce]") {
  daemons();
  // Sum of bool counts the trues (int64); mean of bool is refused (torch); max/min of bool are
  // any/all.
  Tensor b = gt::from_vector<bool>({true, false, true, true, false, false}, {2, 3});
  CHECK_TENSOR(b.sum(), ref_of({}, {3}), gt::kInt64);
  CHECK_TENSOR(b.sum(0), ref_of({3}, {2, 0, 1}), gt::kInt64);
  CHECK_TENSOR(b.sum(1, true), ref_of({2, 1}, {2, 1}), gt::kInt64);
  CHECK_THROWS_WITH(b.mean(), Catch::Contains("mean"));
  CHECK_TENSOR(b.to(gt::kFloat32).mean(), ref_of({}, {0.5}), gt::kFloat32);
  CHECK_TENSOR(std::get<0>(b.max(1)), ref_of({2}, {1, 1}), gt::kBool);
  CHECK_TENSOR(std::get<0>(b.min(0)), ref_of({3}, {1, 0, 0}), gt::kBool);
  CHECK_TENSOR(std::get<0>(b.max(0)), ref_of({3}, {1, 0, 1}), gt::kBool);
  CHECK_TENSOR(b.min(), ref_of({}, {0}), gt::kBool);
  CHECK_TENSOR((gt::ones({1000}) > 0.5).sum(), ref_of({}, {1000}), gt::kInt64);
  // Ties: argmax/argmin give the first occurrence.
  CHECK_TENSOR(gt::from_vector<float>({1, 3, 3, 0, 0, 3}).argmax(), ref_of({}, {1}), gt::kInt64);
  CHECK_TENSOR(gt::from_vector<float>({1, 3, 3, 0, 0, 3}).argmin(), ref_of({}, {3}), gt::kInt64);
  // argmax/argmin of bool are refused, as torch ("argmax_cpu" not implemented for 'Bool')
  CHECK_THROWS_WITH(b.argmax(1), Catch::Contains("argmax"));
  CHECK_THROWS_WITH(b.argmin(), Catch::Contains("argmin"));

  // NaN: max/min propagate it; argmax/argmin point at it.
  for (gt::DType d : {gt::kFloat32, gt::kFloat16, gt::kBFloat16}) {
    INFO("NaN reductions in " << dt_name(d));
    Ref r = ref_of({2, 3}, {1, NAN, 5, -2, 7, 3});
    Tensor t = up(r, d);
    CHECK_TENSOR(t.max(), ref_of({}, {NAN}), d);
    CHECK_TENSOR(t.min(), ref_of({}, {NAN}), d);
    CHECK_TENSOR(t.argmax(), ref_of({}, {1}), gt::kInt64);
    CHECK_TENSOR(t.argmin(), ref_of({}, {1}), gt::kInt64);
    CHECK_TENSOR(std::get<0>(t.max(1)), ref_of({2}, {NAN, 7}), d);
    CHECK_TENSOR(std::get<0>(t.min(0)), ref_of({3}, {-2, NAN, 3}), d);
    CHECK_TENSOR(t.argmax(1), ref_of({2}, {1, 1}), gt::kInt64);
    CHECK_TENSOR(t.argmax(0, true), ref_of({1, 3}, {0, 0, 0}), gt::kInt64);
    CHECK_TENSOR(t.argmin(0), ref_of({3}, {1, 0, 1}), gt::kInt64);
    CHECK_TENSOR(t.sum(1), ref_of({2}, {NAN, 8}), d);
  }

  // A long float32 sum (accumulation accuracy) and an int64 sum beyond 2^53.
  Ref big = rnd({100000}, -256, 256, 64, 42);
  CHECK_TENSOR(up(big, gt::kFloat32).sum(), reduce_ref(big, std::nullopt, false, ref_sum), gt::kFloat32,
               Tol{1e-2, 1e-5});
  CHECK_TENSOR(up(big, gt::kFloat32).mean(), reduce_ref(big, std::nullopt, false, ref_mean), gt::kFloat32,
               Tol{1e-6, 1e-4});
  const int64_t huge = (int64_t{1} << 60) + 1;
  CHECK(gt::from_vector<int64_t>({huge, 2, -1}).sum().item<int64_t>() == huge + 1);
  CHECK(gt::from_vector<int64_t>({huge, huge - 1}).max().item<int64_t>() == huge);
  CHECK(gt::from_vector<int64_t>({huge - 1, huge}).argmax().item<int64_t>() == 1);
  // int32 sums widen to int64 (no overflow).
  CHECK(gt::from_vector<int32_t>({INT32_MAX, INT32_MAX, 2}).sum().item<int64_t>() ==
        int64_t{INT32_MAX} * 2 + 2);

  // Errors at the call site.
  CHECK_THROWS_AS(gt::ones({2, 3}).sum(2), gt::Error);
  CHECK_THROWS_AS(gt::ones({2, 3}).argmax(-3), gt::Error);
  CHECK_THROWS_AS(gt::zeros({0, 3}).max(), gt::Error);
  CHECK_THROWS_AS(gt::zeros({0, 3}).argmin(0), gt::Error);
}
