// gt::Tensor: the client's tensor handle (libtorch-style API).
//
// A Tensor is a cheap, shared handle to a tensor that lives on the GT workers. Every op computes
// the result's shape and dtype here (so shape/dtype/axis errors throw gt::Error at the call site,
// like PyTorch), then queues one instruction and returns at once: no round trip per op. Only the
// sync points (to_vector, item, printing, gt::synchronize, gt::worker_stats) wait; errors of
// queued instructions surface there. When the last handle to a tensor dies, its id is freed.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "gt/device.h"
#include "gt/dtype.h"
#include "gt/error.h"
#include "gt/host_data.h"
#include "gt/indexing.h"
#include "gt/core/ops.h"
#include "gt/core/shape.h"

namespace gt {

class Tensor;
namespace detail {
struct ViewInfo;  // libgtclient/view.h
}

// The state behind a Tensor handle. Shared by all copies of the handle; its destructor frees the
// id on the workers (never throws; does nothing once the session is gone).
struct TensorImpl {
  TensorImpl(uint64_t id_, TensorMeta meta_) : id(id_), meta(meta_) {}
  ~TensorImpl();
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;

  uint64_t id = 0;  // 0: nothing to free
  TensorMeta meta;

  // Autograd (gt/autograd.h). requires_grad is the leaf flag; a non-leaf requires grad through
  // its grad_fn. version counts in-place writes, so stale saved tensors are detected.
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;
  std::shared_ptr<void> grad_fn;  // autograd node
  uint32_t version = 0;  // a view uses its base's (detail::version_of)
  int32_t device = -1;   // the worker it is pinned to (gt/device.h); -1: the dispatcher's choice

  // Set for a view (reshape, slice, permute, expand, detach, ...): where its elements sit in the
  // base it aliases (libgtclient/view.h).
  std::shared_ptr<detail::ViewInfo> view;
};

// A number operand (Python-style scalar): remembers whether it was written as a bool, an
// integer or a float, which decides type promotion as in PyTorch (int tensor + 2 stays int;
// int tensor + 2.0 becomes float32; bool tensor + true stays bool, + 1 becomes int64). The op
// converts it to its dtype first: an int32 op wraps 2^40, a float16 op rounds 70000. to inf.
class Scalar {
 public:
  template <typename T>
    requires std::is_arithmetic_v<T>
  constexpr Scalar(T v)  // NOLINT: implicit by design
      : d_(static_cast<double>(v)),
        integral_(std::is_integral_v<T>),
        bool_(std::is_same_v<T, bool>) {
    if constexpr (std::is_integral_v<T>) {
      // Exact for int64 tensors: a double holds integers exactly only up to 2^53.
      if (std::is_signed_v<T> || static_cast<unsigned long long>(v) <= 0x7fffffffffffffffULL) {
        i_ = static_cast<int64_t>(v);
        exact_ = true;
      }
    }
  }
  Scalar(half v) : d_(static_cast<float>(v)) {}      // NOLINT
  Scalar(bfloat16 v) : d_(static_cast<float>(v)) {}  // NOLINT

  constexpr double to_double() const { return d_; }
  constexpr bool is_integral() const { return integral_; }  // true for bool too
  constexpr bool is_bool() const { return bool_; }
  // The integer itself, when it was written as one that fits int64.
  constexpr std::optional<int64_t> exact_int() const {
    return exact_ ? std::optional<int64_t>(i_) : std::nullopt;
  }

 private:
  double d_ = 0;
  int64_t i_ = 0;
  bool exact_ = false;
  bool integral_ = false;
  bool bool_ = false;
};

// A list of sizes or dims: accepts {2, 3}, a std::vector<int64_t>, a gt::Shape or a span.
class Dims {
 public:
  Dims() = default;
  Dims(std::initializer_list<int64_t> v) : v_(v) {}            // NOLINT: implicit by design
  Dims(const std::vector<int64_t>& v) : v_(v) {}               // NOLINT
  Dims(std::span<const int64_t> v) : v_(v.begin(), v.end()) {} // NOLINT
  Dims(const Shape& s) : v_(s.begin(), s.end()) {}             // NOLINT

