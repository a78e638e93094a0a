// The device-independent half of every Backend (backend.h).
#include "workerd/backend.h"

#include <algorithm>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <string_view>

#include "libgtcore/shape.h"
#include "workerd/bool_bytes.h"
#include "workerd/kernel_args_check.h"

namespace gt::worker {
namespace {

bool is_upload(OpId op) { return op == OpId::k_from_host || op == OpId::k_host_chunk; }

// [offset, offset + n) must lie within t's contents (its meta's bytes, and its storage's).
Status check_span(const char* what, const Tensor& t, uint64_t offset, uint64_t n) {
  if (t.poison) return failed_precondition("{}: tensor is poisoned", what);
  if (!t.storage) return invalid_argument("{}: tensor has no storage", what);
  uint64_t nbytes = static_cast<uint64_t>(std::max<int64_t>(t.meta.nbytes(), 0));
  nbytes = std::min<uint64_t>(nbytes, t.storage->bytes());
  if (offset > nbytes || n > nbytes - offset)
    return out_of_range("{}: {} bytes at offset {} overrun a tensor of {} bytes", what, n, offset,
                        nbytes);
  return Status::ok();
}

}  // namespace

bool Backend::supports(OpId op) const {
  if (static_cast<size_t>(op) >= static_cast<size_t>(kNumOps)) return false;
  return is_upload(op) || has_kernel_[static_cast<size_t>(op)];
}

Status Backend::run(const KernelArgs& args) {
  const auto i = static_cast<size_t>(args.op);
  if (i >= static_cast<size_t>(kNumOps)) return invalid_argument("unknown op id {}", i);
  if (!supports(args.op)) return unimplemented("{}: no {} kernel", op_name(args.op), device_kind());
  try {
    GT_RETURN_IF_ERROR(check_kernel_args(args));
    if (is_upload(args.op)) return upload(args);
    return run_kernel(args);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("{}: out of memory for temporaries", op_name(args.op));
  } catch (const std::exception& e) {
    return internal_error("{}: {}", op_name(args.op), e.what());
  } catch (...) {
    return internal_error("{}: unknown exception", op_name(args.op));
  }
}

namespace {

// A fused chain's tensor is float32 (unless `other_dtype`: that dtype fuses) and its storage
// holds its meta's bytes.
Status check_fused_tensor(const char* what, const Tensor& t, bool other_dtype = false) {
  if (t.poison || !t.storage) return failed_precondition("fused chain: {} has no value", what);
  if (t.meta.dtype != DType::kFloat32 && !other_dtype)
    return invalid_argument("fused chain: {} is {}, not float32", what, dtype_name(t.meta.dtype));
  if (t.meta.nbytes() < 0 || static_cast<uint64_t>(t.meta.nbytes()) > t.storage->bytes())
    return invalid_argument("fused chain: {} overruns its storage", what);
  return Status::ok();
}

// `operand` broadcasts to exactly `out` (numpy's rule, the result being out's shape).
bool broadcasts_to(const Shape& operand, const Shape& out) {
  auto b = broadcast_shapes(operand, out);
  return b.is_ok() && *b == out;
}

}  // namespace

Status Backend::run_fused(const FusedArgs& args) {
  if (!fuses_chains()) return unimplemented("fused chains: not on {}", device_kind());
  GT_RETURN_IF_ERROR(
      check_fused_tensor("the head", args.head, fuses_cast_dtype(args.head.meta.dtype)));
  GT_RETURN_IF_ERROR(
      check_fused_tensor("the result", args.out, fuses_cast_dtype(args.out.meta.dtype)));
  if (args.tail != FusedTail::kNone) {
    if (!fuses_chain_tails()) return unimplemented("fused chains with a tail: not on {}", device_kind());
    if (args.out.meta.dtype != DType::kFloat32)
      return invalid_argument("fused chain: a reduction tail into {}, not float32",
                              dtype_name(args.out.meta.dtype));
    if (args.out.numel() != 1 || args.head.numel() < 1 ||
        args.head.numel() > kMaxFusedTailElements)
      return invalid_argument("fused chain: a reduction of {} elements to {}", args.head.numel(),
                              args.out.meta.shape.str());
  } else if (args.out.meta.shape != args.head.meta.shape) {
    return invalid_argument("fused chain: result shape {} differs from its head's {}",
                            args.out.meta.shape.str(), args.head.meta.shape.str());
  }
  if (args.steps.empty() && args.head.meta.dtype == DType::kFloat32 &&
      args.out.meta.dtype == DType::kFloat32)
    return invalid_argument("fused chain: no steps");
  for (const FusedStep& st : args.steps) {
    if (!fusable_op(st.op)) return invalid_argument("fused chain: {} is not fusable", op_name(st.op));
    if (st.arg != FusedArg::kTensor) continue;
    if (!st.operand) return invalid_argument("fused chain: {} without its operand", op_name(st.op));
    GT_RETURN_IF_ERROR(check_fused_tensor("an operand", *st.operand));
    if (!broadcasts_to(st.operand->meta.shape, args.head.meta.shape) || st.operand->numel() == 0)
      return invalid_argument("fused chain: operand {} does not broadcast to {}",
                              st.operand->meta.shape.str(), args.head.meta.shape.str());
  }
  try {
    return run_fused_kernel(args);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("fused chain: out of memory for temporaries");
  } catch (const std::exception& e) {
    return internal_error("fused chain: {}", e.what());
  }
}

Status Backend::run_matmul_t(const TransposedMatmul& args) {
  if (!folds_transposes()) return unimplemented("transposed GEMM: not on {}", device_kind());
  for (const Tensor* t : {&args.a, &args.b, static_cast<const Tensor*>(&args.out)}) {
    GT_RETURN_IF_ERROR(check_fused_tensor("a folded matmul's tensor", *t));
    if (t->meta.shape.rank() != 2)
      return invalid_argument("folded matmul: {} is not 2-D", t->meta.shape.str());
  }
  const Shape &a = args.a.meta.shape, &b = args.b.meta.shape;
  const int64_t m = args.ta ? a[1] : a[0], k = args.ta ? a[0] : a[1];
  const int64_t kb = args.tb ? b[1] : b[0], n = args.tb ? b[0] : b[1];
  if (k != kb || args.out.meta.shape != Shape{m, n})
    return invalid_argument("folded matmul: {}{} @ {}{} into {}", a.str(), args.ta ? "^T" : "",
                            b.str(), args.tb ? "^T" : "", args.out.meta.shape.str());
  try {
    return run_matmul_t_kernel(args);
  } catch (const std::exception& e) {
    return internal_error("folded matmul: {}", e.what());
  }
}

// The bytes a read of [offset, offset + n) of t into dst names, checked; nullopt: nothing to
// read (n == 0).
Result<std::optional<Backend::DeviceBytes>> Backend::read_span(const Tensor& t, size_t offset,
                                                               void* dst, size_t n) {
  GT_RETURN_IF_ERROR(check_span("copy_to_host", t, offset, n));
  if (n == 0) return std::optional<DeviceBytes>();
  if (dst == nullptr) return invalid_argument("copy_to_host: null destination");
  return std::optional<DeviceBytes>(DeviceBytes{t.storage->data(), offset, n});
}

Status Backend::copy_to_host(const Tensor& t, size_t offset, void* dst, size_t n,
                             uint64_t session) {
  GT_ASSIGN_OR_RETURN(std::optional<DeviceBytes> b, read_span(t, offset, dst, n));
  return b ? read_bytes(*b, dst, session) : Status::ok();
}

Status Backend::start_copy_to_host(const Tensor& t, size_t offset, void* dst, size_t n,
                                   uint64_t session) {
  GT_ASSIGN_OR_RETURN(std::optional<DeviceBytes> b, read_span(t, offset, dst, n));
  return b ? start_read_bytes(*b, dst, session) : Status::ok();
}

Result<bool> Backend::copy_to_host_if_idle(const Tensor& t, size_t offset, void* dst, size_t n,
                                           uint64_t session) {
  GT_ASSIGN_OR_RETURN(std::optional<DeviceBytes> b, read_span(t, offset, dst, n));
  if (!b) return true;
  return read_bytes_if_idle(*b, dst, session);
}

Result<const char*> Backend::host_view(const Tensor& t, size_t offset, size_t n) const {
  GT_RETURN_IF_ERROR(check_span("host_view", t, offset, n));
  const void* base = host_address(t.storage->data());
  return base ? static_cast<const char*>(base) + offset : nullptr;
}

Status Backend::copy_from_host(Tensor& t, size_t offset, const void* src, size_t n,
                               uint64_t session) {
  GT_RETURN_IF_ERROR(check_span("copy_from_host", t, offset, n));
  if (n == 0) return Status::ok();
  if (src == nullptr) return invalid_argument("copy_from_host: null source");
  const DeviceBytes bytes{t.storage->data(), offset, n};
  if (t.meta.dtype != DType::kBool) return write_bytes(bytes, src, session);
  std::string scratch;  // write_bytes is done with it when it returns
  const std::string_view normalized =
      normalized_bool_bytes(std::string_view(static_cast<const char*>(src), n), scratch);
  return write_bytes(bytes, normalized.data(), session);
}

// from_host: attrs.data is the first bytes of the row-major contents, the rest is zero.
// host_chunk: attrs.data written at byte attrs.chunk_offset() (checked by the shape rule, and
// here again).
Status Backend::upload(const KernelArgs& args) {
  Tensor& t = args.out;
  const std::string_view data = args.attrs.data;
  if (args.op == OpId::k_host_chunk) {
    const int64_t off = args.attrs.chunk_offset();
    if (off < 0) return out_of_range("host_chunk: negative offset {}", off);
    GT_RETURN_IF_ERROR(check_span("host_chunk", t, static_cast<uint64_t>(off), data.size()));
    return copy_from_host(t, static_cast<size_t>(off), data.data(), data.size(), args.session);
  }
  const auto nbytes = static_cast<size_t>(t.meta.nbytes());
  const size_t n = std::min(data.size(), nbytes);
  GT_RETURN_IF_ERROR(copy_from_host(t, 0, data.data(), n, args.session));
  if (nbytes > n) return zero_bytes(DeviceBytes{t.storage->data(), n, nbytes - n}, args.session);
  return Status::ok();
}

}  // namespace gt::worker
