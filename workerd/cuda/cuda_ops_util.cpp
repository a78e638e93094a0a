// Shared host-side helpers of the CUDA ops: temporaries, dtype conversion of operands, index
// checks, broadcast descriptors and fill patterns.
#include <cstring>
#include <limits>

#include "workerd/cuda/cuda_ops.h"
#include "workerd/kernels/convert.h"
#include "workerd/kernels/nd_iter.h"

namespace gt::worker::cuda {

Result<DeviceTemp> OpContext::temp(size_t bytes) const {
  if (bytes == 0) return DeviceTemp();
  GT_ASSIGN_OR_RETURN(CudaAllocator::Block b, alloc->allocate(bytes));
  DeviceTemp t(alloc, b.data);
  GT_RETURN_IF_ERROR(alloc->use_on(b.data, stream));
  return t;
}

Result<const void*> OpContext::as_dtype(const Tensor& t, DType dt, DeviceTemp& tmp) const {
  if (t.meta.dtype == dt) return static_cast<const void*>(t.storage->data());
  const int64_t n = count(t.meta.shape);
  GT_ASSIGN_OR_RETURN(tmp, temp(static_cast<size_t>(n) * dtype_size(dt)));
  GT_LAUNCH(launch_convert(t.storage->data(), code(t.meta.dtype), tmp.get(), code(dt), n, stream));
  return static_cast<const void*>(tmp.get());
}

Result<int64_t> OpContext::first_bad_index(const Tensor& index, int64_t limit) const {
  const int64_t n = count(index.meta.shape);
  if (n == 0) return int64_t{-1};
  const int64_t none = std::numeric_limits<int64_t>::max();
  GT_LAUNCH(launch_fill_bits(check_slot, 1, 8, static_cast<uint64_t>(none), stream));
  GT_LAUNCH(launch_check_indices(index.storage->data(), code(index.meta.dtype), n, limit,
                                 check_slot, stream));
  int64_t first = none;
  GT_CUDA_CHECK(cudaMemcpyAsync(&first, check_slot, sizeof(first), cudaMemcpyDeviceToHost, stream));
  GT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return first == none ? int64_t{-1} : first;
}

Result<int64_t> OpContext::index_value(const Tensor& index, int64_t pos) const {
  const size_t es = dtype_size(index.meta.dtype);
  unsigned char buf[8] = {};
  GT_CUDA_CHECK(cudaMemcpyAsync(buf, static_cast<const unsigned char*>(index.storage->data()) +
                                         static_cast<size_t>(pos) * es,
                                es, cudaMemcpyDeviceToHost, stream));
  GT_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (index.meta.dtype == DType::kInt32) {
    int32_t v;
    std::memcpy(&v, buf, 4);
    return int64_t{v};
  }
  int64_t v;
  std::memcpy(&v, buf, 8);
  return v;
}

NdDesc broadcast_desc(const Shape& out, std::initializer_list<const Shape*> ins) {
  // The shared iterator does the broadcast-stride and coalescing work; operand 0 is the
  // contiguous output, the device recomputes its offset from the linear index.
  NdIter<4> it(out);
  it.stride[0] = row_major_strides(out);
  int p = 1;
  for (const Shape* s : ins) it.stride[p++] = broadcast_strides(*s, out);
  it.coalesce();
  NdDesc d;
  d.rank = it.rank;
  for (int k = 0; k < it.rank; ++k) {
    d.shape[k] = it.shape[k];
    for (int q = 0; q < 3; ++q) d.stride[q][k] = it.stride[q + 1][k];
  }
  return d;
}

uint64_t value_bits(double value, DType dt) {
  uint64_t bits = 0;  // little-endian: the value's bytes are the low bytes
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = convert_value<T>(value);
    std::memcpy(&bits, &v, sizeof(T));
  });
  return bits;
}

}  // namespace gt::worker::cuda