  size_t size() const { return v_.size(); }
  int64_t operator[](size_t i) const { return v_[i]; }
  const std::vector<int64_t>& vec() const { return v_; }
  auto begin() const { return v_.begin(); }
  auto end() const { return v_.end(); }

 private:
  std::vector<int64_t> v_;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: any use but defined() throws
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- accessors -------------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  uint64_t id() const { return checked().id; }
  const TensorMeta& meta() const { return checked().meta; }
  const Shape& shape() const { return checked().meta.shape; }
  std::vector<int64_t> sizes() const;
  int64_t size(int64_t dim) const;  // negative dims count from the end
  int64_t dim() const { return shape().rank(); }
  int64_t numel() const { return shape().numel(); }
  DType dtype() const { return checked().meta.dtype; }
  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }

  // ---- table-shaped ops (gt/tensor_api.def): unary and binary elementwise, comparisons
  // (bool results), reductions over all elements or one dim (max/min(dim) give (values,
  // indices) like PyTorch's; argmax/argmin give the indices) ----------------------------------
#define GT_API_UNARY(name, functional) Tensor name() const;
#define GT_API_BINARY(name, py_dunder)   \
  Tensor name(const Tensor& o) const;    \
  Tensor name(Scalar o) const;
#define GT_API_COMPARE(name) GT_API_BINARY(name, none)
#define GT_API_REDUCE(name) \
  Tensor name() const;      \
  Tensor name(int64_t dim, bool keepdim = false) const;
#define GT_API_REDUCE_INDEXED(name, index_op) \
  Tensor name() const;                        \
  std::tuple<Tensor, Tensor> name(int64_t dim, bool keepdim = false) const;
#include "gt/tensor_api.def"

  Tensor matmul(const Tensor& o) const;
  // ~x: bitwise not of an integer tensor, logical not of a bool one (floating: an error).
  Tensor bitwise_not() const;

  // ---- reductions with more attributes ----------------------------------------------------
  // Variance over all elements (no dim) or one dim, divided by max(0, n - correction):
  // correction 1 is torch.var's unbiased default, 0 the population variance. Floating result.
  Tensor var(std::optional<int64_t> dim = std::nullopt, double correction = 1,
             bool keepdim = false) const;
  // log(sum(exp(x))), computed stably (max-shifted) in one op; its gradient is softmax.
  Tensor logsumexp() const;
  Tensor logsumexp(int64_t dim, bool keepdim = false) const;
  // Running sums along dim (torch.cumsum): the same shape; integer and bool tensors give int64.
  Tensor cumsum(int64_t dim) const;
  // Standard deviation: sqrt(var(dim, correction, keepdim)) (torch.std); its gradient is NaN
  // where the deviation is 0, as torch's.
  Tensor std(std::optional<int64_t> dim = std::nullopt, double correction = 1,
             bool keepdim = false) const;

  // ---- several dims at once (tensor_reduce_dims.cpp): torch's sum({0, 1}) / mean({0, 1}). The
  // dims move last and merge into one reduced dim, so the result rounds once, as torch's.
  Tensor sum(Dims dims, bool keepdim = false) const;
  Tensor mean(Dims dims, bool keepdim = false) const;
  Tensor var(Dims dims, double correction = 1, bool keepdim = false) const;
  Tensor std(Dims dims, double correction = 1, bool keepdim = false) const;
  Tensor logsumexp(Dims dims, bool keepdim = false) const;

