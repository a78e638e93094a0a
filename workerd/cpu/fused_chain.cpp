// The CPU's fused elementwise chain (workerd/fusion.h): one pass over the data in blocks that stay
// in cache, every step applied to a block before the next block is read. Each step's loop is the
// eager kernel's, written with the same math (elementwise_math.h) on float32: the first step
// reads the head, the later ones update a scratch block in place and the last writes the result,
// so a chain of k ops reads its head and tensor operands once and writes its result once, where
// eager execution makes and rereads k full tensors. A head or result of another dtype (the
// chain's casts) is converted a block at a time as it is read or written. Results are bitwise
// the eager ones. A chain with a reduction tail (fusion.h) runs on one thread, its blocks
// computed as the eager summation asks for its values (cascade_sum.h): the same values added in
// the same order.
#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "workerd/cpu/cascade_sum.h"
#include "workerd/cpu/kernels.h"
#include "workerd/cpu/wide_simd.h"
#include "workerd/kernels/elementwise_math.h"

namespace gt::worker::cpu {
namespace {

// Elements per block: the value between steps and a tensor operand's block fit in L1 together.
constexpr int64_t kBlock = 2048;
// A tail's summation reads runs of 4 vector loads that never cross a multiple of them.
static_assert(kBlock % (4 * kLanes) == 0);
// Elements per thread, at least (as the eager transcendental kernels split), and about the
// elements of a part taken by a thread of the compute pool in a long pass (parallel_chunks):
// 512 KB of float32, small enough that the threads finish together.
constexpr int64_t kGrain = int64_t{1} << 16;
constexpr int64_t kChunk = int64_t{1} << 17;

// One step over len elements: o = f(v) or f(v, s) / f(s, v) or f(v, t) / f(t, v). v may be o.
struct StepLoops {
  void (*unary)(float*, const float*, int64_t) = nullptr;
  void (*scalar)(float*, const float*, float, int64_t) = nullptr;
  void (*scalar_rev)(float*, const float*, float, int64_t) = nullptr;
  void (*tensor)(float*, const float*, const float*, int64_t) = nullptr;
  void (*tensor_rev)(float*, const float*, const float*, int64_t) = nullptr;
};

template <OpId kOp>
[[gnu::always_inline]] inline void unary_body(float* o, const float* v, int64_t n) {
  using C = std::conditional_t<unary_keeps_dtype(kOp), compute_t<float>, math_t<float>>;
  for (int64_t i = 0; i < n; ++i) o[i] = convert_value<float>(UnaryFn<kOp>::f(convert_value<C>(v[i])));
}
template <OpId kOp, bool kRev>
[[gnu::always_inline]] inline void scalar_body(float* o, const float* v, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    o[i] = convert_value<float>(kRev ? BinaryFn<kOp>::f(s, v[i]) : BinaryFn<kOp>::f(v[i], s));
}
template <OpId kOp, bool kRev>
[[gnu::always_inline]] inline void tensor_body(float* o, const float* v, const float* __restrict t,
                                               int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    o[i] = convert_value<float>(kRev ? BinaryFn<kOp>::f(t[i], v[i]) : BinaryFn<kOp>::f(v[i], t[i]));
}

// Each loop twice: for the baseline target and for AVX2 + FMA (wide_simd.h). The transcendental
// ops must take the loop the eager kernel takes on this CPU (FMA contraction inside exp and
// friends changes last bits); the others are single IEEE operations per element, the same in
// any vector width, so they take the wide loop whenever the CPU has it.
#define GT_STEP_LOOPS(SUFFIX, TARGET)                                                          \
  template <OpId kOp>                                                                          \
  TARGET void unary_##SUFFIX(float* o, const float* v, int64_t n) {                            \
    unary_body<kOp>(o, v, n);                                                                  \
  }                                                                                            \
  template <OpId kOp, bool kRev>                                                               \
  TARGET void scalar_##SUFFIX(float* o, const float* v, float s, int64_t n) {                  \
    scalar_body<kOp, kRev>(o, v, s, n);                                                        \
  }                                                                                            \
  template <OpId kOp, bool kRev>                                                               \
  TARGET void tensor_##SUFFIX(float* o, const float* v, const float* __restrict t, int64_t n) { \
    tensor_body<kOp, kRev>(o, v, t, n);                                                        \
  }
