// Host element conversions behind from_vector / to_vector / item: default dtypes for host
// types and element-wise conversion between host types and tensor dtypes (row-major bytes).
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "gt/dtype.h"
#include "gt/error.h"
#include "gt/core/shape.h"

namespace gt::detail {

template <typename T>
inline constexpr bool is_half_like_v = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

template <typename T>
constexpr DType default_dtype() {
  if constexpr (std::is_same_v<T, bool>) return kBool;
  else if constexpr (std::is_same_v<T, half>) return kFloat16;
  else if constexpr (std::is_same_v<T, bfloat16>) return kBFloat16;
  else if constexpr (std::is_floating_point_v<T>) return kFloat32;
  else if constexpr (std::is_integral_v<T> &&
                     (sizeof(T) < 4 || (sizeof(T) == 4 && std::is_signed_v<T>)))
    return kInt32;
  else if constexpr (std::is_integral_v<T>) return kInt64;
  else static_assert(std::is_arithmetic_v<T>, "from_vector: unsupported element type");
}

// Converts one element between host types (through float for half/bfloat16; float -> integer
// saturates and maps NaN to 0 instead of being undefined).
template <typename To, typename From>
To convert_element(From v) {
  if constexpr (is_half_like_v<From>) {
    return convert_element<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (is_half_like_v<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (v != v) return To(0);
    using L = std::numeric_limits<To>;
    if (v <= static_cast<From>(L::lowest())) return L::lowest();
    if (v >= static_cast<From>(L::max())) return L::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// Host types whose bytes are a dtype's representation as they are (vector<bool> is packed: no).
template <typename T>
inline constexpr bool has_raw_layout_v =
    !std::is_same_v<T, bool> && (std::is_arithmetic_v<T> || is_half_like_v<T>);

// Whether T's bytes are dtype's elements as they are (float for float32, int64_t for int64...),
// so conversion is a copy.
template <typename T>
constexpr bool is_host_type_of(DType dtype) {
  if constexpr (std::is_same_v<T, half>) return dtype == kFloat16;
  else if constexpr (std::is_same_v<T, bfloat16>) return dtype == kBFloat16;
  else if constexpr (std::is_same_v<T, float>) return dtype == kFloat32;
  else if constexpr (std::is_same_v<T, double>) return dtype == kFloat64;
  else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if constexpr (sizeof(T) == 8 && std::is_signed_v<T>) return dtype == kInt64;
    else if constexpr (sizeof(T) == 4 && std::is_signed_v<T>) return dtype == kInt32;
    else if constexpr (sizeof(T) == 1 && std::is_signed_v<T>) return dtype == kInt8;
    else if constexpr (sizeof(T) == 1 && std::is_unsigned_v<T>) return dtype == kUInt8;
    else return false;
  } else {
    return false;
  }
}

// Reads element i of row-major bytes of element type S.
template <typename S>
S load_element(const char* p, size_t i) {
  if constexpr (std::is_same_v<S, bool>) {
    return p[i] != 0;
  } else {
    S v;
    std::memcpy(&v, p + i * sizeof(S), sizeof(S));
    return v;
  }
}

template <typename T>
std::vector<T> decode_elements(const TensorMeta& meta, const std::string& bytes) {
  static_assert(std::is_arithmetic_v<T> || is_half_like_v<T>,
                "to_vector/item: T must be an arithmetic type, gt::Half or gt::BFloat16");
  const size_t n = static_cast<size_t>(meta.shape.numel());
  if (bytes.size() != n * dtype_size(meta.dtype))
    throw Error("to_vector: got " + std::to_string(bytes.size()) + " bytes for " +
                std::to_string(n) + " elements of " + dtype_name(meta.dtype));
  std::vector<T> out;
  if constexpr (has_raw_layout_v<T>) {
    if (is_host_type_of<T>(meta.dtype)) {  // the same representation: one copy
      out.resize(n);
      if (n > 0) std::memcpy(out.data(), bytes.data(), n * sizeof(T));
      return out;
    }
  }
  out.reserve(n);
  GT_DISPATCH_DTYPE(meta.dtype, S, [&] {
    for (size_t i = 0; i < n; ++i)
      out.push_back(convert_element<T>(load_element<S>(bytes.data(), i)));
  });
  return out;
}

template <typename T>
std::string encode_elements(const std::vector<T>& values, DType dtype) {
  const size_t n = values.size();
  std::string bytes(n * dtype_size(dtype), '\0');
  char* p = bytes.data();
  GT_DISPATCH_DTYPE(dtype, D, [&] {
    for (size_t i = 0; i < n; ++i) {
      D d = convert_element<D>(static_cast<T>(values[i]));
      if constexpr (std::is_same_v<D, bool>) {
        p[i] = d ? 1 : 0;
      } else {
        std::memcpy(p + i * sizeof(D), &d, sizeof(D));
      }
    }
  });
  return bytes;
}

}  // namespace gt::detail

namespace gt {

// Decodes row-major bytes of meta.dtype (Tensor::to_bytes) as values of T (any arithmetic
// type, gt::Half, gt::BFloat16).
template <typename T>
std::vector<T> decode_bytes(const TensorMeta& meta, const std::string& bytes) {
  return detail::decode_elements<T>(meta, bytes);
}

}  // namespace gt
