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
  GT_ASSIGN_OR_RETURN(device::CachingAllocator::Block b,
                      alloc->allocate(bytes, static_cast<device::Stream>(stream)));
  return DeviceTemp(alloc, b.data);
}

Result<const void*> OpContext::as_dtype(const Tensor& t, DType dt, DeviceTemp& tmp) const {
  if (t.meta.dtype == dt) return static_cast<const void*>(t.storage->data());
  const int64_t n = count(t.meta.shape);
  GT_ASSIGN_OR_RETURN(tmp, temp(static_cast<size_t>(n) * dtype_size(dt)));
  GT_LAUNCH(launch_convert(t.storage->data(), code(t.meta.dtype), tmp.get(), code(dt), n, stream));
  return static_cast<const void*>(tmp.get());
}

// On the stream: the first bad position into check_slot[0], its value into check_slot[1], both
// copied to the pinned check_host, which a host function reads when the stream gets there (the
// next check of this session overwrites them only after that function has run: stream order).
Status OpContext::check_indices(const Tensor& index, int64_t limit,
                                std::function<Status(int64_t)> error) const {
  const int64_t n = count(index.meta.shape);
  if (n == 0) return Status::ok();
  const int64_t none = std::numeric_limits<int64_t>::max();
  GT_LAUNCH(launch_fill_bits(check_slot, 1, 8, static_cast<uint64_t>(none), stream));
  GT_LAUNCH(launch_check_indices(index.storage->data(), code(index.meta.dtype), n, limit,
                                 check_slot, stream));
  GT_LAUNCH(launch_bad_index_value(index.storage->data(), code(index.meta.dtype), check_slot,
                                   stream));
  GT_CUDA_CHECK(cudaMemcpyAsync(check_host, check_slot, 2 * sizeof(int64_t),
                                cudaMemcpyDeviceToHost, stream));
  int64_t* host = check_host;
  return api->launch_host_func(static_cast<device::Stream>(stream),
                               [host, none, error = std::move(error), report = report] {
                                 if (host[0] != none && report) report(error(host[1]));
                               });
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