GT_STEP_LOOPS(base, )
GT_STEP_LOOPS(wide, GT_WIDE_SIMD_TARGET)
#undef GT_STEP_LOOPS

template <OpId kOp, bool kWide>
StepLoops loops_of() {
  if constexpr (is_unary_elementwise(kOp)) {
    return StepLoops{kWide ? unary_wide<kOp> : unary_base<kOp>};
  } else {
    if constexpr (kWide)
      return StepLoops{nullptr, scalar_wide<kOp, false>, scalar_wide<kOp, true>,
                       tensor_wide<kOp, false>, tensor_wide<kOp, true>};
    else
      return StepLoops{nullptr, scalar_base<kOp, false>, scalar_base<kOp, true>,
                       tensor_base<kOp, false>, tensor_base<kOp, true>};
  }
}

const std::array<StepLoops, kNumOps>& step_loops() {
  static const std::array<StepLoops, kNumOps> table = [] {
    std::array<StepLoops, kNumOps> t{};
    const bool wide = wide_simd();
    for_each_op([&](auto c) {
      constexpr OpId op = decltype(c)::value;
      if constexpr (fusable_op(op))
        t[static_cast<size_t>(op)] = wide ? loops_of<op, true>() : loops_of<op, false>();
    });
    return t;
  }();
  return table;
}

// How a step's tensor operand lines up with the chain's elements: one value, a run that repeats
// (the operand is out's trailing dims: a bias), or any other broadcast (a column [m, 1] over
// [m, n]), gathered a block at a time through its broadcast strides.
struct OperandPlan {
  enum Kind { kNoOperand, kOne, kRepeat, kGather } kind = kNoOperand;
  int64_t period = 0;                      // kRepeat
  int rank = 0;                            // kGather: out's dims and the operand's strides
  std::array<int64_t, kMaxRank> dims{}, strides{};
};

OperandPlan plan_operand(const FusedStep& st, const Shape& out) {
  OperandPlan p;
  if (st.arg != FusedArg::kTensor) return p;
  const OperandBroadcast b = operand_broadcast(st.operand->meta.shape, out);
  switch (b.mode) {
    case OperandMode::kOne: p.kind = OperandPlan::kOne; break;
    case OperandMode::kSame:  // a run as long as the chain
    case OperandMode::kRepeat:
      p.kind = OperandPlan::kRepeat;
      p.period = b.period;
      break;
    case OperandMode::kGather:
      p.kind = OperandPlan::kGather;
      p.rank = b.rank;
      p.dims = b.dims;
      p.strides = b.strides;
      break;
  }
  return p;
}

// The operand's values for elements [b, b + len) into tmp (kGather).
void gather_operand(const OperandPlan& p, const float* t, int64_t b, int64_t len, float* tmp) {
  std::array<int64_t, kMaxRank> idx{};
  int64_t rem = b, off = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    idx[d] = rem % p.dims[d];
    rem /= p.dims[d];
    off += idx[d] * p.strides[d];
  }
  const int last = p.rank - 1;
  for (int64_t j = 0; j < len; ++j) {
    tmp[j] = t[off];
    int d = last;
    ++idx[d];
    off += p.strides[d];
    while (idx[d] == p.dims[d] && d > 0) {  // carry into the next dim out
      off -= p.strides[d] * p.dims[d];
      idx[d] = 0;
      --d;
      ++idx[d];
      off += p.strides[d];
    }
  }
}

// Step `st` over elements [b, b + len) of the chain: o is the result block, v the value so far.
void run_step(const FusedStep& st, const OperandPlan& plan, const StepLoops& f, float* o,
              const float* v, int64_t b, int64_t len, float* tmp) {
  switch (st.arg) {
    case FusedArg::kNone:
      f.unary(o, v, len);
      return;
    case FusedArg::kScalar:
      (st.value_right ? f.scalar_rev : f.scalar)(o, v, st.scalar, len);
      return;
    case FusedArg::kTensor: {
      const float* t = st.operand->data<float>();
      if (plan.kind == OperandPlan::kOne) {  // the eager kernel's scalar loop, same value
        (st.value_right ? f.scalar_rev : f.scalar)(o, v, t[0], len);
        return;
      }
      auto loop = st.value_right ? f.tensor_rev : f.tensor;
      if (plan.kind == OperandPlan::kGather) {
        gather_operand(plan, t, b, len, tmp);
        loop(o, v, tmp, len);
        return;
      }
      // The operand repeats every `period` elements: runs of it.
      const int64_t period = plan.period;
      for (int64_t j = 0; j < len;) {
        const int64_t off = (b + j) % period;
        const int64_t run = std::min(period - off, len - j);
        loop(o + j, v + j, t + off, run);
        j += run;
      }
      return;
    }
  }
}

}  // namespace

