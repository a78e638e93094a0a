// The backward engine: walks the nodes reachable from the outputs in reverse topological order
// (a node runs once every node that feeds it a gradient has run; among ready nodes the most
// recently created first, like PyTorch), emitting each node's gradient ops under its backward
// scope and accumulating the results into the leaves' .grad. Runs under NoGradGuard: gradient
// ops are never recorded.
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "libgtclient/autograd_node.h"
#include "libgtclient/run_op.h"

namespace gt::autograd::detail {
namespace {

// Adds g into a .grad slot. The first gradient is stored as is when nothing else refers to it,
// so a later in-place zero_() of one .grad never changes another tensor.
void accumulate(std::shared_ptr<TensorImpl>& slot, Tensor g) {
  if (!slot) {
    if (g.impl().use_count() > 1) g = g.clone();
    slot = g.impl();
  } else {
    slot = (Tensor(slot) + g).impl();
  }
}

// Brings a rule's result to the input's shape (summing broadcast dims) and dtype.
Tensor conform(Tensor g, const TensorMeta& meta, const Node& n, size_t i) {
  if (g.shape() != meta.shape) g = sum_to(g, meta.shape);
  if (g.dtype() != meta.dtype) g = g.cast(meta.dtype);
  if (g.shape() != meta.shape)
    throw Error("autograd: internal error: " + n.name() + " produced a gradient of shape " +
                g.shape().str() + " for input " + std::to_string(i) + " of shape " +
                meta.shape.str());
  return g;
}

struct ReadyOrder {
  bool operator()(const Node* a, const Node* b) const { return a->seq < b->seq; }
};

}  // namespace

std::vector<Tensor> run_backward(const std::vector<Tensor>& outputs,
                                 const std::vector<Tensor>& grad_outputs, bool retain_graph,
                                 const std::vector<Tensor>* capture) {
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    throw Error("backward: got " + std::to_string(grad_outputs.size()) + " gradients for " +
                std::to_string(outputs.size()) + " tensors");
  NoGradGuard no_grad;

  // What to capture instead of accumulating (autograd::grad).
  std::vector<Tensor> captured;
  std::unordered_map<const Node*, size_t> capture_node;
  std::unordered_map<const TensorImpl*, size_t> capture_leaf;
  if (capture != nullptr) {
    captured.resize(capture->size());
    for (size_t j = 0; j < capture->size(); ++j) {
      const Tensor& t = (*capture)[j];
      if (!t.defined()) throw Error("grad: input " + std::to_string(j) + " is undefined");
      const TensorImpl& impl = *t.impl();
      if (impl.grad_fn) {
        capture_node.emplace(static_cast<const Node*>(impl.grad_fn.get()), j);
      } else if (impl.requires_grad) {
        capture_leaf.emplace(&impl, j);
      } else {
        throw Error("grad: input " + std::to_string(j) + " does not require grad");
      }
    }
  }
  auto to_leaf = [&](std::shared_ptr<TensorImpl>& leaf, Tensor g) {
    if (capture == nullptr) {
      accumulate(leaf->grad, std::move(g));
      return;
    }
    auto it = capture_leaf.find(leaf.get());
    if (it == capture_leaf.end()) return;
    Tensor& slot = captured[it->second];
    slot = slot.defined() ? slot + g : std::move(g);
  };

  // Seeds.
  std::vector<std::shared_ptr<Node>> roots;
  std::unordered_map<Node*, Tensor> buffer;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& o = outputs[i];
    if (!o.defined()) throw Error("backward: tensor " + std::to_string(i) + " is undefined");
    std::shared_ptr<TensorImpl> impl = o.impl();
    if (!requires_grad(*impl))
      throw Error("backward: element " + std::to_string(i) +
                  " of tensors does not require grad and does not have a grad_fn");
    Tensor g = i < grad_outputs.size() ? grad_outputs[i] : Tensor();
    if (!g.defined()) {
      if (o.numel() != 1)
        throw Error("backward: grad can be implicitly created only for one-element outputs, "
                    "got shape " + o.shape().str() + "; pass a gradient");
      g = full_like(o, 1.0);
    } else {
      if (g.shape() != o.shape())
        throw Error("backward: gradient of shape " + g.shape().str() +
                    " does not match the tensor's shape " + o.shape().str());
      if (g.dtype() != o.dtype()) g = g.cast(o.dtype());
    }
    if (!impl->grad_fn) {  // a leaf: its gradient is the seed
      to_leaf(impl, std::move(g));
      continue;
    }
    auto node = std::static_pointer_cast<Node>(impl->grad_fn);
    Tensor& b = buffer[node.get()];
    b = b.defined() ? b + g : std::move(g);
    roots.push_back(std::move(node));
  }

  // Dependencies: how many edges from reachable nodes point at each node.
  std::unordered_map<Node*, int> deps;
  {
    std::vector<Node*> stack;
    for (const auto& r : roots)
      if (deps.try_emplace(r.get(), 0).second) stack.push_back(r.get());
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const Edge& e : n->next) {
        if (!e.fn) continue;
        auto [it, inserted] = deps.try_emplace(e.fn.get(), 0);
        ++it->second;
        if (inserted) stack.push_back(e.fn.get());
      }
    }
  }

  std::priority_queue<Node*, std::vector<Node*>, ReadyOrder> ready;
  for (const auto& r : roots)
    if (deps[r.get()] == 0) {
      deps[r.get()] = -1;  // queued once
      ready.push(r.get());
    }

  const BackwardScopeHook& hook = backward_scope_hook();
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    Tensor g;
    if (auto it = buffer.find(n); it != buffer.end()) {
      g = std::move(it->second);
      buffer.erase(it);
    }
    std::vector<Tensor> in_grads(n->next.size());
    if (g.defined()) {
      if (capture != nullptr) {
        if (auto it = capture_node.find(n); it != capture_node.end()) captured[it->second] = g;
      } else if (n->retain_grad) {
        if (auto o = n->out_weak.lock()) accumulate(o->grad, g);
      }
      ScopeToken scope = hook ? hook(n->scope) : nullptr;
      // Constants a rule creates (zeros to scatter into, ...) go where its gradient is.
      gt::detail::PinScope pin(g.impl()->device, false);
      GradCtx ctx{*n, g, in_grads};
      if (n->backward_fn) n->backward_fn(ctx);
      else grad_rule(n->op).fn(ctx);
      g = Tensor();
      for (size_t i = 0; i < in_grads.size(); ++i) {
        if (!in_grads[i].defined()) continue;
        if (!n->needs(i)) {
          in_grads[i] = Tensor();
          continue;
        }
        Tensor gi = conform(std::move(in_grads[i]), n->in_meta[i], *n, i);
        Edge& e = n->next[i];
        if (e.fn) {
          Tensor& b = buffer[e.fn.get()];
          b = b.defined() ? b + gi : std::move(gi);
        } else {
          to_leaf(e.leaf, std::move(gi));
        }
      }
      scope.reset();
    }
    for (const Edge& e : n->next) {
      if (!e.fn) continue;
      if (--deps[e.fn.get()] == 0) {
        deps[e.fn.get()] = -1;
        ready.push(e.fn.get());
      }
    }
    if (!retain_graph) n->release();
  }
  return captured;
}

}  // namespace gt::autograd::detail
