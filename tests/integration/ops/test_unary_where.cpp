// Unary elementwise ops (every op of the family from the op table, through its public method
// generated from gt/tensor_api.def, against tests/reference/unary_reference.h: every dtype, int
// -> float promotion, special values) and where (with broadcasting, mixed dtypes and scalar
// operands) through real daemons.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "op_test_util.h"
#include "tests/reference/unary_methods.h"
#include "tests/reference/unary_reference.h"

using namespace gtt;
using gt::Tensor;

namespace {

double ref_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

using gt::reference::UnaryMethod;
using gt::reference::unary_methods;

struct UnOp {
  std::string name;
  bool to_float;  // int/bool inputs give float32 (else: same dtype; bool rejected, as torch)
  UnaryMethod fn;
  gt::reference::UnaryReference ref;
};

// Every unary op of the op table with its method and reference (REQUIREd: a new op needs both).
std::vector<UnOp> un_ops() {
  std::vector<UnOp> ops;
  for (gt::OpId op : gt::reference::unary_ops()) {
    const std::string name = gt::op_name(op);
    INFO("unary op " << name << ": a row in gt/tensor_api.def and tests/reference/unary_reference.h");
    auto method = unary_methods().find(name);
    auto ref = gt::reference::unary_reference(op);
    REQUIRE(method != unary_methods().end());
    REQUIRE(ref);
    ops.push_back({name, gt::reference::unary_gives_float(op), method->second, *ref});
  }
  return ops;
}

const gtt::CoverOps kCoverUnary(gt::reference::unary_ops());

}  // namespace

TEST_CASE("unary ops over every dtype, ints promoting to float", "[ops][unary]") {
  daemons();
  uint64_t seed = 77;
  for (const UnOp& op : un_ops()) {
    for (gt::DType d : all_dtypes()) {
      INFO(op.name << " on " << dt_name(d));
      Ref x = rnd_for(d, {3, 5}, seed++);
      if (op.ref.lo >= 0 && !is_float_dt(d) && d != gt::kBool)  // a domain of x >= 0 (log, sqrt)
        x = rnd(x.shape, 0, 30, 1, seed++);  // ints: mostly valid inputs, 0 -> -inf for log
      Tensor t = up(x, d);
      if (op.ref.floating_only && !is_float_dt(d)) {  // silu, gelu: torch refuses ints and bool
        CHECK_THROWS_AS(op.fn(t), gt::Error);
        continue;
      }
      if (d == gt::kBool && !op.to_float) {  // neg, abs, relu: torch refuses bool too
        CHECK_THROWS_AS(op.fn(t), gt::Error);
        continue;
      }
      gt::DType out = op.to_float && !is_float_dt(d) ? gt::kFloat32 : d;
      Tol tol = out == gt::kFloat32 ? Tol{op.ref.tol, op.ref.tol} : tol_for(out);
      CHECK_TENSOR(op.fn(t), to_dtype(map1(x, op.ref.f), out), out, tol);
    }
  }
}

TEST_CASE("unary ops at special values", "[ops][unary]") {
  daemons();
  Ref special = ref_of({11}, {0.0, -0.0, 1.0, -1.0, 100.0, -100.0, 20.0, -20.0, INFINITY, -INFINITY, NAN});
  for (gt::DType d : {gt::kFloat32, gt::kFloat16, gt::kBFloat16}) {
    Tensor t = up(special, d);
    for (const UnOp& op : un_ops()) {
      INFO(op.name << " on " << dt_name(d) << " special values");
      Tol tol = d == gt::kFloat32 ? Tol{op.ref.tol, op.ref.tol} : tol_for(d);
      CHECK_TENSOR(op.fn(t), to_dtype(map1(special, op.ref.f), d), d, tol);
    }
  }
  // The extremes explicitly: sigmoid(+-100) must be 1 and ~0 (not NaN), tanh(+-100) = +-1.
  Tensor x = gt::from_vector<float>({100.0f, -100.0f, 88.0f, -88.0f, 1000.0f, -1000.0f});
  std::vector<float> s = x.sigmoid().to_vector<float>();
  CHECK(s[0] == 1.0f);
  CHECK(s[1] >= 0.0f);
  CHECK(s[1] < 1e-30f);
  CHECK(s[4] == 1.0f);
  CHECK(s[5] == 0.0f);
  std::vector<float> th = x.tanh().to_vector<float>();
  CHECK(th[0] == 1.0f);
  CHECK(th[1] == -1.0f);
  CHECK(th[4] == 1.0f);
  CHECK(th[5] == -1.0f);
  // int64 inputs of the float ops give float32.
  Tensor i = gt::from_vector<int64_t>({-2, 0, 3});
  CHECK_TENSOR(i.sigmoid(), ref_of({3}, {ref_sigmoid(-2), 0.5, ref_sigmoid(3)}), gt::kFloat32, Tol{1e-5, 1e-5});
  CHECK_TENSOR(i.exp(), ref_of({3}, {std::exp(-2.0), 1, std::exp(3.0)}), gt::kFloat32, Tol{1e-5, 1e-5});
  CHECK_TENSOR(i.sqrt(), ref_of({3}, {NAN, 0, std::sqrt(3.0)}), gt::kFloat32);
  CHECK_TENSOR(i.abs(), ref_of({3}, {2, 0, 3}), gt::kInt64);
  CHECK_TENSOR(i.relu(), ref_of({3}, {0, 0, 3}), gt::kInt64);
  CHECK_TENSOR(-i, ref_of({3}, {2, 0, -3}), gt::kInt64);
  CHECK_TENSOR(gt::from_vector<bool>({true, false}).exp(), ref_of({2}, {std::exp(1.0), 1}),
               gt::kFloat32, Tol{1e-5, 1e-5});
}

