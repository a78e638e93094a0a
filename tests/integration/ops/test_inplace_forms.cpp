// The in-place forms PyTorch users type (issue 13): x.relu_() and the rest of the unary table,
// clamp_, masked_fill_, pow_, and C++'s compound assignment operators, through real daemons:
// values against host references, results that cannot be cast back refused, gradients through
// an in-place op on a non-leaf, and leaves that require grad refused outside NoGradGuard.
#include <cmath>
#include <vector>

#include "gt/autograd.h"
#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

TEST_CASE("unary in-place forms write the out-of-place result into the tensor", "[ops][inplace]") {
  daemons();
  Ref a = ref_of({2, 3}, {-2, -0.5, 0, 0.25, 1, 3});
  struct Case {
    const char* name;
    const Tensor& (Tensor::*in_place)() const;
    double (*f)(double);
  };
  const Case cases[] = {
      {"neg_", &Tensor::neg_, [](double x) { return -x; }},
      {"exp_", &Tensor::exp_, [](double x) { return std::exp(x); }},
      {"abs_", &Tensor::abs_, [](double x) { return std::fabs(x); }},
      {"relu_", &Tensor::relu_, [](double x) { return x > 0 ? x : 0.0; }},
      {"sigmoid_", &Tensor::sigmoid_, [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"tanh_", &Tensor::tanh_, [](double x) { return std::tanh(x); }},
      {"erf_", &Tensor::erf_, [](double x) { return std::erf(x); }},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Tensor t = up(a, gt::kFloat32);
    Tensor view = t.slice(1, 1);  // a view sees the write
    const Tensor& same = (t.*c.in_place)();
    CHECK(same.id() == t.id());
    CHECK_TENSOR(t, map1(a, c.f), gt::kFloat32);
    CHECK_TENSOR(view, slice_ref(map1(a, c.f), 1, 1, std::nullopt, 1), gt::kFloat32);
  }
  // Through a view: the base changes.
  Tensor base = up(a, gt::kFloat32);
  base.slice(0, 0, 1).relu_();
  CHECK_TENSOR(base, ref_of({2, 3}, {0, 0, 0, 0.25, 1, 3}), gt::kFloat32);
  // Integer tensors keep what stays integer and refuse what does not.
  Tensor i = up(ref_of({3}, {-2, 0, 5}), gt::kInt64);
  i.abs_();
  CHECK_TENSOR(i, ref_of({3}, {2, 0, 5}), gt::kInt64);
  CHECK_THROWS_WITH(i.exp_(), Catch::Contains("can't be cast to the desired output type int64"));
  CHECK_THROWS_WITH(i.sqrt_(), Catch::Contains("sqrt_"));
  CHECK_TENSOR(i, ref_of({3}, {2, 0, 5}), gt::kInt64);  // a refused op changes nothing
}

TEST_CASE("clamp_, masked_fill_, pow_ and the compound operators", "[ops][inplace]") {
  daemons();
  Tensor t = up(ref_of({4}, {-3, -1, 2, 5}), gt::kFloat32);
  t.clamp_(-2, 3);
  CHECK_TENSOR(t, ref_of({4}, {-2, -1, 2, 3}), gt::kFloat32);
  t.clamp_(std::nullopt, 0);
  CHECK_TENSOR(t, ref_of({4}, {-2, -1, 0, 0}), gt::kFloat32);
  Tensor ints = up(ref_of({3}, {-3, 0, 9}), gt::kInt32);
  ints.clamp_(-1, 4);
  CHECK_TENSOR(ints, ref_of({3}, {-1, 0, 4}), gt::kInt32);
  CHECK_THROWS_WITH(ints.clamp_(0.5, std::nullopt), Catch::Contains("can't be cast"));

  Tensor m = up(ref_of({2, 2}, {1, 2, 3, 4}), gt::kFloat32);
  m.masked_fill_(up(ref_of({2}, {1, 0}), gt::kBool), -7);  // the mask broadcasts
  CHECK_TENSOR(m, ref_of({2, 2}, {-7, 2, -7, 4}), gt::kFloat32);

  Tensor p = up(ref_of({3}, {1, 2, 3}), gt::kFloat32);
  p.pow_(2);
  CHECK_TENSOR(p, ref_of({3}, {1, 4, 9}), gt::kFloat32);
  p.pow_(up(ref_of({3}, {0.5, 0.5, 0}), gt::kFloat32));
  CHECK_TENSOR(p, ref_of({3}, {1, 2, 1}), gt::kFloat32);
  Tensor ip = up(ref_of({2}, {2, 3}), gt::kInt64);
  CHECK_THROWS_WITH(ip.pow_(0.5), Catch::Contains("can't be cast"));

  Tensor c = up(ref_of({3}, {1, 2, 3}), gt::kFloat32);
  Tensor other = up(ref_of({3}, {10, 20, 30}), gt::kFloat32);
  c += other;
  c -= 1;
  c *= 2;
  c /= other;
  // ((x + o) - 1) * 2 / o
  CHECK_TENSOR(c, ref_of({3}, {20.0 / 10, 42.0 / 20, 64.0 / 30}), gt::kFloat32);
  c *= gt::scalar_tensor(3.0);
  CHECK_TENSOR(c, ref_of({3}, {6.0, 6.3, 6.4}), gt::kFloat32);
  // alpha: computed in float32 for half types (alpha * o would overflow float16), bool only
  // for bool results.
  Tensor h = up(ref_of({2}, {1, -2}), gt::kBFloat16);
  h.add_(up(ref_of({2}, {3, 2}), gt::kFloat16), -100000);
  CHECK_TENSOR(h, ref_of({2}, {-299999, -200002}), gt::kBFloat16);
  CHECK_THROWS_WITH(h.add_(h, true), Catch::Contains("boolean alpha"));
  Tensor ci = up(ref_of({2}, {4, 6}), gt::kInt64);
  CHECK_THROWS_WITH(ci /= 4, Catch::Contains("can't be cast"));  // torch: int /= is an error
  ci += 1;
  CHECK_TENSOR(ci, ref_of({2}, {5, 7}), gt::kInt64);
}

TEST_CASE("in-place forms and autograd: gradients through a non-leaf, leaves refused",
          "[ops][inplace][autograd]") {
  daemons();
  Ref a = ref_of({4}, {-1.5, -0.5, 0.5, 2});
  // y = relu_(x * 2) then sigmoid_: d/dx = sigmoid'(r) * (x > 0) * 2 with r = relu(2x).
  Tensor x = up(a, gt::kFloat32).requires_grad_(true);
  Tensor y = x * 2;
  y.relu_();
  y.sigmoid_();
  y.sum().backward();
  Ref want = map1(a, [](double v) {
    const double r = v > 0 ? 2 * v : 0.0, s = 1 / (1 + std::exp(-r));
    return v > 0 ? s * (1 - s) * 2 : 0.0;
  });
  CHECK_TENSOR(x.grad(), want, gt::kFloat32);

  // pow_ by a tensor that requires grad: both gradients, from the value before the write.
  Tensor b = up(ref_of({2}, {2, 3}), gt::kFloat32).requires_grad_(true);
  Tensor e = up(ref_of({2}, {3, 2}), gt::kFloat32).requires_grad_(true);
  Tensor z = b * 1;
  z.pow_(e);
  z.sum().backward();
  CHECK_TENSOR(b.grad(), ref_of({2}, {3 * 4.0, 2 * 3.0}), gt::kFloat32);
  CHECK_TENSOR(e.grad(), ref_of({2}, {8 * std::log(2.0), 9 * std::log(3.0)}), gt::kFloat32);

  Tensor leaf = up(a, gt::kFloat32).requires_grad_(true);
  CHECK_THROWS_WITH(leaf.relu_(), Catch::Contains("gt::NoGradGuard"));
  CHECK_THROWS_WITH(leaf += 1, Catch::Contains("requires grad"));
  {
    gt::NoGradGuard no_grad;
    leaf.clamp_(0, 1);
  }
  CHECK_TENSOR(leaf, ref_of({4}, {0, 0, 0.5, 1}), gt::kFloat32);
  CHECK(leaf.is_leaf());
}
