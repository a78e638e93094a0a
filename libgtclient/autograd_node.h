// Autograd internals: the tape node, saved tensors, and the per-op gradient rules
// (autograd_rules.cpp), the recorder (autograd.cpp) and the engine (autograd_engine.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gt/autograd.h"
#include "gt/tensor.h"
#include "libgtclient/run_op.h"

namespace gt::autograd::detail {

struct Node;
struct GradCtx;

// Where an input's gradient goes: into the grad_fn of a non-leaf input, or into the .grad of a
// leaf that requires grad. Neither (both null): the input needs no gradient.
struct Edge {
  std::shared_ptr<Node> fn;
  std::shared_ptr<TensorImpl> leaf;
  bool needed() const { return fn || leaf; }
};

// A tensor a gradient rule needs, with the version it had when saved: an in-place change after
// that makes the backward pass fail clearly instead of using the new values.
struct SavedTensor {
  std::shared_ptr<TensorImpl> impl;
  uint32_t version = 0;
};

struct Node {
  Node();
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  OpId op{};
  OpAttrs attrs;                     // the forward op's attributes (attrs.data cleared)
  std::vector<TensorMeta> in_meta;   // per input
  std::vector<Edge> next;            // per input
  std::vector<SavedTensor> saved;    // per input (impl null when not saved)
  TensorMeta out_meta;
  // The result, when the rule needs it: referenced weakly while the result's handle lives (the
  // result owns this node, so a strong reference would be a cycle); when the handle dies while
  // the node is still needed, ~TensorImpl hands its id over to `out_adopted` (see
  // on_impl_destroyed), so the worker keeps the value exactly as long as the node.
  bool needs_out = false;
  std::weak_ptr<TensorImpl> out_weak;  // always set (retain_grad uses it too)
  std::shared_ptr<TensorImpl> out_adopted;
  uint32_t out_version = 0;
  bool retain_grad = false;  // store the gradient reaching this node into the result's .grad
  bool released = false;     // saved tensors freed by a backward pass without retain_graph
  std::string scope;         // signal scope of the forward op
  uint64_t seq = 0;          // creation order (the engine runs later nodes first)
  // A composite with its own gradient (record_function): run instead of the op's rule, and
  // named for grad_fn (e.g. "MseLossBackward"). `op` is then unused.
  std::function<void(GradCtx&)> backward_fn;
  const char* fn_name = nullptr;

  bool needs(size_t i) const { return i < next.size() && next[i].needed(); }
  Tensor saved_input(size_t i) const;  // throws if not saved / released / modified in place
  Tensor output() const;               // same checks
  void release();
  std::string name() const;  // e.g. "MulBackward"
};

// The gradient rule of one op: fills in_grads[i] for every i with node.needs(i); the engine
// reduces/casts them to the inputs' shapes and dtypes when a rule leaves broadcast dims.
struct GradCtx {
  const Node& node;
  const Tensor& grad;  // dL/d(result), shape and dtype of the result
  std::vector<Tensor>& in_grads;
};
using GradFn = void (*)(GradCtx&);

// What a rule keeps from the forward pass: which inputs, and whether the result.
struct SaveSpec {
  uint32_t inputs = 0;  // bit i: save input i
  bool output = false;
};
using SaveFn = SaveSpec (*)(const OpAttrs& attrs, const Node& node);  // node: in_meta, next set

struct GradRule {
  GradKind kind = GradKind::kUnknown;
  SaveFn save = nullptr;
  GradFn fn = nullptr;
};

// The table, indexed by OpId (autograd_rules.cpp).
const GradRule& grad_rule(OpId op);

// A composite op with its own gradient, as a fused kernel has in torch (torch.autograd.Function
// style): `out` was computed under NoGradGuard from `inputs`; when grad mode is on, `out` is
// floating and an input needs a gradient, `out` gets one node named `name` whose backward is
// `backward` (GradCtx as a rule's: node.saved_input(i) for the inputs whose bit is set in
// `save_inputs`, version-checked; in_grads[i] where node.needs(i), reduced and cast by the engine).
// Used where the composite's own gradient would order its products otherwise than torch's
// formula, so inf and NaN would come out elsewhere (mse_loss). Returns `out`.
Tensor record_function(const char* name, const Tensor& out, std::span<const Tensor* const> inputs,
                       uint32_t save_inputs, std::function<void(GradCtx&)> backward);

// Helpers shared by the rules and the engine (autograd_rules.cpp).
// Sums `g` over the dims that broadcasting added or expanded, giving `target`'s shape.
Tensor sum_to(const Tensor& g, const Shape& target);
// Broadcasts `g` to `target` (a broadcast-compatible shape) as a new tensor.
Tensor expand_to(const Tensor& g, const Shape& target);

// What the error for an in-place write into a leaf that requires grad (or a view of one) tells
// the user to do instead: both languages' ways, since Python users see libgtclient's text.
inline constexpr const char* kLeafInPlaceRemedy =
    "update it with grad disabled, as optimizers do (Python: `with gt.no_grad():` or through "
    "`t.data`; C++: gt::NoGradGuard)";

// The recorder hooks called from detail::run_op (autograd.cpp).
bool requires_grad(const TensorImpl& t);
void check_in_place(OpId op, std::span<const Tensor* const> inputs);
void record(OpId op, const OpAttrs& attrs, std::span<const Tensor* const> inputs,
            const Tensor& out);
void record_in_place(OpId op, const OpAttrs& attrs, std::span<const Tensor* const> inputs);
// Called by ~TensorImpl for a tensor with a grad_fn: when that node still needs the tensor as
// its saved result, the node takes over the id (returns true; impl.id is then 0). Never throws.
bool adopt_output(TensorImpl& impl) noexcept;

// The engine (autograd_engine.cpp). `capture`: when non-empty, the gradients reaching these
// tensors are returned instead of accumulated into any .grad.
std::vector<Tensor> run_backward(const std::vector<Tensor>& outputs,
                                 const std::vector<Tensor>& grad_outputs, bool retain_graph,
                                 const std::vector<Tensor>* capture);

const BackwardScopeHook& backward_scope_hook();

}  // namespace gt::autograd::detail
