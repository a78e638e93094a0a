// Autograd semantics through real daemons: accumulation, zeroing, no-grad, detach, in-place
// rules, retain_graph, version checks, non-leaf grads, ties, the tape releasing what it no longer
// needs, and the signal-scope hook points.
#include <thread>

#include "ag_test_util.h"

using agt::host;
using agt::leaf;
using gt::Tensor;

namespace {

uint64_t worker_tensors() {
  gt::synchronize();
  uint64_t n = 0;
  for (const auto& w : gt::worker_stats()) n += w.tensors;
  return n;
}

}  // namespace

TEST_CASE("backward accumulates into .grad until it is zeroed or cleared", "[autograd]") {
  agt::daemons();
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor w = agt::tensor({2, -1, 0.5}, {3});
  auto loss = [&] { return (x * x * w).sum(); };  // d/dx = 2 x w
  const std::vector<double> once{4, -4, 3};

  loss().backward();
  CHECK(host(x.grad()) == once);
  loss().backward();
  CHECK(host(x.grad()) == std::vector<double>{8, -8, 6});

  x.grad().zero_();  // in place: the next backward adds to zeros
  CHECK(host(x.grad()) == std::vector<double>{0, 0, 0});
  loss().backward();
  CHECK(host(x.grad()) == once);

  x.set_grad(Tensor());  // cleared: the next backward starts fresh
  CHECK_FALSE(x.grad().defined());
  loss().backward();
  CHECK(host(x.grad()) == once);

  // A leaf used twice in one graph gets the sum of both paths.
  x.set_grad(Tensor());
  (x * 3.0 + x).sum().backward();
  CHECK(host(x.grad()) == std::vector<double>{4, 4, 4});
}

TEST_CASE("gradients of different leaves never alias", "[autograd]") {
  agt::daemons();
  Tensor a = leaf({1, 2}, {2}), b = leaf({3, 4}, {2});
  (a + b).sum().backward();  // add passes the same gradient to both
  a.grad().zero_();
  CHECK(host(a.grad()) == std::vector<double>{0, 0});
  CHECK(host(b.grad()) == std::vector<double>{1, 1});
  // A user-provided seed is not adopted as a .grad either.
  Tensor seed = agt::tensor({5, 6}, {2});
  Tensor c = leaf({0, 0}, {2});
  (c + 0.0).backward(seed);
  c.grad().zero_();
  CHECK(host(seed) == std::vector<double>{5, 6});
}

TEST_CASE("NoGradGuard: nothing recorded, nestable, thread-local, EnableGradGuard", "[autograd]") {
  agt::daemons();
  Tensor x = leaf({1, 2}, {2});
  CHECK(gt::is_grad_enabled());
  {
    gt::NoGradGuard g1;
    Tensor y = x * 2.0;
    CHECK_FALSE(y.requires_grad());
    CHECK(y.is_leaf());
    {
      gt::NoGradGuard g2;
      CHECK_FALSE(gt::is_grad_enabled());
      {
        gt::EnableGradGuard on;
        CHECK((x * 2.0).requires_grad());
      }
      CHECK_FALSE(gt::is_grad_enabled());
    }
    CHECK_FALSE(gt::is_grad_enabled());
    bool other_thread = false;
    std::thread t([&] { other_thread = gt::is_grad_enabled(); });
    t.join();
    CHECK(other_thread);
  }
  CHECK(gt::is_grad_enabled());
  CHECK((x * 2.0).requires_grad());
}

TEST_CASE("detach: same values, no history, requires_grad_ rules", "[autograd]") {
  agt::daemons();
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor y = x * 2.0;
  Tensor d = y.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.is_leaf());
  CHECK(host(d) == host(y));
  (y * d).sum().backward();  // d is a constant: dy/dx * d = 2 * (2x)
  CHECK(host(x.grad()) == std::vector<double>{4, 8, 12});

  CHECK_THROWS_WITH(gt::zeros({2}, gt::kInt64).requires_grad_(),
                    Catch::Contains("floating point"));
  CHECK_THROWS_WITH(y.requires_grad_(false), Catch::Contains("leaf"));
  CHECK(x.is_leaf());
  CHECK_FALSE(y.is_leaf());
  CHECK(y.grad_fn_name() == "MulBackward");
  CHECK(x.grad_fn_name().empty());
  x.requires_grad_(false);
  CHECK_FALSE((x * 2.0).requires_grad());
}