  // ---- sorting (tensor_sort.cpp): stable, NaN above every number (torch.sort's order) -------
  // The positions (int64) that sort each line along dim.
  Tensor argsort(int64_t dim = -1, bool descending = false) const;
  // (values, indices) sorted along dim, as torch.sort (its stable=True order).
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  // The k largest (or smallest) along dim, in sorted order, as torch.topk; 0 <= k <= size.
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true,
                                  bool sorted = true) const;
  // The values sorted along dim 0 (torch.msort).
  Tensor msort() const;

  // ---- logical reductions and comparisons (tensor_logic.cpp) --------------------------------
  // Bool: whether any / all elements (of the tensor, or along dim) are nonzero. NaN is nonzero;
  // an empty reduction gives false / true (torch.any / torch.all).
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  // Bool, broadcast (torch.isclose): a == b, or a finite |a - b| <= atol + |rtol * b|; NaN is
  // close to NaN only with equal_nan. Both operands of one dtype (as torch, which raises).
  Tensor isclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8,
                 bool equal_nan = false) const;
  // Sync points: isclose everywhere (torch.allclose); the same shape and every element equal,
  // after type promotion (torch.equal).
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8,
                bool equal_nan = false) const;
  bool equal(const Tensor& other) const;

  // ---- indexing (int64 or int32 index tensors). Index VALUES are only seen by the worker: one
  // out of range (negative ones included) fails that op, reported at the next sync point. -----
  Tensor index_select(int64_t dim, const Tensor& index) const;  // index 0-d or 1-d
  Tensor gather(int64_t dim, const Tensor& index) const;        // index of this tensor's rank
  // Out of place (torch's scatter_add / index_add): a copy of this tensor with src's elements
  // added at the index positions along dim (repeated indices accumulate).
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  // `value` (converted to this dtype) where the bool `mask` (broadcast) is true.
  Tensor masked_fill(const Tensor& mask, Scalar value) const;
  // min(max(x, min), max), either bound optional (lo > hi gives hi). An integer tensor stays
  // integer only for integer bounds; a floating bound gives float32 (like PyTorch).
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max) const;
  Tensor clamp_min(Scalar min) const;
  Tensor clamp_max(Scalar max) const;

  // ---- layout: views that alias, as in PyTorch. These results share the elements of the tensor
  // they were made from (its base): an in-place write through either is seen by both. Each
  // keeps PyTorch's strides (stride(), is_contiguous()); the workers hold a contiguous copy of
  // every view, refreshed lazily after its base is written (libgtclient/view.h). --------------
  // A view when the new shape fits the strides (always for a contiguous tensor), else a copy.
  Tensor reshape(Dims shape) const;  // one -1 is inferred
  // Always a view: throws where reshape would have to copy (a non-contiguous tensor whose dims
  // the new shape merges or splits), as PyTorch's view does.
  Tensor view(Dims shape) const;
  Tensor flatten() const;  // reshape to 1-D
  Tensor permute(Dims dims) const;  // negative dims allowed
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;  // transpose of a tensor with <= 2 dims
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze() const;             // drops every size-1 dim
  Tensor squeeze(int64_t dim) const;  // drops `dim` if its size is 1
  // Python slicing of one dim: start:end:step (open ends: gt::None / std::nullopt; any step
  // sign; out-of-range ends clamp like Python).
  Tensor slice(int64_t dim = 0, SliceBound start = {}, SliceBound end = {}, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;  // drops `dim`
  Tensor index(std::initializer_list<TensorIndex> indices) const;
  Tensor index(const std::vector<TensorIndex>& indices) const;
  // Python's t[indices] = value (libtorch's index_put_ with TensorIndex): index(indices)
  // .copy_(value) (broadcast, converted), written straight into this tensor when it is no view
  // (one instruction, no materialized view). Returns *this.
  const Tensor& index_put_(const std::vector<TensorIndex>& indices, const Tensor& value) const;
  const Tensor& index_put_(const std::vector<TensorIndex>& indices, Scalar value) const;
  // ---- by a bool mask or an integer index tensor (tensor_mask.cpp) -------------------------
  // Python's t[mask]: the rows where the bool `mask` (the shape of t's leading dims) is true,
  // in row-major order, shape (count, t's remaining dims); a copy. A sync point: the count
  // decides the shape. masked_select: mask and t broadcast together, a 1-d result.
  Tensor masked_index(const Tensor& mask) const;
  Tensor masked_select(const Tensor& mask) const;
  // Python's t[mask] = value: a number (or one-element tensor) is written where the mask is
  // true without a sync; a tensor broadcast to (count, remaining dims) is checked against the
  // count first (a sync point) and its rows written in order. Returns *this.
  const Tensor& masked_put_(const Tensor& mask, const Tensor& value) const;
  const Tensor& masked_put_(const Tensor& mask, Scalar value) const;
  // torch.index_copy_: the slices of `source` (t's shape with size len(index) along dim,
  // converted to t's dtype) written at the positions a 1-d (or 0-d) int64/int32 `index` gives
  // along dim. No sync; an index out of range fails like index_select's. With repeated
  // indices, which slice lands is unspecified (as in torch). Returns *this.
  const Tensor& index_copy_(int64_t dim, const Tensor& index, const Tensor& source) const;
  // Broadcast to `shape` (new leading dims allowed; -1 keeps a dim): a view whose broadcast
  // dims have stride 0, so in-place writes through it are refused (as in PyTorch).
  Tensor expand(Dims shape) const;
  Tensor expand_as(const Tensor& other) const;
  // *this when its strides are row-major, else a copy that is (differentiable).
  Tensor contiguous() const;
  bool is_contiguous() const;
  std::vector<int64_t> stride() const;  // in elements, PyTorch's
  int64_t storage_offset() const;       // where the first element sits in the base
  bool is_view() const { return checked().view != nullptr; }

  // ---- dtype and in-place --------------------------------------------------------------------
  Tensor to(DType dtype) const;  // returns *this when the dtype already matches (like PyTorch)
  Tensor cast(DType dtype) const;  // always a new tensor

  // ---- devices (gt/device.h): a device names a worker ----------------------------------------
  Device device() const;  // cuda:N when pinned to worker N, else auto
  bool is_cuda() const { return checked().device >= 0; }
  int64_t get_device() const { return checked().device; }  // -1 when not pinned (torch's CPU)
  // A copy on `device`'s worker (differentiable; *this when already there or `device` pins
  // nothing), converted to `dtype` when one is given.
  Tensor to(const Device& device, std::optional<DType> dtype = std::nullopt) const;
  Tensor to(const TensorOptions& options) const;
  Tensor to(DeviceType type) const { return to(Device(type)); }
  Tensor cuda(std::optional<int> index = std::nullopt) const;  // to(cuda:index); no index: *this
  Tensor cpu() const { return *this; }  // values reach the host from any worker
  // Writes src (broadcast, converted to this dtype) into this tensor; returns *this.
  const Tensor& copy_(const Tensor& src) const;

  // ---- in-place arithmetic (written back with copy_; recorded on the tape like copy_; a leaf
  // that requires grad refuses them outside gt::NoGradGuard, like PyTorch) --------------------
  const Tensor& add_(const Tensor& o, Scalar alpha = 1) const;  // this += alpha * o
  const Tensor& add_(Scalar o) const;
  const Tensor& sub_(const Tensor& o, Scalar alpha = 1) const;  // this -= alpha * o
  const Tensor& sub_(Scalar o) const;
  const Tensor& mul_(const Tensor& o) const;
  const Tensor& mul_(Scalar o) const;
  const Tensor& div_(const Tensor& o) const;
  const Tensor& div_(Scalar o) const;
  const Tensor& zero_() const;
  const Tensor& fill_(Scalar value) const;
  // In-place forms of the unary table ops (x.relu_(), x.exp_(), ...), clamp_, masked_fill_ and
  // pow_, the same way: a result that cannot be cast back to this dtype throws (int x.exp_()).
#define GT_API_UNARY(name, functional) const Tensor& name##_() const;
#include "gt/tensor_api.def"
  const Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max) const;
  const Tensor& masked_fill_(const Tensor& mask, Scalar value) const;
  const Tensor& pow_(const Tensor& exponent) const;
  const Tensor& pow_(Scalar exponent) const;
  // Compound assignment, in place as add_ / sub_ / mul_ / div_ (torch's C++ operators).
  const Tensor& operator+=(const Tensor& o) const { return add_(o); }
  const Tensor& operator+=(Scalar o) const { return add_(o); }
  const Tensor& operator-=(const Tensor& o) const { return sub_(o); }
  const Tensor& operator-=(Scalar o) const { return sub_(o); }
  const Tensor& operator*=(const Tensor& o) const { return mul_(o); }
  const Tensor& operator*=(Scalar o) const { return mul_(o); }
  const Tensor& operator/=(const Tensor& o) const { return div_(o); }
  const Tensor& operator/=(Scalar o) const { return div_(o); }

  // ---- autograd (gt/autograd.h: NoGradGuard, autograd::backward/grad, scope hooks) ----------
  bool requires_grad() const;  // a leaf flagged with requires_grad_, or any result with a grad_fn
  // Flags a leaf (floating dtype only) as requiring grad; returns *this.
  const Tensor& requires_grad_(bool requires_grad = true) const;
  bool is_leaf() const;  // no grad_fn
  // The accumulated gradient (undefined until a backward pass reaches this tensor). Backward
  // passes add into it until it is zeroed (grad().zero_()) or cleared (set_grad(Tensor())).
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;
  // Backpropagates from this tensor: `gradient` defaults to ones for a one-element tensor.
  // Saved tensors are freed afterwards unless retain_graph.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  void retain_grad() const;  // a non-leaf keeps the gradient reaching it in grad()
  // Same elements, no history: a view, so an in-place write through either changes both (the
  // write through the detached one is not recorded, as in PyTorch).
  Tensor detach() const;
  Tensor clone() const;      // a copy (differentiable)
  std::string grad_fn_name() const;  // e.g. "MulBackward"; "" for a leaf

  // ---- sync points ----------------------------------------------------------------------------
  // Fetches the values (row-major), converted to T (any arithmetic type, gt::Half, gt::BFloat16).
  template <typename T>
  std::vector<T> to_vector() const;
  // The single value of a one-element tensor, converted to T.
  template <typename T>
  T item() const;
  // The values as row-major bytes of dtype() (numel() * element size), unconverted.
  std::string to_bytes() const;

 private:
  const TensorImpl& checked() const {
    if (!impl_)
      throw Error(Code::kFailedPrecondition,
                  "gt: use of an undefined tensor (default-constructed gt::Tensor)");
    return *impl_;
  }
  std::shared_ptr<TensorImpl> impl_;
};

