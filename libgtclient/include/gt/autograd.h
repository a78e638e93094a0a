// Client-side autograd (ARCHITECTURE §3): a dynamic tape, like PyTorch's.
//
// While grad mode is on, every differentiable op whose inputs include a tensor that requires
// grad gives its result a node (grad_fn) holding what the op's gradient rule needs: the inputs'
// shapes/dtypes, the tensors it saved, and the signal scope its forward op ran under. Nodes die
// with their results (nothing global holds them); t.backward() walks them in reverse topological
// order, emitting the gradient ops (they run on the workers like any other op) and accumulating
// into the .grad() of the leaves. Saved tensors are released after a backward pass unless
// retain_graph is set, so the tape frees what it no longer needs.
//
// Gradient conventions (libgtclient/autograd_rules.cpp), PyTorch's: maximum/minimum split the
// gradient evenly between equal operands; a max/min over all elements shares it evenly among
// tied extrema, a max/min over a dim gives it all to the index argmax/argmin return (the first);
// abs/relu have gradient 0 at 0; pow follows PyTorch's masks at exponent 0 / base 0. Zeroed
// gradients are selected, not multiplied by 0/1 masks, so an inf or NaN flowing back does not
// become NaN where the rule gives 0 (x.clamp(min=0).sqrt() at x = -1: gradient 0).
//
// Tensor methods (tensor.h): requires_grad_(), requires_grad(), is_leaf(), grad(), set_grad(),
// backward(), retain_grad(), detach(), clone(), grad_fn_name(), and the in-place add_/sub_/mul_/
// div_/zero_/fill_/copy_ (a leaf that requires grad refuses them outside no-grad, like PyTorch).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gt/tensor.h"

namespace gt {

// Whether ops are recorded on the tape (thread-local; on by default).
bool is_grad_enabled();
void set_grad_enabled(bool enabled);

// Turns recording off for its lifetime (thread-local, nestable), like torch.no_grad().
class NoGradGuard {
 public:
  NoGradGuard() : prev_(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

// Turns recording on for its lifetime (e.g. inside a NoGradGuard), like torch.enable_grad().
class EnableGradGuard {
 public:
  EnableGradGuard() : prev_(is_grad_enabled()) { set_grad_enabled(true); }
  ~EnableGradGuard() { set_grad_enabled(prev_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool prev_;
};

namespace autograd {

// ---- the gradient table ------------------------------------------------------------------------
// Every op of ops.def is classified here, keyed by OpId: differentiable (it has a gradient rule),
// not differentiable (creation, comparisons, argmax/argmin: their results never require grad), or
// unknown (a new op nobody classified yet: the op-table-driven gradcheck test fails on it).
enum class GradKind { kDifferentiable, kNotDifferentiable, kUnknown };
GradKind grad_kind(OpId op);
inline bool is_differentiable(OpId op) { return grad_kind(op) == GradKind::kDifferentiable; }

// Computes the gradients of `outputs` (each seeded with the matching `grad_outputs` entry, or
// ones for a one-element output given an undefined entry) and accumulates them into the .grad()
// of the leaves, like torch.autograd.backward.
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              bool retain_graph = false);

// Returns d(sum outputs·grad_outputs)/d(inputs) without touching any .grad(), like
// torch.autograd.grad. An input the outputs do not depend on gets an undefined tensor
// (or zeros when allow_unused_as_zeros is set).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool allow_unused_as_zeros = false);

// ---- hook points for signal scopes (used by the sharding work; ARCHITECTURE §5) ---------------------
// The forward side: called once per recorded node; its result (the signal scope active when the
// forward op ran) is stored in the node. Empty / unset: "".
using ScopeProvider = std::function<std::string()>;
void set_scope_provider(ScopeProvider provider);

// The backward side: called before a node's gradient ops are emitted, with the scope recorded
// for its forward op; the returned token (any object, type-erased: e.g.
// std::make_shared<MyScopeGuard>(...)) is kept alive while that node's gradient ops (and the
// accumulation of their results) are emitted, then destroyed. Unset: no call.
using ScopeToken = std::shared_ptr<void>;
using BackwardScopeHook = std::function<ScopeToken(const std::string& forward_scope)>;
void set_backward_scope_hook(BackwardScopeHook hook);

// The scope recorded for a tensor's grad_fn ("" for leaves or when no provider is set).
std::string forward_scope_of(const Tensor& t);

// ---- introspection (tests, debugging) ----------------------------------------------------------
// Number of autograd nodes alive in this process.
int64_t live_nodes();
// The ops of every node reachable from t's grad_fn (each node once, most recent first).
std::vector<OpId> recorded_ops(const Tensor& t);

}  // namespace autograd
}  // namespace gt
