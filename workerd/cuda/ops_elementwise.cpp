// Elementwise ops on CUDA, with the CPU worker's dtype handling (workerd/cpu/binary.cpp,
// unary.cpp, elementwise.cpp, fill_clamp.cpp): operands are first converted to one operand
// dtype (a temporary, like the CPU's as_dtype), so each kernel is instantiated once per dtype
// rather than per dtype pair.
#include <cstdint>

#include "workerd/cuda/cuda_ops.h"

namespace gt::worker::cuda {
namespace {

template <BinOp kOp>
Status binary_kernel(const KernelArgs& args, OpContext& ctx) {
  constexpr bool kCompare = kOp >= BinOp::kEq;
  const Tensor& a = in(args, 0);
  const Tensor& out = args.out;
  const int64_t n = count(out.meta.shape);
  if (n == 0) return Status::ok();
  const bool scalar_form = args.inputs.size() == 1;
  DType p;
  if (!kCompare) p = out.meta.dtype;
  else if (scalar_form) p = promote_with_scalar(a.meta.dtype, args.attrs.scalar_is_integral());
  else p = promote(a.meta.dtype, in(args, 1).meta.dtype);
  if (kOp == BinOp::kDiv && !is_floating(p))
    return unimplemented("div: operand dtype {} is not floating", dtype_name(p));

  DeviceTemp ta, tb;
  GT_ASSIGN_OR_RETURN(const void* pa, ctx.as_dtype(a, p, ta));
  BinaryArgs x{};
  x.op = kOp;
  x.p = code(p);
  x.a = pa;
  x.out = out.storage->data();
  x.n = n;
  if (scalar_form) {
    x.mode = args.attrs.scalar_side() == ScalarSide::kLeft ? 2 : 1;
    x.scalar = args.attrs.scalar();
    // An exact integer scalar (when the client sent one) is used by int64 operands, like the
    // CPU worker.
    if (auto e = args.attrs.scalar_exact(); e && p == DType::kInt64) {
      x.has_exact = true;
      x.exact = *e;
    }
  } else {
    GT_ASSIGN_OR_RETURN(const void* pb, ctx.as_dtype(in(args, 1), p, tb));
    x.b = pb;
    const Shape& sa = a.meta.shape;
    const Shape& sb = in(args, 1).meta.shape;
    if (count(sa) == n && count(sb) == n) {
      x.mode = 0;
    } else {
      x.mode = 3;
      x.nd = broadcast_desc(out.meta.shape, {&sa, &sb});
    }
  }
  GT_LAUNCH(launch_binary(x, ctx.stream));
  return Status::ok();
}

template <UnOp kOp>
Status unary_kernel(const KernelArgs& args, OpContext& ctx) {
  const Tensor& x = in(args, 0);
  constexpr bool kSame = kOp == UnOp::kNeg || kOp == UnOp::kAbs || kOp == UnOp::kRelu;
  const DType want = kSame || is_floating(x.meta.dtype) ? x.meta.dtype : DType::kFloat32;
  if (args.out.meta.dtype != want)
    return unimplemented("unary op: unexpected output dtype {} for input {}",
                         dtype_name(args.out.meta.dtype), dtype_name(x.meta.dtype));
  GT_LAUNCH(launch_unary(kOp, code(x.meta.dtype), x.storage->data(), out_ptr(args),
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

bool overlaps(const void* a, size_t na, const void* b, size_t nb) {
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return na > 0 && nb > 0 && pa < pb + nb && pb < pa + na;
}

// copy_(dst, src): src broadcast to dst's shape and converted to dst's dtype; a source sharing
// dst's storage (a reshape alias) is read from a temporary copy.
Status copy_kernel(const KernelArgs& args, OpContext& ctx) {
  Tensor& dst = args.out;
  const Tensor& src = in(args, 1);
  const int64_t n = count(dst.meta.shape);
  if (n == 0) return Status::ok();
  const DType dt = dst.meta.dtype;
  const size_t es = dtype_size(dt);
  const void* sp = src.storage->data();
  void* dp = dst.storage->data();
  const auto src_bytes = static_cast<size_t>(src.meta.nbytes());
  DeviceTemp tmp;
  if (src.meta.dtype != dt) {
    GT_ASSIGN_OR_RETURN(sp, ctx.as_dtype(src, dt, tmp));  // a fresh buffer: no aliasing left
  } else if (overlaps(sp, src_bytes, dp, static_cast<size_t>(n) * es)) {
    if (sp == dp && count(src.meta.shape) == n) return Status::ok();  // copy onto itself
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

Status masked_fill_kernel(const KernelArgs& args, OpContext& ctx) {
  const Tensor& x = in(args, 0);
  const Tensor& mask = in(args, 1);
  const Shape& os = args.out.meta.shape;
  const int64_t n = count(os);
  if (n == 0) return Status::ok();
  const DType dt = args.out.meta.dtype;
  GT_LAUNCH(launch_masked_fill(x.storage->data(), static_cast<const uint8_t*>(mask.storage->data()),
                               out_ptr(args), n, static_cast<int>(dtype_size(dt)),
                               value_bits(args.attrs.real_at(0), dt),
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
  GT_LAUNCH(launch_clamp(src, out_ptr(args), code(dt), n, args.attrs.int_at(0) != 0,
                         args.attrs.real_at(0), args.attrs.int_at(1) != 0, args.attrs.real_at(1),
                         ctx.stream));
  return Status::ok();
}

}  // namespace

void register_elementwise(KernelTable& t) {
  auto set = [&](OpId op, CudaKernel k) { t[static_cast<size_t>(op)] = k; };
  set(OpId::k_add, binary_kernel<BinOp::kAdd>);
  set(OpId::k_sub, binary_kernel<BinOp::kSub>);
  set(OpId::k_mul, binary_kernel<BinOp::kMul>);
  set(OpId::k_div, binary_kernel<BinOp::kDiv>);
  set(OpId::k_pow, binary_kernel<BinOp::kPow>);
  set(OpId::k_maximum, binary_kernel<BinOp::kMax>);
  set(OpId::k_minimum, binary_kernel<BinOp::kMin>);
  set(OpId::k_eq, binary_kernel<BinOp::kEq>);
  set(OpId::k_ne, binary_kernel<BinOp::kNe>);
  set(OpId::k_lt, binary_kernel<BinOp::kLt>);
  set(OpId::k_le, binary_kernel<BinOp::kLe>);
  set(OpId::k_gt, binary_kernel<BinOp::kGt>);
  set(OpId::k_ge, binary_kernel<BinOp::kGe>);
  set(OpId::k_neg, unary_kernel<UnOp::kNeg>);
  set(OpId::k_abs, unary_kernel<UnOp::kAbs>);
  set(OpId::k_relu, unary_kernel<UnOp::kRelu>);
  set(OpId::k_exp, unary_kernel<UnOp::kExp>);
  set(OpId::k_log, unary_kernel<UnOp::kLog>);
  set(OpId::k_sqrt, unary_kernel<UnOp::kSqrt>);
  set(OpId::k_sigmoid, unary_kernel<UnOp::kSigmoid>);
  set(OpId::k_tanh, unary_kernel<UnOp::kTanh>);
  set(OpId::k_where, where_kernel);
  set(OpId::k_cast, cast_kernel);
  set(OpId::k_copy_, copy_kernel);
  set(OpId::k_masked_fill, masked_fill_kernel);
  set(OpId::k_clamp, clamp_kernel);
}

}  // namespace gt::worker::cuda
