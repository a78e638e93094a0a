// Host-side helpers every backend's kernels use: the pieces of KernelArgs, element counts and
// dispatch from a runtime dtype to a C++ type. Kernels run after Backend::run() has checked
// their arguments (workerd/kernel_args_check.h), so metas are consistent with storages.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gt/core/dtype.h"
#include "gt/core/half.h"
#include "libgtcore/shape.h"
#include "workerd/backend.h"

namespace gt::worker {

// Element count of a shape that run() has already validated (Shape::numel() guards against
// overflow with a division per dim, which dominates the cost of tiny ops).
inline int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int d = 0; d < s.rank(); ++d) n *= s[d];
  return n;
}

inline const Tensor& in(const KernelArgs& a, size_t i) { return *a.inputs[i]; }
inline void* out_ptr(const KernelArgs& a) { return a.out.storage->data(); }
inline const void* in_ptr(const KernelArgs& a, size_t i) { return a.inputs[i]->storage->data(); }

// Whether byte ranges [a, a + na) and [b, b + nb) share a byte (copy_ with a source that
// aliases its destination reads from a temporary).
inline bool overlaps(const void* a, size_t na, const void* b, size_t nb) {
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return na > 0 && nb > 0 && pa < pb + nb && pb < pa + na;
}

template <class T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) with T the host storage type of `dt` (gt::half / gt::bfloat16 for the
// 16-bit floats).
template <class F>
decltype(auto) dispatch_dtype(DType dt, F&& f) {
  switch (dt) {
    case DType::kFloat32: return f(Tag<float>{});
    case DType::kFloat16: return f(Tag<half>{});
    case DType::kBFloat16: return f(Tag<bfloat16>{});
    case DType::kInt32: return f(Tag<int32_t>{});
    case DType::kInt64: return f(Tag<int64_t>{});
    case DType::kFloat64: return f(Tag<double>{});
    case DType::kInt8: return f(Tag<int8_t>{});
    case DType::kUInt8: return f(Tag<uint8_t>{});
    case DType::kBool: break;
  }
  return f(Tag<bool>{});
}

// Calls f(Tag<U>{}) with U an unsigned integer of the element size (for byte-moving kernels).
template <class F>
decltype(auto) dispatch_size(size_t elem_size, F&& f) {
  switch (elem_size) {
    case 1: return f(Tag<uint8_t>{});
    case 2: return f(Tag<uint16_t>{});
    case 4: return f(Tag<uint32_t>{});
    default: break;
  }
  return f(Tag<uint64_t>{});
}

// c != 0 ? a : b for the unsigned types of dispatch_size, as a mask: no branch. Selections that
// follow the data (a mask from the values, where / masked_fill) mispredicted a branch about
// every other element: ~3 ns each, 20x the cost of the blend this compiles to.
template <class U>
inline U select_bits(uint8_t c, U a, U b) {
  const U keep_a = static_cast<U>(U{0} - static_cast<U>(c != 0));
  return static_cast<U>((a & keep_a) | (b & static_cast<U>(~keep_a)));
}

}  // namespace gt::worker
