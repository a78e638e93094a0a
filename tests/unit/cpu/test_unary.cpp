// Unary elementwise ops against double-precision std:: math: every op of the family (taken
// from the op table) against its row in tests/reference/unary_reference.h, plus special values.
#include <climits>
#include <cmath>
#include <limits>

#include "tests/reference/unary_reference.h"
#include "tests/unit/cpu/cpu_test_util.h"

namespace gt::test {
namespace {

const ClaimOps kClaimUnary(reference::unary_ops());

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

double ref_unary(OpId op, double x) {
  auto ref = reference::unary_reference(op);
  if (!ref) FAIL("no reference row for unary op " << op_name(op));
  return ref->f(x);
}

TEST_CASE("cpu unary ops: every dtype and shape", "[cpu][unary]") {
  CpuBackend be;
  std::mt19937 rng(11);
  const std::vector<OpId> ops = reference::unary_ops();
  const std::vector<Shape> shapes = {Shape{}, Shape{0}, Shape{1}, Shape{3, 5}, Shape{2, 0, 3},
                                     Shape{1003}};
  for (OpId op : ops)
    for (DType dt : all_dtypes())
      for (const Shape& s : shapes) {
        auto ref = reference::unary_reference(op);
        INFO(op_name(op));
        REQUIRE(ref);  // a new unary op needs its row in tests/reference/unary_reference.h
        const bool positive = ref->lo > 0;
        auto v = random_values(rng, s.numel(), dt, ref->lo, ref->hi);
        if (positive && is_integral(dt))
          for (auto& x : v) x = std::fabs(x) + 1;
        Tensor a = make_tensor(be, s, dt, v);
        std::vector<TensorMeta> metas = {a.meta};
        if (!infer_meta(op, metas, {}).is_ok()) {
          CHECK(dt == DType::kBool);  // neg/abs/relu of bool are rejected by the rule
          continue;
        }
        Tensor out = run_op(be, op, {&a});
        DType want_dt = reference::unary_gives_float(op) && !is_floating(dt) ? DType::kFloat32 : dt;
        REQUIRE(out.meta.dtype == want_dt);
        REQUIRE(out.meta.shape == s);
        std::vector<double> want(v.size());
        for (size_t i = 0; i < v.size(); ++i) want[i] = ref_unary(op, v[i]);
        check_close(to_doubles(be, out), want, want_dt,
                    std::string(op_name(op)) + " " + s.str() + " from " + dtype_name(dt));
      }
}

TEST_CASE("cpu unary ops: large tensors (split over threads)", "[cpu][unary]") {
  CpuBackend be;
  std::mt19937 rng(12);
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kInt32})
    for (OpId op : {OpId::k_exp, OpId::k_sigmoid, OpId::k_tanh}) {
      const int64_t n = 300001;
      auto v = random_values(rng, n, dt, -4, 4);
      Tensor a = make_tensor(be, Shape{n}, dt, v);
      Tensor out = run_op(be, op, {&a});
      std::vector<double> want(v.size());
      for (size_t i = 0; i < v.size(); ++i) want[i] = ref_unary(op, v[i]);
      check_close(to_doubles(be, out), want, out.meta.dtype,
                  std::string(op_name(op)) + " large " + dtype_name(dt));
    }
}

TEST_CASE("cpu unary ops: special values", "[cpu][unary]") {
  CpuBackend be;
  Tensor x = make_tensor(be, Shape{7}, DType::kFloat32, {-200, -100, -20, 0, 20, 100, 200});
  // sigmoid is torch's 1/(1+e^-x): no NaN, 0 once e^-x overflows, saturates to exactly 1.
  auto sig = to_doubles(be, run_op(be, OpId::k_sigmoid, {&x}));
  for (double s : sig) CHECK_FALSE(std::isnan(s));
  CHECK(sig[0] == 0.0);
  CHECK(sig[1] == 0.0);  // torch.sigmoid(-100.) is 0 (1 / inf), not the subnormal 3.7e-44
  CHECK(sig[2] == Approx(2.0611536e-9).epsilon(1e-5));
  CHECK(sig[3] == 0.5);
  CHECK(sig[5] == 1.0);
  CHECK(sig[6] == 1.0);
  auto th = to_doubles(be, run_op(be, OpId::k_tanh, {&x}));
  CHECK(th[0] == -1.0);
  CHECK(th[6] == 1.0);

  Tensor y = make_tensor(be, Shape{5}, DType::kFloat32, {kNaN, -kInf, kInf, -0.0, -1});
  check_close(to_doubles(be, run_op(be, OpId::k_relu, {&y})), {kNaN, 0, kInf, 0, 0},
              DType::kFloat32, "relu specials");
  check_close(to_doubles(be, run_op(be, OpId::k_abs, {&y})), {kNaN, kInf, kInf, 0, 1},
              DType::kFloat32, "abs specials");
  check_close(to_doubles(be, run_op(be, OpId::k_exp, {&y})), {kNaN, 0, kInf, 1, std::exp(-1.0)},
              DType::kFloat32, "exp specials");
  check_close(to_doubles(be, run_op(be, OpId::k_log, {&y})), {kNaN, kNaN, kInf, -kInf, kNaN},
              DType::kFloat32, "log specials");
  check_close(to_doubles(be, run_op(be, OpId::k_sqrt, {&y})), {kNaN, kNaN, kInf, 0, kNaN},
              DType::kFloat32, "sqrt specials");

  // Integer neg/abs wrap at the minimum like two's complement.
  Tensor i = make_tensor(be, Shape{3}, DType::kInt32, {INT32_MIN, -5, 7});
  CHECK(to_doubles(be, run_op(be, OpId::k_neg, {&i})) == std::vector<double>{INT32_MIN, 5, -7});
  CHECK(to_doubles(be, run_op(be, OpId::k_abs, {&i})) == std::vector<double>{INT32_MIN, 5, 7});
  CHECK(to_doubles(be, run_op(be, OpId::k_relu, {&i})) == std::vector<double>{0, 0, 7});

  // bool: abs is refused (as torch: "abs_cpu" not implemented for 'Bool'), exp goes to float32.
  Tensor b = make_tensor(be, Shape{2}, DType::kBool, {0, 1});
  CHECK_FALSE(try_run(be, OpId::k_abs, {&b}, {}).is_ok());
  Tensor e = run_op(be, OpId::k_exp, {&b});
  CHECK(e.meta.dtype == DType::kFloat32);
  check_close(to_doubles(be, e), {1, std::exp(1.0)}, DType::kFloat32, "exp(bool)");
}

}  // namespace
}  // namespace gt::test
