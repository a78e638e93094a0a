// Autograd recorder: grad mode, the tape nodes, and the hooks detail::run_op calls for every op
// (record / check_in_place / record_in_place), plus the scope hook points.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <string>
#include <unordered_set>
#include <utility>

#include "libgtclient/autograd_node.h"
#include "libgtclient/run_op.h"
#include "libgtclient/view.h"

namespace gt {
namespace {
thread_local bool t_grad_enabled = true;
}  // namespace

bool is_grad_enabled() { return t_grad_enabled; }
void set_grad_enabled(bool enabled) { t_grad_enabled = enabled; }

namespace autograd {
namespace {

std::atomic<int64_t> g_live_nodes{0};
std::atomic<uint64_t> g_next_seq{1};

ScopeProvider& scope_provider() {
  static ScopeProvider p;
  return p;
}

BackwardScopeHook& scope_hook() {
  static BackwardScopeHook h;
  return h;
}

std::string camel(const char* op) {
  std::string s;
  bool up = true;
  for (const char* p = op; *p; ++p) {
    if (*p == '_') {
      up = true;
      continue;
    }
    s += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(*p))) : *p;
    up = false;
  }
  return s;
}

[[noreturn]] void throw_modified(const detail::Node& n, const char* what, uint32_t now, uint32_t then) {
  throw Error("autograd: " + std::string(what) + " needed by " + n.name() +
              " for its gradient has been modified by an in-place operation (it is at version " +
              std::to_string(now) + ", expected version " + std::to_string(then) +
              "); clone it before modifying it, or modify it under gt::NoGradGuard after "
              "backward");
}

[[noreturn]] void throw_released(const detail::Node& n) {
  throw Error("autograd: trying to backward through the graph a second time (" + n.name() +
              "'s saved tensors were freed by the first backward); pass retain_graph = true "
              "to the first backward() if you need to backward twice");
}

}  // namespace

void set_scope_provider(ScopeProvider provider) { scope_provider() = std::move(provider); }
void set_backward_scope_hook(BackwardScopeHook hook) { scope_hook() = std::move(hook); }

std::string forward_scope_of(const Tensor& t) {
  if (!t.defined() || !t.impl()->grad_fn) return "";
  return static_cast<const detail::Node*>(t.impl()->grad_fn.get())->scope;
}

int64_t live_nodes() { return g_live_nodes.load(); }

