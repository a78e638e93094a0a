// Binary elementwise ops and comparisons through real daemons: every op over a grid of dtype
// pairs and broadcast shapes, scalars on both sides, promotion, NaN/inf cases and int64
// exactness, against a host reference in double precision.
#include <climits>
#include <cmath>
#include <cstdint>
#include <vector>

#include "op_test_util.h"

using namespace gtt;
using gt::Scalar;
using gt::Tensor;

namespace {

enum class Kind { kArith, kTrueDiv, kCompare };

struct BinOp {
  const char* name;
  Kind kind;
  Tensor (*tt)(const Tensor&, const Tensor&);
  Tensor (*ts)(const Tensor&, Scalar);  // tensor op scalar
  Tensor (*st)(Scalar, const Tensor&);  // scalar op tensor; null when the API has no such form
  double (*ref)(double, double);
  double int_scalar, float_scalar;
};

double b2d(bool b) { return b ? 1.0 : 0.0; }

// The operator, method and free-function forms are all exercised.
const std::vector<BinOp>& bin_ops() {
  static const std::vector<BinOp> ops{
      {"add", Kind::kArith, [](const Tensor& a, const Tensor& b) { return a + b; },
       [](const Tensor& a, Scalar s) { return a + s; }, [](Scalar s, const Tensor& b) { return s + b; },
       [](double a, double b) { return a + b; }, 3, -1.5},
      {"sub", Kind::kArith, [](const Tensor& a, const Tensor& b) { return a.sub(b); },
       [](const Tensor& a, Scalar s) { return a - s; }, [](Scalar s, const Tensor& b) { return s - b; },
       [](double a, double b) { return a - b; }, 3, -1.5},
      {"mul", Kind::kArith, [](const Tensor& a, const Tensor& b) { return a * b; },
       [](const Tensor& a, Scalar s) { return a.mul(s); }, [](Scalar s, const Tensor& b) { return s * b; },
       [](double a, double b) { return a * b; }, 3, -1.5},
      {"div", Kind::kTrueDiv, [](const Tensor& a, const Tensor& b) { return a / b; },
       [](const Tensor& a, Scalar s) { return a / s; }, [](Scalar s, const Tensor& b) { return s / b; },
       [](double a, double b) { return a / b; }, 3, -1.5},
      {"pow", Kind::kArith, [](const Tensor& a, const Tensor& b) { return gt::pow(a, b); },
       [](const Tensor& a, Scalar s) { return a.pow(s); }, [](Scalar s, const Tensor& b) { return gt::pow(s, b); },
       [](double a, double b) { return std::pow(a, b); }, 2, 0.5},
      {"maximum", Kind::kArith, [](const Tensor& a, const Tensor& b) { return gt::maximum(a, b); },
       [](const Tensor& a, Scalar s) { return gt::maximum(a, s); }, nullptr,
       [](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }, 3, -1.5},
      {"minimum", Kind::kArith, [](const Tensor& a, const Tensor& b) { return a.minimum(b); },
       [](const Tensor& a, Scalar s) { return gt::minimum(a, s); }, nullptr,
       [](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }, 3, -1.5},
      {"floor_divide", Kind::kArith, [](const Tensor& a, const Tensor& b) { return a.floor_divide(b); },
       [](const Tensor& a, Scalar s) { return a.floor_divide(s); },
       [](Scalar s, const Tensor& b) { return gt::floor_divide(s, b); },
       [](double a, double b) { return std::floor(a / b); }, 3, -1.5},
      {"remainder", Kind::kArith, [](const Tensor& a, const Tensor& b) { return a % b; },
       [](const Tensor& a, Scalar s) { return a.remainder(s); }, [](Scalar s, const Tensor& b) { return s % b; },
       [](double a, double b) { return a - b * std::floor(a / b); }, 3, -1.5},
      {"eq", Kind::kCompare, [](const Tensor& a, const Tensor& b) { return a == b; },
       [](const Tensor& a, Scalar s) { return a == s; }, [](Scalar s, const Tensor& b) { return s == b; },
       [](double a, double b) { return b2d(a == b); }, 1, 0.5},
      {"ne", Kind::kCompare, [](const Tensor& a, const Tensor& b) { return gt::ne(a, b); },
       [](const Tensor& a, Scalar s) { return a != s; }, [](Scalar s, const Tensor& b) { return s != b; },
       [](double a, double b) { return b2d(a != b); }, 1, 0.5},
      {"lt", Kind::kCompare, [](const Tensor& a, const Tensor& b) { return a < b; },
       [](const Tensor& a, Scalar s) { return a.lt(s); }, [](Scalar s, const Tensor& b) { return s < b; },
       [](double a, double b) { return b2d(a < b); }, 1, 0.5},
      {"le", Kind::kCompare, [](const Tensor& a, const Tensor& b) { return a.le(b); },
       [](const Tensor& a, Scalar s) { return a <= s; }, [](Scalar s, const Tensor& b) { return s <= b; },
       [](double a, double b) { return b2d(a <= b); }, 1, 0.5},
      {"gt", Kind::kCompare, [](const Tensor& a, const Tensor& b) { return gt::gt(a, b); },
       [](const Tensor& a, Scalar s) { return a > s; }, [](Scalar s, const Tensor& b) { return s > b; },
       [](double a, double b) { return b2d(a > b); }, 1, 0.5},
      {"ge", Kind::kCompare, [](const Tensor& a, const Tensor& b) { return a >= b; },
       [](const Tensor& a, Scalar s) { return a.ge(s); }, [](Scalar s, const Tensor& b) { return s >= b; },
       [](double a, double b) { return b2d(a >= b); }, 1, 0.5},
  };
  return ops;
}

// Operand values suited to the op (`which`: 0 = left operand, 1 = right operand).
Ref operand(const BinOp& op, gt::DType d, const Shp& shape, int which, uint64_t seed) {
  std::string n = op.name;
  const bool divisor = (n == "div" || n == "floor_divide" || n == "remainder") && which == 1;
  if (d == gt::kBool)  // integer // and % refuse a zero divisor; bool / bool gives inf, NaN
    return divisor && n != "div" ? rnd(shape, 1, 1, 1, seed) : rnd(shape, 0, 1, 1, seed);
  if (n == "pow") {
    if (is_int_dt(d)) return which == 0 ? rnd(shape, -3, 3, 1, seed) : rnd(shape, 0, 4, 1, seed);
    return which == 0 ? rnd(shape, 32, 128, 64, seed) : rnd(shape, -24, 24, 8, seed);
  }
  if (op.kind == Kind::kCompare)
    return is_int_dt(d) ? rnd(shape, -2, 2, 1, seed) : rnd(shape, -4, 4, 2, seed);
  Ref r = rnd_for(d, shape, seed);
  if (divisor)
    for (double& x : r.v)
      if (x == 0) x = 1;
  return r;
}

gt::DType result_dtype(const BinOp& op, gt::DType promoted) {
  if (op.kind == Kind::kCompare) return gt::kBool;
  if (op.kind == Kind::kTrueDiv && !is_float_dt(promoted)) return gt::kFloat32;
  return promoted;
}

}  // namespace