TEST_CASE("in-place ops: refused on leaves that require grad, recorded otherwise", "[autograd]") {
  agt::daemons();
  Tensor p = leaf({1, 2}, {2});
  Tensor one = agt::tensor({1, 1}, {2});
  CHECK_THROWS_WITH(p.copy_(one), Catch::Contains("copy_") && Catch::Contains("leaf"));
  CHECK_THROWS_WITH(p.add_(one), Catch::Contains("add_") && Catch::Contains("leaf"));
  CHECK_THROWS_WITH(p.sub_(1.0), Catch::Contains("sub_"));
  CHECK_THROWS_WITH(p.mul_(2.0), Catch::Contains("mul_"));
  CHECK_THROWS_WITH(p.zero_(), Catch::Contains("leaf"));
  CHECK(host(p) == std::vector<double>{1, 2});  // nothing was written
  {
    gt::NoGradGuard no_grad;
    p.add_(one, 2.0);
    p.mul_(3.0);
    p.sub_(one);
    p.div_(2.0);
  }
  CHECK(host(p) == std::vector<double>{4, 5.5});  // ((1 + 2) * 3 - 1) / 2, ...
  CHECK(p.is_leaf());
  CHECK(p.requires_grad());

  // On a non-leaf, in-place ops are recorded: h = (x * 1) * w + b, all in place.
  Tensor x = leaf({1, 2}, {2}), w = leaf({3, 4}, {2}), b = leaf({5, 6}, {2});
  Tensor h = x * 1.0;
  h.mul_(w);
  h.add_(b);
  CHECK(host(h) == std::vector<double>{8, 14});
  h.sum().backward();
  CHECK(host(x.grad()) == std::vector<double>{3, 4});
  CHECK(host(w.grad()) == std::vector<double>{1, 2});
  CHECK(host(b.grad()) == std::vector<double>{1, 1});

  // In-place on a plain tensor from a tensor that requires grad makes it part of the graph.
  Tensor buf = gt::zeros({2});
  buf.copy_(x * 5.0);
  CHECK(buf.requires_grad());
  x.set_grad(Tensor());
  buf.sum().backward();
  CHECK(host(x.grad()) == std::vector<double>{5, 5});
  Tensor f = gt::ones({2});
  f.fill_(3.0);
  CHECK(host(f) == std::vector<double>{3, 3});
}

TEST_CASE("modifying a saved tensor in place makes backward fail clearly", "[autograd]") {
  agt::daemons();
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x.exp();  // saves its result
  Tensor z = (y * 2.0).sum();
  {
    gt::NoGradGuard no_grad;
    y.add_(1.0);
  }
  CHECK_THROWS_WITH(z.backward(), Catch::Contains("modified by an in-place operation"));

  Tensor a = leaf({1, 2}, {2});
  Tensor s = a * 1.0;
  Tensor t = (s * s).sum();  // saves s
  s.add_(1.0);
  CHECK_THROWS_WITH(t.backward(), Catch::Contains("ExpBackward") || Catch::Contains("MulBackward"));
}

TEST_CASE("retain_graph, a second backward through freed saved tensors fails", "[autograd]") {
  agt::daemons();
  Tensor x = leaf({1, 2}, {2});
  Tensor loss = (x * x).sum();
  loss.backward(Tensor(), true);
  loss.backward();  // allowed: the first kept the graph; this one frees it
  CHECK(host(x.grad()) == std::vector<double>{4, 8});
  CHECK_THROWS_WITH(loss.backward(), Catch::Contains("second time"));
  // A graph that saved nothing can be walked again.
  Tensor l2 = (x + 1.0).sum();
  l2.backward();
  CHECK_NOTHROW(l2.backward());
}

