// The executor's hot paths (ARCHITECTURE §7, issue 11): definitions from the dispatcher, HotRuns
// expanded into their instructions, and fused elementwise chains.
//
// A HotRun's instructions run through run_instr() exactly as the eager batch's would have: same
// checks, same poison, same errors naming the op, same results. Only a chain the path's
// definition found fusable (hot_path_store.h) may run differently: as one kernel, when the
// device has one and the tensors are what a fused kernel takes (else one by one, the same way).
// Its intermediate results are never made; the path frees them, and freeing a handle that does
// not exist does nothing.
#include <spdlog/spdlog.h>

#include <limits>

#include "libgtcore/shape_rules.h"
#include "workerd/executor.h"
#include "workerd/kernels/elementwise_plan.h"

namespace gt::worker {

void Executor::define_hot_paths(v1::WorkerBatch& b) {
  const uint64_t session = b.session();
  HotPathDevice device;
  device.fuse = backend_.fuses_chains();
  device.fuse_casts = device.fuse && backend_.fuses_chain_casts();
  device.fold_transposes = backend_.folds_transposes();
  if (device_graphs_ && backend_.captures_graphs())
    device.capturable = [this](OpId op) { return backend_.capturable(op); };
  for (const v1::HotPath& p : b.hot_define()) {
    Status st = hot_.define(session, p, device);
    if (!st.is_ok()) fail(session, 0, "hot path", st);
    else if (spdlog::should_log(spdlog::level::debug))
      spdlog::debug("session {}: hot path {} defined: {} instructions, {} fused chains, {} graph "
                    "segments", session, p.id(), p.instrs_size(),
                    hot_.find(session, p.id())->chains.size(),
                    hot_.find(session, p.id())->segments.size());
  }
  b.clear_hot_define();  // a batch resumed after its turn must not define them again
  note_hot_paths();
}

void Executor::forget_hot_paths(const v1::WorkerBatch& b) {
  for (uint64_t id : b.hot_forget()) hot_.forget(b.session(), id);
  note_hot_paths();
}

void Executor::run_hot(uint64_t session, v1::Instr& in) {
  v1::HotRun& run = *in.mutable_hot();
  HotPathDef* p = hot_.find(session, run.path());
  if (!p) {
    fail(session, 0, "hot path",
         failed_precondition("hot path {} is not defined on this worker", run.path()));
    return;
  }
  if (run.bindings_size() != static_cast<int>(p->bindings) ||
      run.data_size() != static_cast<int>(p->uploads) ||
      (run.shm_size() != 0 && run.shm_size() != run.data_size()) || run.first_out() == 0 ||
      run.first_out() > std::numeric_limits<uint64_t>::max() - p->results) {
    fail(session, 0, "hot path",
         invalid_argument("a run of hot path {} does not match it ({} bindings, {} payloads)",
                          run.path(), run.bindings_size(), run.data_size()));
    return;
  }
  bump(hot_runs_);
  const size_t n = p->instrs.size();
  if (!p->folds.empty()) fold_state_.assign(n, kFoldNone);
  size_t next_free = 0;
  auto free_result = [&](uint32_t instr) {
    free_handle(session, run.first_out() + static_cast<uint64_t>(p->result[instr]));
  };
  if (early_batch_) begin_final_fetches(*p, run);
  for (size_t k = 0; k < n;) {
    if (early_batch_) answer_final_fetches(session, *p, run, k);
    while (next_free < p->frees.size() && p->frees[next_free].at <= k)
      free_result(p->frees[next_free++].instr);
    if (!p->segment_at.empty() && p->segment_at[k] >= 0) {
      // The segment applies its own frees; those of earlier results wait for its end, when the
      // frees up to there are applied (the segment's again: freeing a handle twice does nothing).
      HotPathDef::GraphSegment& seg = p->segments[static_cast<size_t>(p->segment_at[k])];
      if (run_graph_segment(session, *p, seg, run)) {
        k = seg.end;
        continue;
      }
    }
    if (const uint32_t end = run_chain_at(session, *p, k, static_cast<uint32_t>(n), run); end != 0) {
      k = end;  // (a prefix of the chain, when the rest cannot be fused)
      continue;
    }
    if (!p->fold_at.empty() && p->fold_at[k] != HotPathDef::kNoFold &&
        run_fold_step(session, *p, k, run)) {
      ++k;
      continue;
    }
    v1::Instr& t = p->instrs[k];
    bind_instr(*p, k, run);
    const int upload = p->upload[k];
    // A payload in shared memory: run_instr reads it in place and releases its region.
    const bool shm = upload >= 0 && run.shm_size() > 0 && run.shm(upload).generation() != 0;
    if (upload >= 0) t.mutable_data()->swap(*run.mutable_data(upload));
    if (shm) *t.mutable_shm() = run.shm(upload);
    if (spdlog::should_log(spdlog::level::trace)) log_instr(session, t);
    run_instr(session, t);
    if (upload >= 0) t.mutable_data()->swap(*run.mutable_data(upload));  // the path keeps none
    if (shm) t.clear_shm();
    ++k;
  }
  while (next_free < p->frees.size()) free_result(p->frees[next_free++].instr);
  if (early_batch_) end_final_fetches(session);
}

const Tensor* Executor::float32_tensor(uint64_t session, const HotPathDef& p, uint64_t ref,
                                      const v1::HotRun& run, bool any_dtype) const {
  const uint64_t h = (ref & 1) ? run.bindings(static_cast<int>(ref >> 1))
                               : run.first_out() + static_cast<uint64_t>(p.result[ref >> 1]);
  auto it = tensors_.find(h);
  if (it == tensors_.end() || it->second.session != session || it->second.poison ||
      !it->second.storage || (it->second.meta.dtype != DType::kFloat32 && !any_dtype))
    return nullptr;
  return &it->second;
}

void Executor::bind_instr(HotPathDef& p, size_t k, const v1::HotRun& run) {
  const uint64_t first_out = run.first_out();
  v1::Instr& t = p.instrs[k];
  for (uint32_t i = p.ref_begin[k]; i < p.ref_begin[k + 1]; ++i) {
    const uint64_t ref = p.refs[i];
    t.set_inputs(static_cast<int>(i - p.ref_begin[k]),
                 (ref & 1) ? run.bindings(static_cast<int>(ref >> 1))
                           : first_out + static_cast<uint64_t>(p.result[ref >> 1]));
  }
  t.set_out(p.result[k] >= 0 ? first_out + static_cast<uint64_t>(p.result[k]) : 0);
  if (p.tag_int[k] >= 0)  // (uint64 arithmetic: tags wrap the same on every member)
    t.set_ints(p.tag_int[k], static_cast<int64_t>(p.tag_offset[k] + run.tag_base()));
}

bool Executor::run_graph_segment(uint64_t session, HotPathDef& p, HotPathDef::GraphSegment& seg,
                                 v1::HotRun& run) {
  const uint64_t first_out = run.first_out();
  // A result handle already taken is eager mode's error to report (and undoing a failed
  // capture must not erase a tensor that was there before).
  for (uint32_t k = seg.begin; k < seg.end; ++k)
    if (p.result[k] >= 0 && tensors_.count(first_out + static_cast<uint64_t>(p.result[k])))
      return false;
  if (!backend_.begin_graph(session).is_ok()) return false;
  const uint64_t ops_before = ops_executed_.load(std::memory_order_relaxed);
  const uint64_t fused_before = fused_ops_.load(std::memory_order_relaxed);
  std::vector<v1::WorkerMessage> held;
  std::vector<ReplacedStorage> replaced;
  held_errors_ = &held;
  replaced_storages_ = &replaced;
  run_segment_instrs(session, p, seg, run);
  held_errors_ = nullptr;
  replaced_storages_ = nullptr;
  auto launched = backend_.end_graph(session, seg.graph);
  if (launched.is_ok()) {
    bump(graph_launches_);
    if (launched->instantiated) bump(graph_instantiations_);
    for (v1::WorkerMessage& m : held) {
      ++errors_;
      send_(std::move(m));
    }
    return true;
  }
  // Nothing recorded ran: undo what the recording did on the host, then run the segment again
  // the eager way (its errors are found again, and sent then).
  bump(graph_fallbacks_);
  spdlog::warn("session {}: a hot path's device graph failed ({}); running it eagerly", session,
               launched.status().message());
  // (A storage replaced on a tensor the segment made and freed is gone with it.)
  for (auto it = replaced.rbegin(); it != replaced.rend(); ++it)
    if (auto t = tensors_.find(it->handle); t != tensors_.end()) t->second.storage = it->old;
  for (uint32_t k = seg.begin; k < seg.end; ++k)
    if (p.result[k] >= 0) free_handle(session, first_out + static_cast<uint64_t>(p.result[k]));
  ops_executed_.store(ops_before, std::memory_order_relaxed);
  fused_ops_.store(fused_before, std::memory_order_relaxed);
  run_segment_instrs(session, p, seg, run);
  return true;
}

void Executor::run_bound_instr(uint64_t session, HotPathDef& p, size_t k, const v1::HotRun& run) {
  bind_instr(p, k, run);
  if (spdlog::should_log(spdlog::level::trace)) log_instr(session, p.instrs[k]);
  run_instr(session, p.instrs[k]);
}

void Executor::run_segment_instrs(uint64_t session, HotPathDef& p,
                                  const HotPathDef::GraphSegment& seg, const v1::HotRun& run) {
  size_t next_free = 0;
  for (uint32_t k = seg.begin; k < seg.end;) {
    while (next_free < seg.frees.size() && seg.frees[next_free].at <= k)
      free_handle(session,
                  run.first_out() + static_cast<uint64_t>(p.result[seg.frees[next_free++].instr]));
    // A fused chain is one kernel of the graph (its frees of intermediates find nothing).
    if (const uint32_t end = run_chain_at(session, p, k, seg.end, run); end != 0) {
      k = end;
      continue;
    }
    run_bound_instr(session, p, k, run);
    ++k;
  }
}

uint32_t Executor::run_chain_at(uint64_t session, HotPathDef& p, size_t k, uint32_t limit,
                                const v1::HotRun& run) {
  if (p.chain_at.empty() || p.chain_at[k] < 0) return 0;
  const FusedChain& ch = p.chains[static_cast<size_t>(p.chain_at[k])];
  return ch.end <= limit ? run_fused_chain(session, p, ch, run) : 0;
}

uint32_t Executor::run_fused_chain(uint64_t session, HotPathDef& p, const FusedChain& ch,
                                   const v1::HotRun& run) {
  const uint64_t first_out = run.first_out();
  // A tensor of this session with a value, float32 (anything else: the eager way decides).
  auto usable = [&](uint64_t ref) { return float32_tensor(session, p, ref, run); };
  std::vector<FusedStep>& steps = fused_steps_;
  steps.clear();
  const Tensor* head = nullptr;
  TensorMeta value;  // the chain's value after each step
  // The steps that can be fused: all of the chain, or the prefix before the first that cannot
  // (an operand of another dtype, a broadcast of the value itself): that one and the rest run
  // one by one after it. Where the fused part begins: the chain's first instruction, or the one
  // after it when that is a cast from a dtype this device's kernels do not read (run on its own
  // first: its result is the head). What returns before the fused part ran says how far the
  // chain was run (`none`).
  uint32_t begin = ch.begin;
  auto none = [&] { return begin == ch.begin ? 0u : begin; };
  uint32_t end = ch.begin;
  FusedTail tail = FusedTail::kNone;
  const bool casts = backend_.fuses_chain_casts();
  for (uint32_t k = ch.begin; k < ch.end; ++k, end = k) {
    const DecodedInstr& dec = *p.decoded[k];
    if (dec.op == OpId::k_cast) {
      // A cast is no step of the kernel's: the head's conversion to float32 (first), the
      // value unchanged (float32 to float32), or the out's conversion (last fused).
      if (!casts) break;
      if (k == begin) {
        head = float32_tensor(session, p, p.refs[p.ref_begin[k]], run, true);
        if (!head) return none();
        if (!backend_.fuses_cast_dtype(head->meta.dtype)) {
          if (k != ch.begin) return none();
          run_bound_instr(session, p, k, run);
          begin = k + 1;
          continue;
        }
        value = head->meta;
      }
      metas_.assign(1, value);
      auto meta = infer_meta(dec.op, metas_, dec.attrs);
      if (!meta.is_ok() || meta->shape != head->meta.shape) break;
      if (value.dtype != DType::kFloat32 && meta->dtype != DType::kFloat32) break;
      if (!backend_.fuses_cast_dtype(meta->dtype)) break;  // (this device converts fewer)
      const bool converts_out = k > begin && meta->dtype != DType::kFloat32;
      value = *meta;
      if (converts_out) {
        end = k + 1;
        break;
      }
      continue;
    }
    if (ch.tail && k + 1 == ch.end) {
      if (!backend_.fuses_chain_tails()) break;  // (the device's fused kernels have none)
      // The tail: fused when it reduces the whole value to one element, and the value is small
      // enough for one thread (else it runs after the fused part, eagerly).
      metas_.assign(1, value);
      auto meta = infer_meta(dec.op, metas_, dec.attrs);
      if (!meta.is_ok() || meta->dtype != DType::kFloat32 || meta->shape.numel() != 1 ||
          value.shape.numel() < 1 || value.shape.numel() > kMaxFusedTailElements)
        break;
      tail = dec.op == OpId::k_mean ? FusedTail::kMean : FusedTail::kSum;
      value = *meta;
      end = k + 1;
      break;
    }
    const uint32_t rb = p.ref_begin[k], arity = p.ref_begin[k + 1] - rb;
    // Which input is the chain's value: the head's first input, else the previous result.
    uint32_t vi = 0;
    if (k > ch.begin) {
      const uint64_t prev = static_cast<uint64_t>(k - 1) << 1;
      if (p.refs[rb] != prev) vi = 1;
    }
    FusedStep st{dec.op};
    metas_.clear();
    if (k == begin) {
      head = usable(p.refs[rb + vi]);
      if (!head) return none();
      value = head->meta;
    }
    if (value.dtype != DType::kFloat32) break;  // (a cast to another dtype ends the chain)
    if (arity == 1) {
      metas_.push_back(value);
      if (!is_unary_elementwise(dec.op)) {
        st.arg = FusedArg::kScalar;
        st.value_right = dec.attrs.scalar_side() == ScalarSide::kLeft;
        const OpAttrs& a = dec.attrs;
        st.scalar = static_cast<float>(
            scalar_in(DType::kFloat32, a.scalar(), a.scalar_is_integral() ? a.scalar_exact() : std::nullopt)
                .value);
      }
    } else {
      const Tensor* other = usable(p.refs[rb + (1 - vi)]);
      if (!other) break;
      st.arg = FusedArg::kTensor;
      st.value_right = vi == 1;
      st.operand = other;
      metas_.push_back(vi == 0 ? value : other->meta);
      metas_.push_back(vi == 0 ? other->meta : value);
    }
    auto meta = infer_meta(dec.op, metas_, dec.attrs);
    // The value keeps the head's shape and stays float32 (no broadcast of the value itself).
    if (!meta.is_ok() || meta->dtype != DType::kFloat32 || meta->shape != head->meta.shape) break;
    value = *meta;
    steps.push_back(st);
  }
  if (end < begin + 2) return none();  // nothing worth a fused pass: one by one
  // Every result handle of the fused part must be free (else the eager way reports it).
  for (uint32_t k = begin; k < end; ++k)
    if (tensors_.count(first_out + static_cast<uint64_t>(p.result[k]))) return none();
  if (!backend_.supports(p.decoded[end - 1]->op)) return none();
  // Its last result is made (the rest of the path reads it); the others never are.
  const uint64_t out_handle = first_out + static_cast<uint64_t>(p.result[end - 1]);
  Tensor out;
  out.meta = value;
  auto storage = backend_.alloc(static_cast<size_t>(value.nbytes()));
  if (!storage.is_ok()) return none();  // eager reports the failure, op by op
  out.storage = std::move(*storage);
  if (!backend_.run_fused(FusedArgs{*head, steps, out, session, tail}).is_ok()) return none();
  const uint64_t ops = end - begin;
  for (uint64_t i = 0; i < ops; ++i) count_op();
  bump(fused_ops_, ops);
  put(session, out_handle, std::move(out));
  return end;
}

}  // namespace gt::worker
