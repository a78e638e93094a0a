// Shape and TensorMeta: a fixed-capacity dimension list (no heap) and a tensor's shape + dtype,
// shared by client, dispatcher and worker (and exposed by the client API, gt/tensor.h).
// The validating helpers that return gt::Status / gt::Result live in libgtcore/shape.h.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "gt/core/dtype.h"

namespace gt {

template <typename T>
class Result;  // libgtcore/status.h

inline constexpr int kMaxRank = 8;
// Largest element count a tensor may have; keeps byte sizes far from int64 overflow.
inline constexpr int64_t kMaxNumel = int64_t{1} << 48;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  // Validating constructor for anything that crossed a process boundary (libgtcore/status.h
  // defines Result).
  static Result<Shape> from(std::span<const int64_t> dims);

  int rank() const { return rank_; }
  int64_t operator[](int i) const { return d_[i]; }
  int64_t& operator[](int i) { return d_[i]; }
  const int64_t* begin() const { return d_.data(); }
  const int64_t* end() const { return d_.data() + rank_; }
  std::span<const int64_t> dims() const { return {d_.data(), static_cast<size_t>(rank_)}; }
  void push_back(int64_t v) { d_[rank_++] = v; }
  void resize(int r) {
    for (int i = rank_; i < r; ++i) d_[i] = 1;
    rank_ = r;
  }
  int64_t numel() const;
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const;  // "[2, 3]"

 private:
  std::array<int64_t, kMaxRank> d_{};
  int rank_ = 0;
};

// Row-major contiguous strides (in elements).
std::array<int64_t, kMaxRank> contiguous_strides(const Shape& s);

struct TensorMeta {
  Shape shape;
  DType dtype = DType::kFloat32;
  int64_t nbytes() const { return shape.numel() * static_cast<int64_t>(dtype_size(dtype)); }
  bool operator==(const TensorMeta& o) const { return shape == o.shape && dtype == o.dtype; }
};

}  // namespace gt
