// Index expressions for Tensor::index, libtorch style:
//
//   t.index({gt::Slice(0, 4), gt::Slice(gt::None, gt::None, 2), 3, gt::NewAxis, gt::Ellipsis})
//
// An integer selects one position and drops the dim (negative counts from the end); a Slice
// keeps the dim with Python semantics (open ends, negative indices and steps); None / NewAxis
// inserts a size-1 dim; Ellipsis ("...") stands for all dims not otherwise indexed.
// Tensor::index lowers the whole expression to at most one slice op plus one reshape.
//
// A Tensor is an advanced index (PyTorch's): an integer tensor picks positions along the dim it
// stands for, a bool mask the positions where it is true (over as many dims as it has; a sync
// point, since the count decides the shape). Several index tensors broadcast together and pick
// element-wise; the picked dims replace theirs where the tensors stand next to each other (after
// integer indices drop their dims), else they go first:
//
//   x.index({gt::arange(4), labels})          // x[arange(4), labels]: one entry per row
//   x.index({gt::Slice(), idx, gt::Slice()})  // x[:, idx, :]
//
// The result of an advanced index is a copy; index_put_ with one writes in place.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gt/error.h"

namespace gt {

class Tensor;

struct NoneType {};
struct EllipsisType {};

// As a Slice bound: "open end". As an index: insert a new size-1 dim.
inline constexpr NoneType None{};
inline constexpr NoneType NewAxis{};
inline constexpr EllipsisType Ellipsis{};

// One optional bound of a Slice: an integer, or None / std::nullopt.
class SliceBound {
 public:
  constexpr SliceBound() = default;
  constexpr SliceBound(NoneType) {}          // NOLINT: implicit by design
  constexpr SliceBound(std::nullopt_t) {}    // NOLINT
  template <std::integral I>
    requires(!std::same_as<I, bool>)
  constexpr SliceBound(I v) : v_(static_cast<int64_t>(v)) {}  // NOLINT
  constexpr SliceBound(std::optional<int64_t> v) : v_(v) {}  // NOLINT
  constexpr const std::optional<int64_t>& value() const { return v_; }

 private:
  std::optional<int64_t> v_;
};

// Python's start:stop:step. A missing step is 1; a step of 0 is an error when indexing.
class Slice {
 public:
  constexpr Slice(SliceBound start = {}, SliceBound stop = {}, SliceBound step = {})
      : start_(start.value()), stop_(stop.value()), step_(step.value().value_or(1)) {}
  constexpr const std::optional<int64_t>& start() const { return start_; }
  constexpr const std::optional<int64_t>& stop() const { return stop_; }
  constexpr int64_t step() const { return step_; }

 private:
  std::optional<int64_t> start_, stop_;
  int64_t step_ = 1;
};

class TensorIndex {
 public:
  enum class Kind { kInteger, kSlice, kNone, kEllipsis, kTensor };

  template <std::integral I>
    requires(!std::same_as<I, bool>)
  TensorIndex(I i)  // NOLINT
      : kind_(Kind::kInteger), integer_(static_cast<int64_t>(i)) {}
  TensorIndex(Slice s) : kind_(Kind::kSlice), slice_(s) {}    // NOLINT
  TensorIndex(NoneType) : kind_(Kind::kNone) {}               // NOLINT
  TensorIndex(EllipsisType) : kind_(Kind::kEllipsis) {}       // NOLINT
  TensorIndex(const Tensor& t);                               // NOLINT: an advanced index
  // libtorch accepts the string "..." for Ellipsis.
  TensorIndex(const char* s) : kind_(Kind::kEllipsis) {  // NOLINT
    if (std::string_view(s) != "...")
      throw Error("index: the only string index is \"...\", got \"" + std::string(s) + "\"");
  }

  Kind kind() const { return kind_; }
  bool is_integer() const { return kind_ == Kind::kInteger; }
  bool is_slice() const { return kind_ == Kind::kSlice; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_ellipsis() const { return kind_ == Kind::kEllipsis; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  int64_t integer() const { return integer_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return *tensor_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  Slice slice_;
  std::shared_ptr<const Tensor> tensor_;  // a shared_ptr: Tensor is incomplete here
};

}  // namespace gt