std::vector<OpId> recorded_ops(const Tensor& t) {
  std::vector<OpId> ops;
  if (!t.defined() || !t.impl()->grad_fn) return ops;
  std::vector<const detail::Node*> stack{static_cast<const detail::Node*>(t.impl()->grad_fn.get())};
  std::unordered_set<const detail::Node*> seen{stack.back()};
  std::vector<const detail::Node*> all;
  while (!stack.empty()) {
    const detail::Node* n = stack.back();
    stack.pop_back();
    all.push_back(n);
    for (const detail::Edge& e : n->next)
      if (e.fn && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
  }
  std::sort(all.begin(), all.end(), [](auto* a, auto* b) { return a->seq > b->seq; });
  for (const detail::Node* n : all) ops.push_back(n->op);
  return ops;
}

namespace detail {

const BackwardScopeHook& backward_scope_hook() { return scope_hook(); }

Node::Node() { g_live_nodes.fetch_add(1, std::memory_order_relaxed); }

// Long chains (a loop of a million `x = x + 1`) must not recurse once per node when they die:
// nodes whose last owner is this one are unlinked iteratively.
Node::~Node() {
  g_live_nodes.fetch_sub(1, std::memory_order_relaxed);
  std::vector<std::shared_ptr<Node>> stack;
  auto unlink = [&stack](Node& n) {
    n.saved.clear();  // saved inputs may own the grad_fn of an upstream node too
    n.out_adopted.reset();
    for (Edge& e : n.next)
      if (e.fn && e.fn.use_count() == 1) stack.push_back(std::move(e.fn));
  };
  unlink(*this);
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    unlink(*n);
  }
}

std::string Node::name() const {
  return fn_name ? std::string(fn_name) : camel(op_name(op)) + "Backward";
}

Tensor Node::saved_input(size_t i) const {
  if (released) throw_released(*this);
  if (i >= saved.size() || !saved[i].impl)
    throw Error("autograd: internal error: " + name() + " did not save input " +
                std::to_string(i));
  const SavedTensor& s = saved[i];
  const uint32_t now = gt::detail::version_of(*s.impl);
  if (now != s.version) throw_modified(*this, "an input", now, s.version);
  return Tensor(s.impl);
}

Tensor Node::output() const {
  if (released) throw_released(*this);
  std::shared_ptr<TensorImpl> o = out_adopted ? out_adopted : out_weak.lock();
  if (!o) throw_modified(*this, "the result", out_version + 1, out_version);
  const uint32_t now = gt::detail::version_of(*o);
  if (now != out_version) throw_modified(*this, "the result", now, out_version);
  return Tensor(std::move(o));
}

void Node::release() {
  released = true;
  saved.clear();
  saved.shrink_to_fit();
  out_adopted.reset();
}

bool requires_grad(const TensorImpl& t) { return t.requires_grad || t.grad_fn != nullptr; }

namespace {

bool needs_grad(const Tensor* t) {
  const TensorImpl& impl = *t->impl();
  return is_floating(impl.meta.dtype) && requires_grad(impl);
}

Edge edge_to(const Tensor* t) {
  const std::shared_ptr<TensorImpl>& impl = t->impl();
  if (impl->grad_fn) return Edge{std::static_pointer_cast<Node>(impl->grad_fn), nullptr};
  return Edge{nullptr, impl};
}

std::shared_ptr<Node> new_node(OpId op, const OpAttrs& attrs) {
  auto node = std::make_shared<Node>();
  node->op = op;
  node->attrs = attrs;
  node->attrs.data = {};
  node->seq = g_next_seq.fetch_add(1, std::memory_order_relaxed);
  if (scope_provider()) node->scope = scope_provider()();
  return node;
}

}  // namespace

void record(OpId op, const OpAttrs& attrs, std::span<const Tensor* const> inputs,
            const Tensor& out) {
  const GradRule& rule = grad_rule(op);
  if (rule.kind != GradKind::kDifferentiable || !is_floating(out.impl()->meta.dtype)) return;
  bool any = false;
  for (const Tensor* t : inputs)
    if (needs_grad(t)) {
      any = true;
      break;
    }
  if (!any) return;

  std::shared_ptr<Node> node = new_node(op, attrs);
  const size_t n = inputs.size();
  node->in_meta.resize(n);
  node->next.resize(n);
  for (size_t i = 0; i < n; ++i) {
    node->in_meta[i] = inputs[i]->impl()->meta;
    if (needs_grad(inputs[i])) node->next[i] = edge_to(inputs[i]);
  }
  node->out_meta = out.impl()->meta;
  SaveSpec spec = rule.save ? rule.save(node->attrs, *node) : SaveSpec{};
  if (spec.inputs != 0) {
    node->saved.resize(n);
    for (size_t i = 0; i < n && i < 32; ++i)
      if (spec.inputs & (1u << i))
        node->saved[i] = SavedTensor{inputs[i]->impl(), gt::detail::version_of(*inputs[i]->impl())};
  }
  node->out_weak = out.impl();  // also used by retain_grad
  if (spec.output) {
    node->needs_out = true;
    node->out_version = gt::detail::version_of(*out.impl());
  }
  out.impl()->grad_fn = std::move(node);
}

Tensor record_function(const char* name, const Tensor& out, std::span<const Tensor* const> inputs,
                       uint32_t save_inputs, std::function<void(GradCtx&)> backward) {
  if (!is_grad_enabled() || !is_floating(out.impl()->meta.dtype)) return out;
  bool any = false;
  for (const Tensor* t : inputs) any = any || needs_grad(t);
  if (!any) return out;
  std::shared_ptr<Node> node = new_node(OpId{}, OpAttrs{});
  node->backward_fn = std::move(backward);
  node->fn_name = name;
  const size_t n = inputs.size();
  node->in_meta.resize(n);
  node->next.resize(n);
  node->saved.resize(n);
  for (size_t i = 0; i < n; ++i) {
    node->in_meta[i] = inputs[i]->impl()->meta;
    if (needs_grad(inputs[i])) node->next[i] = edge_to(inputs[i]);
    if (i < 32 && (save_inputs & (1u << i)))
      node->saved[i] = SavedTensor{inputs[i]->impl(), gt::detail::version_of(*inputs[i]->impl())};
  }
  node->out_meta = out.impl()->meta;
  node->out_weak = out.impl();
  out.impl()->grad_fn = std::move(node);
  return out;
}

void check_in_place(OpId op, std::span<const Tensor* const> inputs) {
  if (!is_grad_enabled() || inputs.empty()) return;
  const TensorImpl& dst = *inputs[0]->impl();
  if (dst.requires_grad && !dst.grad_fn)
    throw Error(std::string(op_name(op)) +
                ": a leaf tensor that requires grad is being used in an in-place operation; " +
                kLeafInPlaceRemedy);
}

// copy_(dst, src) while recording: dst's old value is overwritten, so its history gets a zero
// gradient (its leaves get .grad = 0, as in PyTorch, not None); the new value's gradient flows
// to src (summed over broadcast dims, cast to src's dtype). dst becomes a non-leaf whose grad_fn
// is the copy (PyTorch's CopyBackwards).
// strided_copy_(base, view) (a write through a view, view.h): the base keeps its other elements,
// so its old history gets the gradient of those and the view's value that of the written ones
// (PyTorch's CopySlices).
void record_in_place(OpId op, const OpAttrs& attrs, std::span<const Tensor* const> inputs) {
  const bool strided = op == OpId::k_strided_copy_;
  if (!is_grad_enabled() || (op != OpId::k_copy_ && !strided) || inputs.size() != 2) return;
  const std::shared_ptr<TensorImpl>& dst = inputs[0]->impl();
  bool src_needs = is_floating(dst->meta.dtype) && needs_grad(inputs[1]);
  if (!src_needs && !dst->grad_fn) return;
  std::shared_ptr<Node> node = new_node(op, strided ? attrs : OpAttrs{});
  node->in_meta = {dst->meta, inputs[1]->impl()->meta};
  node->next.resize(2);
  if (dst->grad_fn) node->next[0] = edge_to(inputs[0]);
  if (src_needs) node->next[1] = edge_to(inputs[1]);
  node->out_meta = dst->meta;
  node->out_weak = dst;
  dst->grad_fn = std::move(node);
}

// Called by ~TensorImpl for a tensor with a grad_fn (see Node::out_adopted). Never throws.
bool adopt_output(TensorImpl& impl) noexcept {
  auto* node = static_cast<Node*>(impl.grad_fn.get());
  if (node == nullptr || !node->needs_out || node->released || node->out_adopted) return false;
  if (impl.grad_fn.use_count() <= 1) return false;  // the node dies with this handle
  if (impl.id == 0) return false;
  try {
    auto keep = std::make_shared<TensorImpl>(impl.id, impl.meta);
    keep->version = impl.version;
    keep->view = impl.view;  // a view keeps sharing its base's version counter
    node->out_adopted = std::move(keep);
    impl.id = 0;
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace detail
}  // namespace autograd
}  // namespace gt