TEST_CASE("non-leaf grads are not retained unless asked, explicit seeds, errors", "[autograd]") {
  agt::daemons();
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor h = x * 2.0;
  Tensor k = x * 3.0;
  k.retain_grad();
  Tensor y = (h * k).sum();
  y.backward();
  CHECK_FALSE(h.grad().defined());
  CHECK(host(k.grad()) == std::vector<double>{2, 4, 6});  // = h
  CHECK(host(x.grad()) == std::vector<double>{12, 24, 36});

  Tensor v = x * x;  // vector output: needs a seed
  CHECK_THROWS_WITH(v.backward(), Catch::Contains("one-element"));
  x.set_grad(Tensor());
  v.backward(agt::tensor({1, 0, -1}, {3}));
  CHECK(host(x.grad()) == std::vector<double>{2, 0, -6});
  CHECK_THROWS_WITH(agt::tensor({1}, {1}).backward(), Catch::Contains("does not require grad"));
  CHECK_THROWS_WITH(v.sum().backward(agt::tensor({1, 2}, {2})), Catch::Contains("shape"));

  // autograd::grad returns the gradients without touching .grad.
  x.set_grad(Tensor());
  Tensor u = leaf({2}, {1});
  auto gs = gt::autograd::grad({(x * u).sum()}, {x, u});
  CHECK(host(gs[0]) == std::vector<double>{2, 2, 2});
  CHECK(host(gs[1]) == std::vector<double>{6});
  CHECK_FALSE(x.grad().defined());
  // Several outputs at once; a leaf as an output.
  gt::autograd::backward({x.sum(), (x * 2.0).sum(), u}, {});
  CHECK(host(x.grad()) == std::vector<double>{3, 3, 3});
  CHECK(host(u.grad()) == std::vector<double>{1});
}

TEST_CASE("ties: maximum/minimum split evenly, a full max/min shares among equal maxima, a "
          "max/min over a dim picks the first",
          "[autograd]") {
  agt::daemons();
  Tensor a = leaf({1, 2, 3}, {3}), b = leaf({1, 5, 0}, {3});
  gt::maximum(a, b).sum().backward();
  CHECK(host(a.grad()) == std::vector<double>{0.5, 0, 1});
  CHECK(host(b.grad()) == std::vector<double>{0.5, 1, 0});
  Tensor m = leaf({3, 1, 3, 2}, {2, 2});
  m.max().backward();
  CHECK(host(m.grad()) == std::vector<double>{0.5, 0, 0.5, 0});
  m.set_grad(Tensor());
  // Columns [3, 3] (tie) and [1, 2]: torch's min(dim) sends the whole gradient to the index it
  // returns, the first of the tied minima (this used to expect 0.5 and 0.5, a full reduction's
  // rule).
  std::get<0>(m.min(0)).sum().backward();
  CHECK(host(m.grad()) == std::vector<double>{1, 1, 0, 0});
  m.set_grad(Tensor());
  Tensor r = leaf({2, 7, 7, 7, 5, 5}, {2, 3});  // rows [2, 7, 7], [7, 5, 5]
  std::get<0>(r.max(1)).sum().backward();
  CHECK(host(r.grad()) == std::vector<double>{0, 1, 0, 1, 0, 0});
  r.set_grad(Tensor());
  std::get<0>(r.min(1)).sum().backward();
  CHECK(host(r.grad()) == std::vector<double>{1, 0, 0, 0, 1, 0});
}

