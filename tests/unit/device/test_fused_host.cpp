// The generated fused-chain programs (workerd/device/fused_kernel_source.h) compiled as host C++
// and run on the CPU, against the same steps run one by one as the CPU backend's eager kernels:
// bitwise equal for every case of fused_cases.h. What a GPU would run, minus the GPU: the
// program's dataflow (each step's op, the side the chain's value is on, each operand's
// broadcast and its index arithmetic) and the launch parameters (fill_launch_params' pointer
// array, unpacked in the kernel's parameter order by gen_fused_host) are checked in CI. The
// device's math functions are the host's here (the same elementwise_math.h), so both sides use
// the baseline CPU loops (GT_CPU_BASELINE): no FMA anywhere.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fused_cases.h"
#include "libgtcore/op_attrs.h"
#include "libgtcore/shape_rules.h"
#include "require_ok.h"
#include "workerd/cpu/cpu_backend.h"
#include "workerd/kernels/convert.h"  // (before the programs: they include it, a no-op then)
#include "workerd/kernels/elementwise_math.h"

// ---- what the generated programs need from CUDA, on the host: one thread runs the whole
// grid-stride loop ----
namespace {
struct GtHostDim3 {
  unsigned x, y, z;
};
GtHostDim3 blockIdx{0, 0, 0}, threadIdx{0, 0, 0}, gridDim{1, 1, 1}, blockDim{1, 1, 1};
template <class T>
T gt_param(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
struct GtHostKernel {
  const char* key;
  void (*call)(void* const* params);
};
}  // namespace
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#include "fused_host_kernels.inc"
#undef __global__
#undef __device__
#undef __forceinline__
#undef __launch_bounds__

using namespace gt;
using namespace gt::worker;
using namespace gt::worker::device;

namespace {

// Both sides on the baseline loops (set before the first kernel picks its loops).
const bool kBaseline = [] { return setenv("GT_CPU_BASELINE", "1", 1) == 0; }();

struct Rig {
  CpuBackend be{CpuBackendOptions{0, 1, 0}};
  std::mt19937 rng{7};

  Tensor make(const Shape& s, double lo, double hi, DType dt = DType::kFloat32) {
    Tensor t;
    t.meta = TensorMeta{s, dt};
    auto st = be.alloc(static_cast<size_t>(t.meta.nbytes()));
    GT_REQUIRE_OK(st);
    t.storage = std::move(*st);
    std::uniform_real_distribution<float> d(static_cast<float>(lo), static_cast<float>(hi));
    if (dt == DType::kFloat32)
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
    return t;
  }
  Tensor run(OpId op, std::vector<const Tensor*> ins, const OpAttrs& a = {}) {
    std::vector<TensorMeta> metas;
    for (const Tensor* t : ins) metas.push_back(t->meta);
    auto meta = infer_meta(op, metas, a);
    GT_REQUIRE_OK(meta);
    Tensor out;
    out.meta = *meta;
    auto st = be.alloc(static_cast<size_t>(out.meta.nbytes()));
    GT_REQUIRE_OK(st);
    out.storage = std::move(*st);
    GT_REQUIRE_OK(be.run(KernelArgs{op, a, ins, out, 0}));
    return out;
  }
};

bool same_bits(float a, float b) {
  if (a != a || b != b) return a != a && b != b;
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Element i of float32 / float16 / bfloat16 tensors a and b: the same bits (any NaN for float32).
bool same_element(const Tensor& a, const Tensor& b, int64_t i) {
  if (a.meta.dtype == DType::kFloat32) return same_bits(a.data<float>()[i], b.data<float>()[i]);
  return a.data<uint16_t>()[i] == b.data<uint16_t>()[i];
}

}  // namespace

TEST_CASE("generated fused programs, run on the host, are bitwise the eager CPU kernels",
          "[device][fused]") {
  REQUIRE(kBaseline);
  const auto cases = fused_test::cases();
  REQUIRE(std::size(kGtHostKernels) == cases.size());
  Rig r;
  const Shape s{37, 129};  // a multiple of nothing
  const Tensor head = r.make(s, -3, 3);
  // An operand per mode (positive: divisors), the shapes that give each mode.
  const Tensor one = r.make(Shape{1, 1}, 0.5, 2), same = r.make(s, 0.5, 2),
               bias = r.make(Shape{129}, 0.5, 2), col = r.make(Shape{37, 1}, 0.5, 2);
  auto operand = [&](OperandMode m) -> const Tensor* {
    switch (m) {
      case OperandMode::kOne: return &one;
      case OperandMode::kSame: return &same;
      case OperandMode::kRepeat: return &bias;
      case OperandMode::kGather: return &col;
    }
    return nullptr;
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    const FusedKernelSignature& sig = cases[c];
    INFO(sig.key());
    CHECK(std::string(kGtHostKernels[c].key) == sig.key());
    // Eager: each step as its own kernel (after the head's cast to float32, before the value's
    // cast out: the eager cast kernels); the steps for the fused program alongside.
    std::vector<Tensor> keep;
    keep.reserve(sig.steps.size() + 3);
    std::vector<FusedStep> steps;
    const Tensor* in = &head;  // the program's head
    if (sig.head != DType::kFloat32) {
      keep.push_back(r.run(OpId::k_cast, {&head}, make_cast(sig.head)));
      in = &keep.back();
      keep.push_back(r.run(OpId::k_cast, {in}, make_cast(DType::kFloat32)));
    }
    const Tensor* v = keep.empty() ? &head : &keep.back();
    float scalar = 1.25f;
    for (const FusedKernelStep& st : sig.steps) {
      FusedStep f{st.op, st.arg, st.value_right};
      if (st.arg == FusedArg::kNone) {
        keep.push_back(r.run(st.op, {v}));
      } else if (st.arg == FusedArg::kScalar) {
        scalar = scalar == 1.25f ? 0.75f : 1.25f;  // exact in float and double
        f.scalar = scalar;
        keep.push_back(r.run(st.op, {v}, make_binary_scalar(st.value_right ? ScalarSide::kLeft
                                                                           : ScalarSide::kRight,
                                                             scalar, false)));
      } else {
        f.operand = operand(st.mode);
        keep.push_back(st.value_right ? r.run(st.op, {f.operand, v}) : r.run(st.op, {v, f.operand}));
      }
      steps.push_back(f);
      v = &keep.back();
    }
    if (sig.out != DType::kFloat32) {
      keep.push_back(r.run(OpId::k_cast, {v}, make_cast(sig.out)));
      v = &keep.back();
    }
    // Fused: the program on the host, through the launch's parameter pointers.
    Tensor out = r.make(s, 0, 0, sig.out);
    std::memset(out.storage->data(), 0xff, static_cast<size_t>(out.meta.nbytes()));
    const FusedArgs args{*in, steps, out, 0};
    const FusedKernelSignature derived = signature_of(args);
    REQUIRE(derived.key() == sig.key());  // the operands give the modes the case names
    FusedLaunchParams params;
    fill_launch_params(args, derived, params);
    kGtHostKernels[c].call(params.pointers.data());
    int bad = 0;
    REQUIRE(v->meta.dtype == out.meta.dtype);
    for (int64_t i = 0; i < out.numel() && bad < 5; ++i)
      if (!same_element(out, *v, i)) {
        ++bad;
        UNSCOPED_INFO("element " << i << " differs from eager's");
      }
    CHECK(bad == 0);
  }
}