GT_OPS_COVERED("add", "sub", "mul", "div", "pow", "maximum", "minimum", "floor_divide",
               "remainder", "eq", "ne", "lt", "le", "gt", "ge");
TEST_CASE("binary ops over dtype pairs and broadcast shapes", "[ops][binary]") {
  daemons();
  const std::vector<std::pair<gt::DType, gt::DType>> dtype_pairs{
      {gt::kFloat32, gt::kFloat32}, {gt::kInt64, gt::kInt64},     {gt::kInt32, gt::kInt32},
      {gt::kInt64, gt::kFloat32},   {gt::kFloat32, gt::kInt64},   {gt::kInt32, gt::kInt64},
      {gt::kFloat16, gt::kFloat16}, {gt::kBFloat16, gt::kBFloat16}, {gt::kFloat16, gt::kBFloat16},
      {gt::kFloat16, gt::kFloat32}, {gt::kBool, gt::kBool},       {gt::kBool, gt::kInt64},
      {gt::kInt32, gt::kFloat16},
  };
  const std::vector<std::pair<Shp, Shp>> shape_pairs{
      {{2, 3}, {2, 3}}, {{3, 1}, {1, 4}}, {{2, 3, 4}, {4}}, {{4}, {2, 3, 4}},
      {{}, {2, 3}},     {{2, 1, 3}, {}},  {{5, 1, 1}, {1, 2, 1}},
  };
  uint64_t seed = 1;
  for (const BinOp& op : bin_ops()) {
    for (auto [da, db] : dtype_pairs) {
      for (const auto& [sa, sb] : shape_pairs) {
        // a zero-dim operand promotes below one with dims (torch.result_type)
        gt::DType out = result_dtype(op, promote_ranked_ref(da, sa.empty(), db, sb.empty()));
        INFO(op.name << " " << dt_name(da) << shape_str(sa) << " with " << dt_name(db)
                     << shape_str(sb));
        Ref a = operand(op, da, sa, 0, seed++), b = operand(op, db, sb, 1, seed++);
        Tensor ta = up(a, da), tb = up(b, db);
        const std::string name = op.name;
        if ((name == "sub" && (da == gt::kBool || db == gt::kBool)) ||
            (out == gt::kBool && (name == "pow" || name == "floor_divide" || name == "remainder"))) {
          CHECK_THROWS_AS(op.tt(ta, tb), gt::Error);  // any bool in `-`, bool ** bool, ...: rejected
          continue;
        }
        Ref want = to_dtype(map2(a, b, op.ref), out);
        CHECK_TENSOR(op.tt(ta, tb), want, out);
      }
    }
  }
}