TEST_CASE("gradients select instead of multiplying by masks: inf and NaN do not leak",
          "[autograd]") {
  // Each case feeds an infinite gradient (sqrt's at 0) into a rule at an element that must get
  // 0: a rule multiplying by a 0/1 mask (inf * 0) or subtracting (inf - inf) gave NaN there.
  // Expected values are torch's.
  agt::daemons();
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = leaf({-1, 0, 4}, {3});
  x.clamp_min(0).sqrt().sum().backward();  // the x.clamp(min=0).sqrt() at x = -1
  CHECK(host(x.grad()) == std::vector<double>{0, inf, 0.25});
  x.set_grad(Tensor());
  x.relu().sqrt().sum().backward();
  CHECK(host(x.grad()) == std::vector<double>{0, 0, 0.25});
  x.set_grad(Tensor());
  gt::maximum(x, 0.0).sqrt().sum().backward();  // scalar form; the tie at 0 halves
  CHECK(host(x.grad()) == std::vector<double>{0, inf, 0.25});

  Tensor a = leaf({0, 4}, {2}), b = leaf({-1, 16}, {2});
  gt::maximum(a, b).sqrt().sum().backward();  // [0, 16]: a wins first, b second
  CHECK(host(a.grad()) == std::vector<double>{inf, 0});
  CHECK(host(b.grad()) == std::vector<double>{0, 0.125});
  a.set_grad(Tensor());
  Tensor c = leaf({1, 16}, {2});
  gt::minimum(a, c).sqrt().sum().backward();  // [0, 4]: a wins both
  CHECK(host(a.grad()) == std::vector<double>{inf, 0.25});
  CHECK(host(c.grad()) == std::vector<double>{0, 0});

  Tensor q = leaf({0, -1, 16, 4}, {2, 2});
  std::get<0>(q.max(1)).sqrt().sum().backward();  // row maxima 0 and 16
  CHECK(host(q.grad()) == std::vector<double>{inf, 0, 0.125, 0});
  Tensor p = leaf({0, -1, -3, 0}, {4});
  p.max().sqrt().backward();  // the two tied maxima share inf
  CHECK(host(p.grad()) == std::vector<double>{inf, 0, 0, inf});

  Tensor z = leaf({1, -1, 5}, {3});
  (z.abs() - 1.0).sqrt().sum().backward();  // torch's g * sign(z): inf, -inf (not inf - NaN)
  CHECK(host(z.grad()) == std::vector<double>{inf, -inf, 0.25});
  Tensor w = leaf({1, -1, 16}, {3});  // masked_fill already selected; kept as a check
  w.masked_fill(gt::from_vector(std::vector<bool>{true, false, false}, {3}), 0)
      .clamp_min(0)
      .sqrt()
      .sum()
      .backward();
  CHECK(host(w.grad()) == std::vector<double>{0, 0, 0.125});
}

TEST_CASE("losses, softmax and layer_norm at the edges give PyTorch's values and gradients",
          "[autograd]") {
  agt::daemons();
  namespace F = gt::nn::functional;
  const double inf = std::numeric_limits<double>::infinity();
  // binary_cross_entropy_with_logits at logit 0: torch's sigmoid(x) - y (this gave [0.5, 0]).
  Tensor x = leaf({0, 0}, {2});
  F::binary_cross_entropy_with_logits(x, agt::tensor({0, 1}, {2})).backward();
  CHECK(host(x.grad()) == std::vector<double>{0.25, -0.25});
  // ... with pos_weight: lw sigmoid(x) - pw y, lw = 1 + (pw - 1) y.
  Tensor z = leaf({0, 0, 0}, {3});
  F::BCEOptions o;
  o.pos_weight = agt::tensor({2.5}, {1});
  o.reduction = F::Reduction::kSum;
  F::binary_cross_entropy_with_logits(z, agt::tensor({0, 1, 0.5}, {3}), o).backward();
  CHECK(host(z.grad()) == std::vector<double>{0.5, -1.25, -0.375});
  // binary_cross_entropy at p = 0 and 1: torch's (p - y) / max(p (1 - p), 1e-12), not NaN.
  Tensor p = leaf({0, 0, 1, 1, 0.5}, {5});
  F::BCEOptions s;
  s.reduction = F::Reduction::kSum;
  Tensor loss = F::binary_cross_entropy(p, agt::tensor({0, 1, 0, 1, 0.25}, {5}), s);
  CHECK(loss.item<double>() == Approx(200 + std::log(2.0)));  // -100 twice, log 2 at p = 0.5
  loss.backward();
  std::vector<double> g = host(p.grad());
  REQUIRE(g.size() == 5);
  CHECK(g[0] == 0);
  CHECK(g[1] == Approx(-1e12).epsilon(1e-6));
  CHECK(g[2] == Approx(1e12).epsilon(1e-6));
  CHECK(g[3] == 0);
  CHECK(g[4] == Approx(1.0));  // (0.5 - 0.25) / 0.25
  // softmax / log_softmax: a row holding +inf is NaN throughout (torch); an all -inf row too.
  Tensor r = agt::tensor({inf, 1, 2, -inf, 1, 2, -inf, -inf, -inf}, {3, 3});
  std::vector<double> sm = host(gt::softmax(r, 1)), lsm = host(gt::log_softmax(r, 1));
  for (int i : {0, 1, 2, 6, 7, 8}) {
    CHECK(std::isnan(sm[i]));
    CHECK(std::isnan(lsm[i]));
  }
  CHECK(sm[3] == 0);
  CHECK(sm[5] == Approx(1 / (1 + std::exp(-1.0))));
  CHECK(lsm[3] == -inf);
  // layer_norm whose variance overflows in float32 (as torch accumulates it): the row is 0.
  CHECK(host(F::layer_norm(agt::tensor({1.5e19, -1.5e19}, {1, 2}), {2})) ==
        std::vector<double>{0, 0});
}