Status run_fused_chain(const FusedArgs& args) {
  const int64_t n = args.out.numel();
  const auto& table = step_loops();
  for (const FusedStep& st : args.steps) {
    const StepLoops& f = table[static_cast<size_t>(st.op)];
    if (st.arg == FusedArg::kNone ? !f.unary : !f.scalar)
      return invalid_argument("fused chain: {} does not take {} operand", op_name(st.op),
                              st.arg == FusedArg::kNone ? "no" : "a second");
  }
  std::vector<OperandPlan> plans;
  plans.reserve(args.steps.size());
  for (const FusedStep& st : args.steps) plans.push_back(plan_operand(st, args.head.meta.shape));
  // A head or out of another dtype than float32 is converted a block at a time, with the eager
  // cast's conversion (convert_n): the head's block into scratch before the first step, the
  // value's into out after the last.
  const DType head_dt = args.head.meta.dtype, out_dt = args.out.meta.dtype;
  const bool convert_head = head_dt != DType::kFloat32, convert_out = out_dt != DType::kFloat32;
  const auto* head = static_cast<const char*>(args.head.storage->data());
  auto* out = static_cast<char*>(args.out.storage->data());
  const size_t head_size = dtype_size(head_dt), out_size = dtype_size(out_dt);
  // Elements [b, b + len) of the chain into `result` (float32; null with convert_out: the
  // value goes to out, converted). The steps before the last write `scratch` (a block of L1, or
  // result itself): the result's lines are then written once, by the last step, whose
  // arithmetic hides the misses of their first write -- the first step writing them as it
  // streams the head in stalled on both (tmp: a gathered operand's block).
  auto run_block = [&](float* result, float* scratch, int64_t b, int64_t len, float* tmp) {
    const float* v = scratch;
    if (convert_head) convert_n(head + b * head_size, head_dt, scratch, DType::kFloat32, len);
    else v = reinterpret_cast<const float*>(head) + b;
    for (size_t k = 0; k < args.steps.size(); ++k) {
      const FusedStep& st = args.steps[k];
      float* o = k + 1 == args.steps.size() && !convert_out ? result : scratch;
      run_step(st, plans[k], table[static_cast<size_t>(st.op)], o, v, b, len, tmp);
      v = o;
    }
    if (convert_out) convert_n(v, DType::kFloat32, out + b * out_size, out_dt, len);
    else if (v != result) std::copy_n(v, len, result);  // (casts alone: the converted head)
  };
  if (args.tail != FusedTail::kNone) {
    const int64_t count = args.head.numel();
    std::vector<float> block(kBlock), tmp(kBlock);
    int64_t have = 0, have_end = 0;  // the block computed: elements [have, have_end)
    // The summation asks for runs in order, none across a block (a block is whole groups).
    auto src = [&](int64_t i, int64_t len) -> const float* {
      if (i < have || i + len > have_end) {
        have = i / kBlock * kBlock;
        have_end = std::min(have + kBlock, count);
        run_block(block.data(), block.data(), have, have_end - have, tmp.data());
      }
      return block.data() + (i - have);
    };
    const float sum = row_sum_from<float>(count, src);
    // A mean is the float32 sum divided by n in float32, as the eager mean.
    const float result = args.tail == FusedTail::kMean ? sum / static_cast<float>(count) : sum;
    std::memcpy(out, &result, sizeof result);
    return Status::ok();
  }
  parallel_chunks(n, kGrain, kChunk, [&](int64_t begin, int64_t end) {
    alignas(64) float tmp[kBlock];      // a gathered operand's block
    alignas(64) float scratch[kBlock];  // the value between steps
    for (int64_t b = begin; b < end; b += kBlock)
      run_block(convert_out ? nullptr : reinterpret_cast<float*>(out) + b, scratch, b,
                std::min(kBlock, end - b), tmp);
  });
  return Status::ok();
}

}  // namespace gt::worker::cpu