TEST_CASE("binary ops with int and float scalars on both sides", "[ops][binary][scalar]") {
  daemons();
  uint64_t seed = 1000;
  for (const BinOp& op : bin_ops()) {
    for (gt::DType d : all_dtypes()) {
      Ref a = operand(op, d, {2, 3}, 0, seed++);
      Tensor t = up(a, d);
      for (bool int_scalar : {true, false}) {
        double s = int_scalar ? op.int_scalar : op.float_scalar;
        Scalar sc = int_scalar ? Scalar(static_cast<int64_t>(s)) : Scalar(s);
        gt::DType out = result_dtype(op, promote_scalar_ref(d, int_scalar));
        INFO(op.name << " " << dt_name(d) << " tensor with " << (int_scalar ? "int" : "float")
                     << " scalar " << s);
        if (std::string(op.name) == "sub" && d == gt::kBool) {  // torch refuses bool in `-`
          CHECK_THROWS_AS(op.ts(t, sc), gt::Error);
          if (op.st) CHECK_THROWS_AS(op.st(sc, t), gt::Error);
          continue;
        }
        auto fr = [&](double x) { return op.ref(x, s); };
        CHECK_TENSOR(op.ts(t, sc), to_dtype(map1(a, fr), out), out);
        if (op.st) {
          // scalar on the left: the tensor is pow's exponent, the divisor of // and %
          const std::string name = op.name;
          const bool right_operand = name == "pow" || name == "floor_divide" || name == "remainder";
          Ref e = right_operand ? operand(op, d, {2, 3}, 1, seed++) : a;
          Tensor te = up(e, d);
          auto fl = [&](double x) { return op.ref(s, x); };
          CHECK_TENSOR(op.st(sc, te), to_dtype(map1(e, fl), out), out);
        }
      }
    }
  }
}

