// Autograd through aliasing views (libgtclient/view.h): gradients of writes through views and
// of views read after their base was written (checked against finite differences through GT),
// the shared version counter, and PyTorch's refusals of in-place writes through views.
#include "ag_test_util.h"

using agt::GradCase;
using agt::GradInput;
using agt::host;
using agt::leaf;
using gt::Tensor;

TEST_CASE("gradients of writes through views match finite differences", "[autograd][views]") {
  const std::vector<double> a = agt::spread_values(6, 1);
  const std::vector<double> b = agt::spread_values(3, 2);
  std::vector<GradCase> cases = {
      {"row of a clone multiplied in place (CopySlices)",
       {{{2, 3}, a}},
       [](const std::vector<Tensor>& in) {
         Tensor x = in[0] * 1.0;
         x.select(0, 0).mul_(2.0);
         return x * x;
       }},
      {"column written from another input",
       {{{2, 3}, a}, {{2}, {b[0], b[1]}}},
       [](const std::vector<Tensor>& in) {
         Tensor x = in[0] * 2.0;  // (exp would save x, which the write then changes)
         x.select(1, 1).copy_(in[1] * 3.0);
         return x.sum(0);
       }},
      {"transposed view updated with a tensor that requires grad",
       {{{2, 3}, a}, {{3, 2}, {b[0], b[1], b[2], b[0], b[1], b[2]}}},
       [](const std::vector<Tensor>& in) {
         Tensor x = in[0] + 0.0;
         x.t().mul_(in[1]);
         return x;
       }},
      {"view read after its base was written (regenerated from the base)",
       {{{2, 3}, a}},
       [](const std::vector<Tensor>& in) {
         Tensor x = in[0] * 1.0;
         Tensor v = x.slice(1, 1, gt::None);
         x.mul_(x.exp());  // v is stale now: reading it reads x * exp(x)
         return v * 2.0;
       }},
      {"expanded view read after its base was written",
       {{{3}, b}},
       [](const std::vector<Tensor>& in) {
         Tensor x = in[0] * 1.0;
         Tensor e = x.unsqueeze(0).expand({2, 3});
         x.add_(x.exp());
         return e;
       }},
      {"write through a view of a view, then a sibling view read",
       {{{2, 3}, a}},
       [](const std::vector<Tensor>& in) {
         Tensor x = in[0] * 1.0;
         Tensor col = x.t().select(0, 2);
         Tensor row = x.select(0, 1);
         col.mul_(col.exp());
         return row * x.select(0, 0);
       }},
  };
  for (const GradCase& c : cases) agt::gradcheck(c);
}

TEST_CASE("a write through a view is recorded as PyTorch's CopySlices", "[autograd][views]") {
  agt::daemons();
  Tensor w = leaf({1, 2, 3, 4}, {4});
  Tensor x = w * 1.0;
  x.slice(0, 0, 2).mul_(3.0);
  CHECK(x.grad_fn_name() == "StridedCopyBackward");
  x.sum().backward();
  CHECK(host(w.grad()) == std::vector<double>{3, 3, 1, 1});
  CHECK(host(x) == std::vector<double>{3, 6, 3, 4});
}

TEST_CASE("views share the version counter of their base", "[autograd][views]") {
  agt::daemons();
  Tensor w = leaf({0.5, 1, 2}, {3});
  Tensor y = w.exp();  // exp saves its result
  y.select(0, 1).add_(1.0);
  CHECK_THROWS_WITH(y.sum().backward(), Catch::Contains("modified by an in-place operation"));
  // A view saved by an op, then its base written: the view's saved value is stale.
  Tensor z = w * 1.0;
  Tensor v = z.slice(0, 1);
  Tensor s = v * v;  // saves v
  z.zero_();
  CHECK_THROWS_WITH(s.sum().backward(), Catch::Contains("modified by an in-place operation"));
}

TEST_CASE("in-place writes through views PyTorch refuses", "[autograd][views]") {
  agt::daemons();
  Tensor w = leaf({1, 2, 3}, {3});
  CHECK_THROWS_WITH(w.slice(0, 1).add_(1.0), Catch::Contains("view of a leaf"));
  CHECK_THROWS_WITH(w.view({3}).copy_(gt::zeros({3})), Catch::Contains("view of a leaf"));
  CHECK(host(w) == std::vector<double>{1, 2, 3});
  {  // under no_grad, as optimizers write
    gt::NoGradGuard no_grad;
    w.slice(0, 1).add_(1.0);
  }
  CHECK(host(w) == std::vector<double>{1, 3, 4});
  // detach() gives a view whose writes reach the leaf, unrecorded (p.detach().zero_()).
  w.detach().zero_();
  CHECK(host(w) == std::vector<double>{0, 0, 0});
  CHECK(w.is_leaf());
  // split/chunk parts that require grad refuse in-place ops; without grad they are plain views.
  Tensor x = w * 1.0;
  std::vector<Tensor> parts = gt::split(x, 1, 0);
  CHECK_THROWS_WITH(parts[0].mul_(2.0), Catch::Contains("split/chunk"));
  // ...and so do parts that would start requiring grad through the write.
  Tensor no_grad_source = gt::zeros({4});
  CHECK_THROWS_WITH(gt::split(no_grad_source, 2, 0)[0].copy_(w.slice(0, 0, 2)),
                    Catch::Contains("split/chunk"));
  Tensor plain = gt::zeros({4});
  gt::chunk(plain, 2, 0)[1].fill_(1.0);
  CHECK(host(plain) == std::vector<double>{0, 0, 1, 1});
  // A view made under no_grad of a tensor that requires grad, written with grad on.
  Tensor nv;
  {
    gt::NoGradGuard no_grad;
    nv = x.slice(0, 1);
  }
  CHECK_THROWS_WITH(nv.add_(1.0), Catch::Contains("no_grad mode"));
}

TEST_CASE("an optimizer step through the leaf refreshes the views' history", "[autograd][views]") {
  agt::daemons();
  Tensor w = leaf({1, 2}, {2});
  Tensor v = w.unsqueeze(0);  // made before the step
  {
    gt::NoGradGuard no_grad;
    w.sub_(gt::full({2}, 0.5));
  }
  // v reads the new w, and its gradient still reaches w.
  Tensor loss = (v * v).sum();
  CHECK(host(v) == std::vector<double>{0.5, 1.5});
  loss.backward();
  CHECK(host(w.grad()) == std::vector<double>{1, 3});
}

TEST_CASE("views of a detached tensor have it as their autograd base", "[autograd][views]") {
  agt::daemons();
  Tensor t = gt::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor d = t.detach();
  Tensor w = leaf({5, 6}, {2});
  d.select(0, 0).copy_(w * 3.0);  // recorded on d (CopySlices), t stays without history
  CHECK(d.grad_fn_name() == "StridedCopyBackward");
  CHECK_FALSE(t.requires_grad());
  CHECK(host(t) == std::vector<double>{15, 18, 3, 4});
  (d * d).sum().backward();
  CHECK(host(w.grad()) == std::vector<double>{90, 108});  // d(9 w^2)/dw = 18 w
  // A detached leaf that requires grad: its stale views re-read it, and their gradient goes
  // to it.
  Tensor x = gt::from_vector<float>({1, 2, 3}).detach();
  x.requires_grad_();
  Tensor v = x.slice(0, 1);
  {
    gt::NoGradGuard no_grad;
    x.mul_(2.0);
  }
  (v * v).sum().backward();
  CHECK(host(x.grad()) == std::vector<double>{0, 8, 12});
}