// ---- factories ----------------------------------------------------------------------------------
Tensor zeros(Dims shape, DType dtype = kFloat32);
Tensor ones(Dims shape, DType dtype = kFloat32);
// Without a dtype: bool for a bool value, int64 for an integer, float32 otherwise.
Tensor full(Dims shape, Scalar value, std::optional<DType> dtype = std::nullopt);
// 0-d tensor holding `value`.
Tensor scalar_tensor(Scalar value, DType dtype = kFloat32);
// [start, end) by step. Without a dtype: int64 when all arguments are integers, else float32.
Tensor arange(Scalar end, std::optional<DType> dtype = std::nullopt);
Tensor arange(Scalar start, Scalar end, DType dtype);
Tensor arange(Scalar start, Scalar end, Scalar step = 1, std::optional<DType> dtype = std::nullopt);
// Random tensors (counter-based: reproducible after gt::manual_seed).
Tensor randn(Dims shape, DType dtype = kFloat32);  // standard normal
Tensor rand(Dims shape, DType dtype = kFloat32);   // uniform [0, 1)
// Uniform integers in [low, high) (torch.randint); any range up to 2^62 (48 random bits beyond
// 2^24, so the bias of the last step is below range / 2^48).
Tensor randint(int64_t low, int64_t high, Dims shape, DType dtype = kInt64);
// torch.empty: zeros here (a worker never hands out bytes another session left behind).
Tensor empty(Dims shape, DType dtype = kFloat32);
// The n x m identity (m = n by default), torch.eye.
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, DType dtype = kFloat32);
// `steps` values from start to end, both included, evenly spaced (torch.linspace: the first half
// counted up from start, the second down from end, so both ends are exact). An integer dtype
// gets the float32 values truncated.
Tensor linspace(double start, double end, int64_t steps, DType dtype = kFloat32);
// Factories shaped like `t`, of its dtype unless one is given (torch's *_like).
Tensor zeros_like(const Tensor& t, std::optional<DType> dtype = std::nullopt);
Tensor ones_like(const Tensor& t, std::optional<DType> dtype = std::nullopt);
Tensor empty_like(const Tensor& t, std::optional<DType> dtype = std::nullopt);
Tensor full_like(const Tensor& t, Scalar value, std::optional<DType> dtype = std::nullopt);
Tensor rand_like(const Tensor& t, std::optional<DType> dtype = std::nullopt);
Tensor randn_like(const Tensor& t, std::optional<DType> dtype = std::nullopt);
// The same factories with torch::TensorOptions (dtype, device, requires_grad):
//   gt::zeros({2, 3}, gt::TensorOptions().dtype(gt::kInt64).device("cuda:1")).
Tensor zeros(Dims shape, const TensorOptions& options);
Tensor ones(Dims shape, const TensorOptions& options);
Tensor empty(Dims shape, const TensorOptions& options);
Tensor randn(Dims shape, const TensorOptions& options);
Tensor rand(Dims shape, const TensorOptions& options);
Tensor full(Dims shape, Scalar value, const TensorOptions& options);
Tensor arange(Scalar end, const TensorOptions& options);
Tensor arange(Scalar start, Scalar end, Scalar step, const TensorOptions& options);
Tensor randint(int64_t low, int64_t high, Dims shape, const TensorOptions& options);
Tensor eye(int64_t n, const TensorOptions& options);
Tensor linspace(double start, double end, int64_t steps, const TensorOptions& options);
void manual_seed(uint64_t seed);
// How float32 matmuls may compute, as torch.set_float32_matmul_precision: "highest" (exactly in
// float32, the default), "high" (TF32 tensor cores allowed: a 10-bit mantissa in the products),
// "medium" (bfloat16 allowed). Process-wide, read by every matmul when it is issued (backward
// ones included); CPU workers always compute "highest". Anything else throws (torch only warns).
void set_float32_matmul_precision(std::string_view precision);
std::string get_float32_matmul_precision();
// Uploads row-major bytes of `dtype` as a tensor of `shape` (bytes.size() must match).
Tensor from_bytes(Dims shape, DType dtype, std::string_view bytes);
// A possibly negative dim as an index in [0, rank) (Python style); throws naming `what`.
int64_t wrap_dim(int64_t dim, int64_t rank, const char* what = "dim");

