// The executor's folded transposes (fusion.h, TransposeFold; ARCHITECTURE §7): at each run of a
// hot path a matmul whose operand is a 2-D transpose reads the transpose's input through the
// GEMM's transpose flag instead. The permute is put off until its matmul (nothing in between
// writes its input, the definition checked): there the tensors decide -- 2-D float32 with
// values, the result handles free -- and the permute is skipped, or run then, as written,
// before the matmul runs the ordinary way. Op counts are eager's; the skipped ops count as fused.
#include "workerd/executor.h"

namespace gt::worker {

bool Executor::run_fold_step(uint64_t session, HotPathDef& p, size_t k, const v1::HotRun& run) {
  const int32_t role = p.fold_at[k];
  if (role == HotPathDef::kFoldedOperand) {
    // Put off when its input can be read transposed by the matmul (decided there for good).
    const Tensor* src = float32_tensor(session, p, p.refs[p.ref_begin[k]], run);
    if (!src || src->meta.shape.rank() != 2 || !result_free(p, k, run)) return false;
    fold_state_[k] = kFoldPutOff;
    return true;
  }
  return run_folded_matmul(session, p, p.folds[static_cast<size_t>(role)], run);
}

bool Executor::result_free(const HotPathDef& p, size_t k, const v1::HotRun& run) const {
  return p.result[k] < 0 ||
         tensors_.count(run.first_out() + static_cast<uint64_t>(p.result[k])) == 0;
}

bool Executor::run_folded_matmul(uint64_t session, HotPathDef& p, const TransposeFold& f,
                                 const v1::HotRun& run) {
  const size_t m = f.matmul;
  // The operands: a put-off permute's input, read transposed, else the matmul's own input.
  const Tensor* ops[2] = {nullptr, nullptr};
  bool trans[2] = {false, false};
  const int32_t from[2] = {f.a_from, f.b_from};
  for (int side = 0; side < 2; ++side) {
    const bool put_off = from[side] >= 0 && fold_state_[static_cast<size_t>(from[side])] == kFoldPutOff;
    const size_t k = put_off ? static_cast<size_t>(from[side]) : m;
    const uint64_t ref = p.refs[p.ref_begin[k] + (put_off ? 0 : side)];
    ops[side] = float32_tensor(session, p, ref, run);
    trans[side] = put_off;
  }
  auto run_put_off = [&] {  // the permutes as written, before the matmul runs the ordinary way
    for (int32_t k : from)
      if (k >= 0 && fold_state_[static_cast<size_t>(k)] == kFoldPutOff) {
        fold_state_[static_cast<size_t>(k)] = kFoldNone;
        bind_instr(p, static_cast<size_t>(k), run);
        run_instr(session, p.instrs[static_cast<size_t>(k)]);
      }
    return false;
  };
  if (!trans[0] && !trans[1]) return false;
  if (!ops[0] || !ops[1] || ops[0]->meta.shape.rank() != 2 || ops[1]->meta.shape.rank() != 2 ||
      !result_free(p, m, run))
    return run_put_off();
  const Shape &a = ops[0]->meta.shape, &b = ops[1]->meta.shape;
  const int64_t rows = trans[0] ? a[1] : a[0], inner = trans[0] ? a[0] : a[1];
  const int64_t inner_b = trans[1] ? b[1] : b[0], cols = trans[1] ? b[0] : b[1];
  if (inner != inner_b) return run_put_off();  // eager reports the mismatch
  Tensor out;
  out.meta = TensorMeta{Shape{rows, cols}, DType::kFloat32};
  auto storage = backend_.alloc(static_cast<size_t>(out.meta.nbytes()));
  if (!storage.is_ok()) return run_put_off();  // eager reports it, op by op
  out.storage = std::move(*storage);
  if (!backend_.run_matmul_t(TransposedMatmul{*ops[0], trans[0], *ops[1], trans[1], out, session})
           .is_ok())
    return run_put_off();
  uint64_t folded = 0;
  for (int side = 0; side < 2; ++side)
    if (trans[side]) {
      fold_state_[static_cast<size_t>(from[side])] = kFoldNone;
      ++folded;
    }
  for (uint64_t i = 0; i <= folded; ++i) count_op();  // the permutes and the matmul
  bump(fused_ops_, folded + 1);
  put(session, run.first_out() + static_cast<uint64_t>(p.result[m]), std::move(out));
  return true;
}

}  // namespace gt::worker
