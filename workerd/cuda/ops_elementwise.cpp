// Elementwise ops on CUDA, with the CPU worker's dtype handling (workerd/kernels/
// elementwise_plan.h; workerd/cpu/elementwise.cpp, fill_clamp.cpp): operands are first
// converted to one operand dtype (a temporary, like the CPU's as_dtype), so each kernel is
// instantiated once per dtype rather than per dtype pair.
#include <cstdint>

#include "workerd/cuda/cuda_ops.h"
#include "workerd/kernels/elementwise_math.h"
#include "workerd/kernels/elementwise_plan.h"
#include "workerd/kernels/op_traits.h"

namespace gt::worker::cuda {
namespace {

Status binary_kernel(const KernelArgs& args, OpContext& ctx) {
  GT_ASSIGN_OR_RETURN(const BinaryOperands ops, binary_operands(args));
  if (ops.n == 0) return Status::ok();
  const Tensor& a = in(args, 0);
  const DType p = ops.p;

  DeviceTemp ta, tb;
  GT_ASSIGN_OR_RETURN(const void* pa, ctx.as_dtype(a, p, ta));
  BinaryArgs x{};
  x.op = args.op;
  x.p = code(p);
  x.a = pa;
  x.out = out_ptr(args);
  x.n = ops.n;
  if (ops.scalar_form) {
    x.mode = args.attrs.scalar_side() == ScalarSide::kLeft ? 2 : 1;
    // The scalar converted to p on the host (integers wrapped, floats rounded: PyTorch's
    // conversion, as the CPU worker); int64 operands use the exact integer.
    x.scalar = ops.scalar.value;
    if (args.op == OpId::k_pow && is_floating(p)) {
      // An integer exponent float cannot hold goes unrounded: the kernel computes that power in
      // double (pow_exponent_needs_double, as the CPU worker).
      const auto exact = args.attrs.scalar_is_integral() ? args.attrs.scalar_exact() : std::nullopt;
      const double e = exact ? static_cast<double>(*exact) : args.attrs.scalar();
      if (pow_exponent_needs_double(e)) x.scalar = e;
    }
    if (p == DType::kInt64) {
      x.has_exact = true;
      x.exact = ops.scalar.exact;
    }
  } else {
    GT_ASSIGN_OR_RETURN(const void* pb, ctx.as_dtype(in(args, 1), p, tb));
    x.b = pb;
    const Shape& sa = a.meta.shape;
    const Shape& sb = in(args, 1).meta.shape;
    if (count(sa) == ops.n && count(sb) == ops.n) {
      x.mode = 0;
    } else {
      x.mode = 3;
      x.nd = broadcast_desc(args.out.meta.shape, {&sa, &sb});
    }
  }
  GT_LAUNCH(launch_binary(x, ctx.stream));
  return Status::ok();
}

Status unary_kernel(const KernelArgs& args, OpContext& ctx) {
  GT_RETURN_IF_ERROR(check_unary_out(args));
  const Tensor& x = in(args, 0);
  GT_LAUNCH(launch_unary(args.op, code(x.meta.dtype), x.storage->data(), out_ptr(args),
                         count(args.out.meta.shape), ctx.stream));
  return Status::ok();
}

// where(cond, a, b): a and b converted to the output dtype, then elements are only moved.
Status where_kernel(const KernelArgs& args, OpContext& ctx) {
  const Tensor& out = args.out;
  const int64_t n = count(out.meta.shape);
  if (n == 0) return Status::ok();
  const DType dt = out.meta.dtype;
  DeviceTemp ta, tb;
  GT_ASSIGN_OR_RETURN(const void* va, ctx.as_dtype(in(args, 1), dt, ta));
  GT_ASSIGN_OR_RETURN(const void* vb, ctx.as_dtype(in(args, 2), dt, tb));
  const NdDesc d = broadcast_desc(out.meta.shape, {&in(args, 0).meta.shape, &in(args, 1).meta.shape,
                                                   &in(args, 2).meta.shape});
  GT_LAUNCH(launch_where(static_cast<const uint8_t*>(in_ptr(args, 0)), va, vb, out_ptr(args), n,
                         static_cast<int>(dtype_size(dt)), d, ctx.stream));
  return Status::ok();
}

Status cast_kernel(const KernelArgs& args, OpContext& ctx) {
  const Tensor& x = in(args, 0);
  const int64_t n = count(args.out.meta.shape);
  if (x.meta.dtype == args.out.meta.dtype) {
    if (n > 0 && x.storage->data() != out_ptr(args))
      GT_CUDA_CHECK(cudaMemcpyAsync(out_ptr(args), x.storage->data(),
                                    static_cast<size_t>(args.out.meta.nbytes()),
                                    cudaMemcpyDeviceToDevice, ctx.stream));
    return Status::ok();
  }
  GT_LAUNCH(launch_convert(x.storage->data(), code(x.meta.dtype), out_ptr(args),
                           code(args.out.meta.dtype), n, ctx.stream));
  return Status::ok();
}

// copy_(dst, src): src broadcast to dst's shape and converted to dst's dtype (copy_source()).
Status copy_kernel(const KernelArgs& args, OpContext& ctx) {
  Tensor& dst = args.out;
  const Tensor& src = in(args, 1);
  const CopySource how = copy_source(args);
  if (how == CopySource::kNothing) return Status::ok();
  const int64_t n = count(dst.meta.shape);
  const size_t es = dtype_size(dst.meta.dtype);
  const void* sp = src.storage->data();
  void* dp = dst.storage->data();
  DeviceTemp tmp;
  if (how == CopySource::kConverted) {
    GT_ASSIGN_OR_RETURN(sp, ctx.as_dtype(src, dst.meta.dtype, tmp));
  } else if (how == CopySource::kStaged) {
    const auto src_bytes = static_cast<size_t>(src.meta.nbytes());
    GT_ASSIGN_OR_RETURN(tmp, ctx.temp(src_bytes));
    GT_CUDA_CHECK(cudaMemcpyAsync(tmp.get(), sp, src_bytes, cudaMemcpyDeviceToDevice, ctx.stream));
    sp = tmp.get();
  }
  if (count(src.meta.shape) == n) {
    GT_CUDA_CHECK(cudaMemcpyAsync(dp, sp, static_cast<size_t>(n) * es, cudaMemcpyDeviceToDevice,
                                  ctx.stream));
    return Status::ok();
  }
  GT_LAUNCH(launch_gather_nd(sp, dp, n, static_cast<int>(es),
                             broadcast_desc(dst.meta.shape, {&src.meta.shape}), ctx.stream));
  return Status::ok();
}

// masked_fill's value in dt's bytes: the exact integer for int64 (beyond 2^53 too).
uint64_t fill_bits(const OpAttrs& a, DType dt) {
  const ScalarIn v = scalar_in(dt, a.fill_value(), a.fill_exact());
  if (dt == DType::kInt64) return static_cast<uint64_t>(v.exact);
  return value_bits(v.value, dt);
}

Status masked_fill_kernel(const KernelArgs& args, OpContext& ctx) {
  const Tensor& x = in(args, 0);
  const Tensor& mask = in(args, 1);
  const Shape& os = args.out.meta.shape;
  const int64_t n = count(os);
  if (n == 0) return Status::ok();
  const DType dt = args.out.meta.dtype;
  GT_LAUNCH(launch_masked_fill(x.storage->data(), static_cast<const uint8_t*>(mask.storage->data()),
                               out_ptr(args), n, static_cast<int>(dtype_size(dt)),
                               fill_bits(args.attrs, dt),
                               broadcast_desc(os, {&x.meta.shape, &mask.meta.shape}), ctx.stream));
  return Status::ok();
}

Status clamp_kernel(const KernelArgs& args, OpContext& ctx) {
  const Tensor& x = in(args, 0);
  const int64_t n = count(x.meta.shape);
  if (n == 0) return Status::ok();
  const DType dt = args.out.meta.dtype;
  DeviceTemp tmp;
  GT_ASSIGN_OR_RETURN(const void* src, ctx.as_dtype(x, dt, tmp));
  const ClampBounds b = clamp_bounds(args.attrs, dt);
  GT_LAUNCH(launch_clamp(src, out_ptr(args), code(dt), n, args.attrs.has_min(), b.lo.value,
                         b.lo.exact, args.attrs.has_max(), b.hi.value, b.hi.exact, ctx.stream));
  return Status::ok();
}

}  // namespace

void register_elementwise(KernelTable& t) {
  // Every unary and binary elementwise op of ops.def (the launchers dispatch on the op).
  for_each_op([&](auto c) {
    constexpr OpId op = decltype(c)::value;
    if constexpr (is_unary_elementwise(op)) t[static_cast<size_t>(op)] = unary_kernel;
    if constexpr (is_binary_elementwise(op)) t[static_cast<size_t>(op)] = binary_kernel;
  });
  auto set = [&](OpId op, CudaKernel k) { t[static_cast<size_t>(op)] = k; };
  set(OpId::k_where, where_kernel);
  set(OpId::k_cast, cast_kernel);
  set(OpId::k_copy_, copy_kernel);
  set(OpId::k_masked_fill, masked_fill_kernel);
  set(OpId::k_clamp, clamp_kernel);
}

}  // namespace gt::worker::cuda