TEST_CASE("binary ops: promotion, division by zero, NaN and infinities", "[ops][binary]") {
  daemons();
  // int64 + float32 -> float32; int64 / int64 -> float32 (true division); comparisons -> bool.
  Tensor i = gt::from_vector<int64_t>({7, -7, 1, -1, 0, 9}, {2, 3});
  Tensor f = gt::from_vector<float>({0.5f, 2.0f, -4.0f}, {3});
  CHECK_TENSOR(i + f, ref_of({2, 3}, {7.5, -5, -3, -0.5, 2, 5}), gt::kFloat32);
  CHECK_TENSOR(i / gt::from_vector<int64_t>({2, 2, 0, 0, 0, 4}, {2, 3}),
               ref_of({2, 3}, {3.5, -3.5, INFINITY, -INFINITY, NAN, 2.25}), gt::kFloat32);
  CHECK_TENSOR(i / 2, ref_of({2, 3}, {3.5, -3.5, 0.5, -0.5, 0, 4.5}), gt::kFloat32);
  CHECK_TENSOR(i > f, ref_of({2, 3}, {1, 0, 1, 0, 0, 1}), gt::kBool);

  // Float division by zero.
  Tensor num = gt::from_vector<float>({1, -1, 0, 2.5f});
  CHECK_TENSOR(num / gt::zeros({4}), ref_of({4}, {INFINITY, -INFINITY, NAN, INFINITY}), gt::kFloat32);

  // maximum/minimum propagate NaN from either side (float32 and float16); comparisons with NaN.
  for (gt::DType d : {gt::kFloat32, gt::kFloat16, gt::kBFloat16}) {
    INFO("dtype " << dt_name(d));
    Ref ra = ref_of({5}, {NAN, 1, NAN, -INFINITY, 3});
    Ref rb = ref_of({5}, {1, NAN, NAN, 2, INFINITY});
    Tensor a = up(ra, d), b = up(rb, d);
    CHECK_TENSOR(gt::maximum(a, b), ref_of({5}, {NAN, NAN, NAN, 2, INFINITY}), d);
    CHECK_TENSOR(gt::minimum(a, b), ref_of({5}, {NAN, NAN, NAN, -INFINITY, 3}), d);
    CHECK_TENSOR(gt::maximum(a, 0.0), ref_of({5}, {NAN, 1, NAN, 0, 3}), d);
    CHECK_TENSOR(gt::minimum(b, 0.0), ref_of({5}, {0, NAN, NAN, 0, 0}), d);
    CHECK_TENSOR(gt::maximum(b, NAN), ref_of({5}, {NAN, NAN, NAN, NAN, NAN}), d);
    CHECK_TENSOR(a == a, ref_of({5}, {0, 1, 0, 1, 1}), gt::kBool);
    CHECK_TENSOR(a != b, ref_of({5}, {1, 1, 1, 1, 1}), gt::kBool);
    CHECK_TENSOR(a < b, ref_of({5}, {0, 0, 0, 1, 1}), gt::kBool);
    CHECK_TENSOR(a >= 1, ref_of({5}, {0, 1, 0, 0, 1}), gt::kBool);
  }

  // Bool arithmetic stays bool (add ~ or, mul ~ and); with an int scalar it becomes int64.
  Tensor p = gt::from_vector<bool>({true, true, false, false});
  Tensor q = gt::from_vector<bool>({true, false, true, false});
  CHECK_TENSOR(p + q, ref_of({4}, {1, 1, 1, 0}), gt::kBool);
  CHECK_TENSOR(p * q, ref_of({4}, {1, 0, 0, 0}), gt::kBool);
  CHECK_TENSOR(gt::maximum(p, q), ref_of({4}, {1, 1, 1, 0}), gt::kBool);
  CHECK_TENSOR(p + 1, ref_of({4}, {2, 2, 1, 1}), gt::kInt64);
  // `-` refuses any bool operand, as torch does (bool - int64 used to give int64)
  CHECK_THROWS_AS(p - q.to(gt::kInt64), gt::Error);
  CHECK_THROWS_AS(p - q, gt::Error);
  CHECK_THROWS_AS(gt::pow(p, q), gt::Error);

  // float16 with a float scalar stays float16; bfloat16 with int32 stays bfloat16.
  Tensor h = gt::from_vector<float>({1.5f, -2.0f}, {2}, gt::kFloat16);
  CHECK_TENSOR(h * 2.5, ref_of({2}, {3.75, -5}), gt::kFloat16);
  Tensor bf = gt::from_vector<float>({1.5f, -2.0f}, {2}, gt::kBFloat16);
  CHECK_TENSOR(bf + gt::from_vector<int32_t>({1, 2}), ref_of({2}, {2.5, 0}), gt::kBFloat16);

  // Shape errors throw at the call site.
  CHECK_THROWS_AS(gt::zeros({2, 3}) + gt::zeros({3, 2}), gt::Error);
  CHECK_THROWS_AS(gt::zeros({4}) < gt::zeros({5}), gt::Error);
}

TEST_CASE("int64 binary ops are exact beyond 2^53", "[ops][binary][int64]") {
  daemons();
  const int64_t big = (int64_t{1} << 60) + 1;
  Tensor a = gt::from_vector<int64_t>({big, INT64_MAX - 1, 3037000499, -big});
  Tensor b = gt::from_vector<int64_t>({1, 1, 3037000499, 3});
  CHECK((a + b).to_vector<int64_t>() == std::vector<int64_t>{big + 1, INT64_MAX, 6074000998, -big + 3});
  CHECK((a - b).to_vector<int64_t>() == std::vector<int64_t>{big - 1, INT64_MAX - 2, 0, -big - 3});
  CHECK((a * b).to_vector<int64_t>() ==
        std::vector<int64_t>{big, INT64_MAX - 1, int64_t{3037000499} * 3037000499, -3 * big});
  CHECK(gt::maximum(a, b).to_vector<int64_t>() ==
        std::vector<int64_t>{big, INT64_MAX - 1, 3037000499, 3});
  CHECK((a + 1).to_vector<int64_t>() == std::vector<int64_t>{big + 1, INT64_MAX, 3037000500, -big + 1});
  Tensor c = gt::from_vector<int64_t>({big - 1, INT64_MAX, 3037000499, -big});
  CHECK((a == c).to_vector<bool>() == std::vector<bool>{false, false, true, true});
  CHECK((a < c).to_vector<bool>() == std::vector<bool>{false, true, false, false});
  CHECK(gt::pow(gt::from_vector<int64_t>({3, -2, 7}), gt::from_vector<int64_t>({39, 61, 22}))
            .to_vector<int64_t>() ==
        std::vector<int64_t>{4052555153018976267, -(int64_t{1} << 61), 3909821048582988049});
}