// Uploads host values as a tensor of `shape` (one -1 allowed; default: 1-D). The dtype defaults
// from T: float/double -> float32, bool -> bool, Half -> float16, BFloat16 -> bfloat16,
// integers up to 32 bits -> int32, wider -> int64. Values are converted to `dtype` here.
template <typename T>
Tensor from_vector(const std::vector<T>& values, Dims shape,
                   std::optional<DType> dtype = std::nullopt);
template <typename T>
Tensor from_vector(const std::vector<T>& values, std::optional<DType> dtype = std::nullopt) {
  return from_vector(values, Dims{static_cast<int64_t>(values.size())}, dtype);
}

// A nested brace list of numbers, for gt::tensor({{1, 2}, {3, 4}}) (tensor_literal.cpp).
class TensorLiteral {
 public:
  TensorLiteral(bool v) : kind_(Kind::kBool), i_(v) {}  // NOLINT: implicit by design
  template <std::integral I>
    requires(!std::same_as<I, bool>)
  TensorLiteral(I v) : kind_(Kind::kInt), i_(static_cast<int64_t>(v)) {}  // NOLINT
  template <std::floating_point F>
  TensorLiteral(F v) : kind_(Kind::kFloat), f_(static_cast<double>(v)) {}  // NOLINT
  TensorLiteral(std::initializer_list<TensorLiteral> items)  // NOLINT
      : kind_(Kind::kList), items_(items) {}

