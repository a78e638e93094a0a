#include "workerd/kernel_args_check.h"

#include <array>
#include <span>
#include <vector>

#include "libgtcore/shape_rules.h"

namespace gt::worker {

namespace {

// Byte size of a meta, or -1 when a dim is negative or the size overflows (no division, unlike
// Shape::numel, so the per-op checks stay cheap). A zero dim anywhere makes it 0 however large
// the other dims are, in any order (as Shape::numel: [2^63-1, 0] and [0, 2^63-1] are both empty).
int64_t meta_bytes(const TensorMeta& m) {
  int64_t n = static_cast<int64_t>(dtype_size(m.dtype));
  if (n == 0) return -1;
  bool empty = false;
  for (int64_t d : m.shape) {
    if (d < 0) return -1;
    empty |= d == 0;
  }
  if (empty) return 0;
  for (int64_t d : m.shape)
    if (__builtin_mul_overflow(n, d, &n)) return -1;
  return n;
}

Status check_tensor(const Tensor* t, const char* op, const char* what, size_t i) {
  if (t == nullptr) return invalid_argument("{}: {} {} is missing", op, what, i);
  if (t->poison) return failed_precondition("{}: {} {} is poisoned", op, what, i);
  if (!t->storage) return invalid_argument("{}: {} {} has no storage", op, what, i);
  if (!is_valid_dtype(static_cast<int>(t->meta.dtype)))
    return invalid_argument("{}: {} {} has an invalid dtype", op, what, i);
  const int64_t need = meta_bytes(t->meta);
  if (need < 0 || static_cast<uint64_t>(need) > t->storage->bytes())
    return invalid_argument("{}: {} {} needs {} bytes for {} {} but its storage has {}", op,
                            what, i, need, dtype_name(t->meta.dtype), t->meta.shape.str(),
                            t->storage->bytes());
  if (need > 0 && t->storage->data() == nullptr)
    return invalid_argument("{}: {} {} has null storage", op, what, i);
  return Status::ok();
}

}  // namespace

Status check_kernel_args(const KernelArgs& args) {
  const char* name = op_name(args.op);
  std::array<TensorMeta, 4> small;
  std::vector<TensorMeta> big;
  std::span<TensorMeta> metas;
  if (args.inputs.size() <= small.size()) {
    metas = std::span<TensorMeta>(small.data(), args.inputs.size());
  } else {
    big.resize(args.inputs.size());
    metas = big;
  }
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    GT_RETURN_IF_ERROR(check_tensor(args.inputs[i], name, "input", i));
    metas[i] = args.inputs[i]->meta;
  }
  GT_RETURN_IF_ERROR(check_tensor(&args.out, name, "output", 0));
  GT_ASSIGN_OR_RETURN(TensorMeta want, infer_meta(args.op, metas, args.attrs));
  if (!(want == args.out.meta))
    return invalid_argument("{}: output is {} {} but the op gives {} {}", name,
                            dtype_name(args.out.meta.dtype), args.out.meta.shape.str(),
                            dtype_name(want.dtype), want.shape.str());
  if (is_in_place(args.op) && args.inputs[0]->storage != args.out.storage)
    return invalid_argument("{}: the output must be the tensor written in place", name);
  return Status::ok();
}

}  // namespace gt::worker
