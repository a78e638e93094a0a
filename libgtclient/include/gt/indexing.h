// Index expressions for Tensor::index, libtorch style:
//
//   t.index({gt::Slice(0, 4), gt::Slice(gt::None, gt::None, 2), 3, gt::NewAxis, gt::Ellipsis})
//
// An integer selects one position and drops the dim (negative counts from the end); a Slice
// keeps the dim with Python semantics (open ends, negative indices and steps); None / NewAxis
// inserts a size-1 dim; Ellipsis ("...") stands for all dims not otherwise indexed.
// Tensor::index lowers the whole expression to at most one slice op plus one reshape.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gt/error.h"

namespace gt {

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
  enum class Kind { kInteger, kSlice, kNone, kEllipsis };

  template <std::integral I>
    requires(!std::same_as<I, bool>)
  constexpr TensorIndex(I i)  // NOLINT
      : kind_(Kind::kInteger), integer_(static_cast<int64_t>(i)) {}
  constexpr TensorIndex(Slice s) : kind_(Kind::kSlice), slice_(s) {}    // NOLINT
  constexpr TensorIndex(NoneType) : kind_(Kind::kNone) {}               // NOLINT
  constexpr TensorIndex(EllipsisType) : kind_(Kind::kEllipsis) {}       // NOLINT
  // libtorch accepts the string "..." for Ellipsis.
  TensorIndex(const char* s) : kind_(Kind::kEllipsis) {  // NOLINT
    if (std::string_view(s) != "...")
      throw Error("index: the only string index is \"...\", got \"" + std::string(s) + "\"");
  }

  constexpr Kind kind() const { return kind_; }
  constexpr bool is_integer() const { return kind_ == Kind::kInteger; }
  constexpr bool is_slice() const { return kind_ == Kind::kSlice; }
  constexpr bool is_none() const { return kind_ == Kind::kNone; }
  constexpr bool is_ellipsis() const { return kind_ == Kind::kEllipsis; }
  constexpr int64_t integer() const { return integer_; }
  constexpr const Slice& slice() const { return slice_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  Slice slice_;
};

}  // namespace gt