  enum class Kind { kBool, kInt, kFloat, kList };
  Kind kind() const { return kind_; }
  int64_t int_value() const { return i_; }
  double float_value() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(i_); }
  const std::vector<TensorLiteral>& items() const { return items_; }

 private:
  Kind kind_;
  int64_t i_ = 0;
  double f_ = 0;
  std::vector<TensorLiteral> items_;
};
// The tensor of a literal, as torch::tensor: its shape from the nesting (every list at one depth
// of the same length), its dtype float32 if any number is floating, else int64 for integers,
// else bool; `dtype` converts. gt::tensor(2.5) is 0-d; gt::tensor({}) is float32 [0].
Tensor tensor(const TensorLiteral& data, std::optional<DType> dtype = std::nullopt);
Tensor tensor(const TensorLiteral& data, const TensorOptions& options);

// ---- free-function forms (gt/tensor_api.def) ---------------------------------------------------
#define GT_API_UNARY(name, functional) Tensor name(const Tensor& x);
#define GT_API_BINARY(name, py_dunder)          \
  Tensor name(const Tensor& a, const Tensor& b); \
  Tensor name(const Tensor& a, Scalar b);        \
  Tensor name(Scalar a, const Tensor& b);
#define GT_API_COMPARE(name) GT_API_BINARY(name, none)
#define GT_API_REDUCE(name) \
  Tensor name(const Tensor& x);         \
  Tensor name(const Tensor& x, int64_t dim, bool keepdim = false);
