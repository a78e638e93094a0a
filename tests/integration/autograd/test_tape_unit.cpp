// The tape without daemons, against the client unit tests' fake session (it records every
// emitted instruction): the backward-scope token is alive exactly while a node's gradient ops
// are emitted; recording emits nothing extra; gradient ops are never recorded; frees of the
// tape's saved tensors.
#include <catch2/catch.hpp>
#include <gt/gt.h>

#include <set>

#include "tests/unit/client/fake_session.h"

using gt::OpId;
using gt::Tensor;
using gt::test::fake;

TEST_CASE("recording a graph emits exactly the forward ops", "[autograd][tape]") {
  fake().reset();
  Tensor x = gt::zeros({2, 3});
  x.requires_grad_();
  Tensor w = gt::ones({3, 4});
  const size_t before = fake().instrs.size();
  Tensor y = gt::matmul(x, w).relu().sum();
  CHECK(fake().instrs.size() == before + 3);
  CHECK(y.grad_fn_name() == "SumBackward");
  CHECK(gt::autograd::recorded_ops(y) ==
        std::vector<OpId>{OpId::k_sum, OpId::k_relu, OpId::k_matmul});
  {
    gt::NoGradGuard ng;
    CHECK_FALSE(gt::matmul(x, w).requires_grad());
  }
}

TEST_CASE("the backward scope token brackets each node's gradient ops", "[autograd][tape]") {
  fake().reset();
  std::string current;
  gt::autograd::set_scope_provider([&] { return current; });
  struct Bracket {
    std::string scope;
    size_t begin = 0, end = 0;
  };
  std::vector<Bracket> brackets;
  struct Token {
    explicit Token(std::vector<Bracket>* brackets) : b(brackets) {}  // (clang 14: no paren-aggregates)
    std::vector<Bracket>* b;
    ~Token() { b->back().end = fake().instrs.size(); }
  };
  gt::autograd::set_backward_scope_hook([&](const std::string& s) -> gt::autograd::ScopeToken {
    brackets.push_back({s, fake().instrs.size(), 0});
    return std::make_shared<Token>(&brackets);
  });

  Tensor x = gt::zeros({2, 3});
  x.requires_grad_();
  current = "embed";
  Tensor h = (x * 2.0).tanh();
  current = "head";
  Tensor loss = (h * h).mean();
  current = "";
  const size_t start = fake().instrs.size();
  loss.backward();
  const size_t end = fake().instrs.size();
  gt::autograd::set_scope_provider(nullptr);
  gt::autograd::set_backward_scope_hook(nullptr);

  REQUIRE(brackets.size() == 4);
  std::vector<std::string> scopes;
  for (const auto& b : brackets) scopes.push_back(b.scope);
  CHECK(scopes == std::vector<std::string>{"head", "head", "embed", "embed"});
  // Every gradient op is inside a bracket (only the seed `ones` comes before the first), the
  // brackets follow each other without overlap, and each node emitted something.
  CHECK(brackets.front().begin == start + 1);
  CHECK(fake().instrs[start].op == OpId::k_full);
  for (size_t i = 0; i < brackets.size(); ++i) {
    CHECK(brackets[i].end > brackets[i].begin);
    if (i + 1 < brackets.size()) CHECK(brackets[i].end == brackets[i + 1].begin);
  }
  CHECK(brackets.back().end == end);
  // The last instruction lands in x.grad; nothing was recorded on the tape.
  REQUIRE(x.grad().defined());
  CHECK(x.grad().is_leaf());
  CHECK_FALSE(x.grad().requires_grad());
}

TEST_CASE("releasing the tape frees saved results it adopted", "[autograd][tape]") {
  fake().reset();
  Tensor x = gt::zeros({4});
  x.requires_grad_();
  uint64_t exp_id = 0;
  Tensor loss;
  {
    Tensor e = x.exp();  // ExpBackward saves its result...
    exp_id = e.id();
    loss = (e * 3.0).sum();
  }  // ...so the handle's death does not free it
  CHECK(std::count(fake().frees.begin(), fake().frees.end(), exp_id) == 0);
  loss.backward();  // released after use
  CHECK(std::count(fake().frees.begin(), fake().frees.end(), exp_id) == 1);

  // Without backward: freed when the graph dies.
  Tensor l2;
  {
    Tensor s = x.sigmoid();
    exp_id = s.id();
    l2 = s.sum();
  }
  CHECK(std::count(fake().frees.begin(), fake().frees.end(), exp_id) == 0);
  l2 = Tensor();
  CHECK(std::count(fake().frees.begin(), fake().frees.end(), exp_id) == 1);
}