GT_OPS_COVERED("where");
TEST_CASE("where with broadcasting, mixed dtypes and scalars", "[ops][where]") {
  daemons();
  Ref c1 = ref_of({3, 1}, {1, 0, 1});
  Ref a1 = rnd_for(gt::kFloat32, {1, 4}, 5);
  Ref b1 = rnd_for(gt::kInt64, {4}, 6);
  auto sel = [](double c, double a, double b) { return c != 0 ? a : b; };
  Tensor tc1 = up(c1, gt::kBool);
  CHECK_TENSOR(gt::where(tc1, up(a1, gt::kFloat32), up(b1, gt::kInt64)), map3(c1, a1, b1, sel),
               gt::kFloat32);

  // Rank-3 condition with a 0-d and a [3, 1] operand, float16.
  Ref c2 = rnd({2, 3, 4}, 0, 1, 1, 7);
  Ref a2 = ref_of({}, {2.5});
  Ref b2 = rnd_for(gt::kFloat16, {3, 1}, 8);
  Tensor tc2 = up(c2, gt::kBool);
  CHECK_TENSOR(gt::where(tc2, up(a2, gt::kFloat16), up(b2, gt::kFloat16)), map3(c2, a2, b2, sel),
               gt::kFloat16);
  // The broadcast condition is the one that grows.
  Ref c3 = ref_of({4}, {0, 1, 1, 0});
  Ref a3 = rnd_for(gt::kInt32, {2, 3, 4}, 9), b3 = rnd_for(gt::kInt32, {2, 3, 4}, 10);
  CHECK_TENSOR(gt::where(up(c3, gt::kBool), up(a3, gt::kInt32), up(b3, gt::kInt32)),
               map3(c3, a3, b3, sel), gt::kInt32);
  // bool operands.
  Ref a4 = rnd({2, 3, 4}, 0, 1, 1, 11), b4 = rnd({2, 3, 4}, 0, 1, 1, 12);
  CHECK_TENSOR(gt::where(tc2, up(a4, gt::kBool), up(b4, gt::kBool)), map3(c2, a4, b4, sel), gt::kBool);

  // Scalar operands: a Python scalar does not widen the tensor operand's dtype beyond promotion.
  Tensor bi = up(b1, gt::kInt64);
  Ref s15 = ref_of({}, {1.5}), s2 = ref_of({}, {2}), s25 = ref_of({}, {2.5});
  CHECK_TENSOR(gt::where(tc1, 1.5, bi), map3(c1, s15, b1, sel), gt::kFloat32);
  CHECK_TENSOR(gt::where(tc1, bi, 2), map3(c1, b1, s2, sel), gt::kInt64);
  CHECK_TENSOR(gt::where(tc1, 1, 2.5), map3(c1, ref_of({}, {1}), s25, sel), gt::kFloat32);
  CHECK_TENSOR(gt::where(tc1, 1, 2), map3(c1, ref_of({}, {1}), s2, sel), gt::kInt64);
  CHECK_TENSOR(gt::where(tc1, true, false), map3(c1, ref_of({}, {1}), ref_of({}, {0}), sel), gt::kBool);
  Tensor h = up(b2, gt::kFloat16);
  CHECK_TENSOR(gt::where(up(c1, gt::kBool), h, -1.25), map3(c1, b2, ref_of({}, {-1.25}), sel),
               gt::kFloat16);

  // A NaN in the branch not taken does not leak.
  Tensor nanny = gt::from_vector<float>({NAN, 1.0f, NAN});
  Tensor c = gt::from_vector<bool>({false, true, false});
  CHECK_TENSOR(gt::where(c, nanny, gt::zeros({3})), ref_of({3}, {0, 1, 0}), gt::kFloat32);

  // Errors at the call site.
  CHECK_THROWS_AS(gt::where(gt::ones({3}), gt::ones({3}), gt::ones({3})), gt::Error);
  CHECK_THROWS_AS(gt::where(tc1, gt::ones({2, 5}), gt::ones({4})), gt::Error);
}