#define GT_API_REDUCE_INDEXED(name, index_op) \
  Tensor name(const Tensor& x);               \
  std::tuple<Tensor, Tensor> name(const Tensor& x, int64_t dim, bool keepdim = false);
#define GT_API_OPERATOR(symbol, name)                     \
  Tensor operator symbol(const Tensor& a, const Tensor& b); \
  Tensor operator symbol(const Tensor& a, Scalar b);        \
  Tensor operator symbol(Scalar a, const Tensor& b);
#include "gt/tensor_api.def"
Tensor operator-(const Tensor& a);
Tensor operator~(const Tensor& a);
Tensor bitwise_not(const Tensor& x);

// Elementwise cond ? a : b (cond must be bool; a scalar becomes a 0-d tensor of the other
// operand's dtype where possible).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, Scalar a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, Scalar b);
Tensor where(const Tensor& cond, Scalar a, Scalar b);
Tensor matmul(const Tensor& a, const Tensor& b);

Tensor reshape(const Tensor& x, Dims shape);
Tensor permute(const Tensor& x, Dims dims);
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor cumsum(const Tensor& x, int64_t dim);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false);
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true);
Tensor msort(const Tensor& x);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false);
bool equal(const Tensor& a, const Tensor& b);

// ---- session-level ------------------------------------------------------------------------------
// Connects to a running dispatcher ("host:port" or "unix:/path"); call before the first op.
// Without it, GT_ADDRESS is used, or a private dispatcher and workers are spawned.
void connect(const std::string& address);
// How many workers the embedded default spawns (1..64, default 1); call before the first op.
void set_embedded_workers(int n);
// Waits until every op queued so far has run; throws the first error among them.
void synchronize();
// The deadline of every sync point (fetch, synchronize, stats), in seconds: one that gets no
// answer from the dispatcher for this long throws gt::Error ("no answer from the dispatcher
// ...") and the session is lost, instead of waiting forever. 0: no deadline; negative: back to
// GT_SYNC_TIMEOUT_S, else the default (900 s). Takes effect at the next sync point.
void set_sync_timeout(double seconds);
// True while the process-wide session exists (after the first op, before exit or shutdown).
bool session_active();
// The dispatcher's id of this process's session (starts the session if there is none yet).
uint64_t session_id();
// One worker's counters, as gt::worker_stats() reports them (a sync point).
struct WorkerStats {
  uint32_t worker_id = 0;
  std::string device;
  uint64_t tensors = 0, bytes = 0, ops_executed = 0, errors = 0, peak_bytes = 0,
           reserved_bytes = 0, sessions = 0, peer_bytes_sent = 0, peer_bytes_received = 0;
};
std::vector<WorkerStats> worker_stats();