TEST_CASE("the tape frees what it no longer needs", "[autograd][memory]") {
  agt::daemons();
  const int64_t nodes0 = gt::autograd::live_nodes();
  Tensor x = leaf(agt::spread_values(6, 1), {2, 3});
  const uint64_t t0 = worker_tensors();
  {
    // A graph dropped without backward: every node and every saved tensor goes away, including
    // results its nodes adopted when their handles died first.
    Tensor loss = ((x.exp() * x).sigmoid().tanh().relu() + x.sqrt().abs());
    loss = std::get<0>(loss.max(1)).sum();
    CHECK(gt::autograd::live_nodes() > nodes0);
  }
  CHECK(gt::autograd::live_nodes() == nodes0);
  CHECK(worker_tensors() == t0);
  {
    Tensor loss = (x.exp() * x.tanh()).sum();
    loss.backward();  // saved tensors released here; the nodes die with `loss`
  }
  CHECK(gt::autograd::live_nodes() == nodes0);
  CHECK(worker_tensors() == t0 + 1);  // + x.grad
  x.set_grad(Tensor());
  CHECK(worker_tensors() == t0);
}

TEST_CASE("a very long chain of nodes is destroyed without deep recursion", "[autograd][memory]") {
  agt::daemons();
  const int64_t nodes0 = gt::autograd::live_nodes();
  {
    Tensor x = leaf({0}, {1});
    Tensor y = x;
    for (int i = 0; i < 100000; ++i) y = y + 1.0;
    CHECK(gt::autograd::live_nodes() == nodes0 + 100000);
  }
  CHECK(gt::autograd::live_nodes() == nodes0);
  gt::synchronize();
}

TEST_CASE("signal-scope hook points: recorded per node, applied around its gradient ops",
          "[autograd][scopes]") {
  agt::daemons();
  std::string current;
  gt::autograd::set_scope_provider([&] { return current; });
  struct Event {
    std::string scope;
    bool enter;
  };
  std::vector<Event> events;
  int alive = 0, max_alive = 0;
  struct Token {
    // (A constructor, not aggregate initialization: make_shared with parentheses needs one
    // before C++20's parenthesized aggregates, which clang 14 lacks.)
    Token(std::vector<Event>* e, std::string s, int* a) : ev(e), scope(std::move(s)), alive(a) {}
    std::vector<Event>* ev;
    std::string scope;
    int* alive;
    ~Token() {
      ev->push_back({scope, false});
      --*alive;
    }
  };
  gt::autograd::set_backward_scope_hook([&](const std::string& s) -> gt::autograd::ScopeToken {
    events.push_back({s, true});
    max_alive = std::max(max_alive, ++alive);
    return std::make_shared<Token>(&events, s, &alive);
  });

  Tensor x = leaf({1, 2}, {2});
  current = "stage0";
  Tensor h = (x * 2.0).tanh();  // two nodes under stage0
  current = "stage1";
  Tensor loss = (h * h).sum();  // two nodes under stage1
  current = "";
  CHECK(gt::autograd::forward_scope_of(h) == "stage0");
  CHECK(gt::autograd::forward_scope_of(loss) == "stage1");
  CHECK(gt::autograd::forward_scope_of(x).empty());
  loss.backward();
  gt::autograd::set_scope_provider(nullptr);
  gt::autograd::set_backward_scope_hook(nullptr);

  REQUIRE(events.size() == 8);  // enter/exit for each of the 4 nodes, in reverse order
  const std::vector<std::string> order{"stage1", "stage1", "stage0", "stage0"};
  for (size_t i = 0; i < 4; ++i) {
    CHECK(events[2 * i].enter);
    CHECK(events[2 * i].scope == order[i]);
    CHECK_FALSE(events[2 * i + 1].enter);
    CHECK(events[2 * i + 1].scope == order[i]);
  }
  CHECK(max_alive == 1);
  CHECK(alive == 0);
  CHECK(host(x.grad())[0] == Approx(2 * 2 * std::tanh(2.0) * (1 - std::pow(std::tanh(2.0), 2))));
}