// ---- printing -----------------------------------------------------------------------------------
// PyTorch-style text of a tensor's values (`bytes`: row-major, meta.nbytes() long), e.g.
// "tensor([[ 0.1234, -1.2345],\n        [ 2.0000,  0.5000]])". Pure: no session needed.
// A pinned tensor's device ("cuda:1") is shown after the values, as torch shows it.
std::string format_tensor(const TensorMeta& meta, const std::string& bytes,
                          const std::string& device = "");
// Fetches the tensor (a sync point) and prints format_tensor of it.
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- implementation details ---------------------------------------------------------------------
namespace detail {

// Payloads above this are uploaded as from_host (first chunk) + host_chunk instructions (less
// where the dispatcher's frame limit is smaller: Session::upload_chunk_bytes).
inline constexpr size_t kHostChunkBytes = size_t{4} << 20;

// Creates a tensor of `meta` from row-major host bytes (chunked above the session's chunk size).
Tensor from_host_bytes(const TensorMeta& meta, std::string_view bytes);
// Fetches a tensor's bytes (sync point); checks their size against its meta.
std::string fetch_bytes(const Tensor& t);
// Fetches a tensor's bytes straight into `dst`, `nbytes` long (its meta's size; checked): the
// bytes are received there, not copied from an intermediate buffer (issue 15).
void fetch_into(const Tensor& t, void* dst, size_t nbytes);
// t's values (t.meta().nbytes() bytes) in memory the result owns: from a local dispatcher, the
// shared-memory region the worker wrote them into (no copy); else a buffer fetched into.
std::shared_ptr<const char> fetch_shared(const Tensor& t);
// A Dims as a Shape (throws when the rank exceeds kMaxRank); `what` names the op in errors.
Shape to_shape(const Dims& dims, const char* what);
// Normalizes a possibly negative dim against `rank` (Python style); throws naming `what`.
int64_t normalize_dim_or_throw(int64_t dim, int64_t rank, const char* what);
// Resolves from_vector's shape (one -1 allowed) against the number of values.
Shape from_vector_shape(const Dims& shape, size_t n_values);
// A reduction over several dims of t (normalized; a repeat is an error naming `what`): the dims
// are moved last and merged, and one(x, dim, keepdim) reduces that merged dim.
Tensor reduce_merged(const Tensor& t, std::vector<int64_t> dims, bool keepdim,
                     const std::function<Tensor(const Tensor&, int64_t, bool)>& one,
                     const char* what);
// Moves and/or converts t's value in place: every handle to t sees the new device and dtype (what
// Module::to does to parameters, as torch's `param.data = ...`). Not recorded by autograd; t's
// grad moves along. t must be a leaf and not a view.
void move_in_place(const Tensor& t, const Device& device, std::optional<DType> dtype);

}  // namespace detail

// ---- template definitions -----------------------------------------------------------------------

template <typename T>
std::vector<T> Tensor::to_vector() const {
  if constexpr (detail::has_raw_layout_v<T>) {
    // The host type is the dtype's own representation: the values are received into the
    // vector itself, with no conversion pass.
    const TensorMeta m = meta();
    if (detail::is_host_type_of<T>(m.dtype)) {
      std::vector<T> out(static_cast<size_t>(m.shape.numel()));
      detail::fetch_into(*this, out.data(), out.size() * sizeof(T));
      return out;
    }
  }
  std::string bytes = detail::fetch_bytes(*this);
  return detail::decode_elements<T>(meta(), bytes);
}

template <typename T>
T Tensor::item() const {
  int64_t n = numel();
  if (n != 1)
    throw Error("item: a tensor with " + std::to_string(n) +
                " elements cannot be converted to a scalar");
  return to_vector<T>().at(0);
}

template <typename T>
Tensor from_vector(const std::vector<T>& values, Dims shape, std::optional<DType> dtype) {
  DType dt = dtype.value_or(detail::default_dtype<T>());
  Shape s = detail::from_vector_shape(shape, values.size());
  std::string bytes = detail::encode_elements(values, dt);
  return detail::from_host_bytes(TensorMeta{s, dt}, bytes);
}

}  // namespace gt
