// A fused elementwise chain (workerd/fusion.h) as a CUDA kernel generated at run time (issue 11
// step 3): the chain's structure -- each step's op, what its second operand is and on which side
// the chain's value sits, how a tensor operand lines up with the elements -- becomes the body of
// one grid-stride loop; values (scalars), pointers and shapes are the launch's parameters, so one
// kernel serves every run of a hot path and every path with the same structure.
//
// Each step is the eager kernel's math (workerd/kernels/elementwise_math.h, included into the
// program: NVRTC compiles the same header nvcc does, through rtc_std.h) on float32, and its
// result is kept as a float before the next step reads it (an empty asm between steps stops the
// compiler contracting a multiply of one step and an add of the next into one FMA, which eager
// execution, writing every result to memory, never does): results are bitwise the eager kernels'.
//
// A chain may also begin with its head's cast to float32 and end with its value's cast out
// (mixed precision: float16 / bfloat16 storage, float32 math): the head is read and the result
// written in their own dtype, converted as the eager cast kernel converts (on the device, the same
// PTX conversions cuda_fp16.h / cuda_bf16.h emit; built for the host, convert.h's).
//
// Device-generic: the CUDA backend compiles the source with NVRTC and launches it; the sim device
// compiles it too (where NVRTC is present) and runs the CPU's fused chain in its place.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gt/core/shape.h"
#include "workerd/fusion.h"

namespace gt::worker::device {

struct FusedKernelStep {
  OpId op;
  FusedArg arg = FusedArg::kNone;
  bool value_right = false;
  OperandMode mode = OperandMode::kSame;  // kTensor only
};

// The structure of a chain that decides its kernel. key() names it (stable across builds of the
// same codegen version: it names the cached binaries on disk).
struct FusedKernelSignature {
  std::vector<FusedKernelStep> steps;
  DType head = DType::kFloat32;  // read as this, converted to float32 (generated_cast_dtype)
  DType out = DType::kFloat32;   // the value converted to this, written as it
  std::string key() const;
};

// The dtypes a generated program reads its head / writes its result in (float32, float16,
// bfloat16): a device running generated kernels fuses casts from and to these only.
bool generated_cast_dtype(DType d);
// The C++ element type a program's head or result of dtype `d` has ("float", or raw 16 bits).
const char* fused_storage_type(DType d);

// The signature of a launch's chain (tensor operands' modes from their shapes). Tails are not
// part of generated kernels: a device that generates them does not fuse tails.
FusedKernelSignature signature_of(const FusedArgs& args);

struct FusedKernelSource {
  std::string key;     // the signature's key
  std::string name;    // the kernel's (extern "C") name: gt_fused_<hash of the key>
  std::string source;  // the CUDA C++ program
};
FusedKernelSource fused_kernel_source(const FusedKernelSignature& sig);

// The tree's headers the program includes, compiled into the worker (NVRTC takes them as
// in-memory headers: the worker's machine needs no source tree or toolkit headers).
struct RtcHeader {
  const char* name;  // as the program includes it
  const char* text;
};
std::span<const RtcHeader> rtc_headers();

// A tensor operand's launch parameter; the program's GtOperand has the same layout.
struct FusedOperandParam {
  const float* p = nullptr;
  int64_t period = 0;  // kRepeat
  int32_t rank = 0;    // kGather: the chain's dims and the operand's strides over them
  int64_t size[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
};

// The launch parameters after (head, out, n), in the kernel's order: each scalar step's float,
// each tensor step's FusedOperandParam.
struct FusedLaunchParams {
  std::vector<float> scalars;
  std::vector<FusedOperandParam> operands;
  std::vector<void*> pointers;  // head, out, n, then the steps' (into this object: keep it)
  const void* head = nullptr;   // (of the signature's head dtype)
  void* out = nullptr;          // (of its out dtype)
  int64_t n = 0;
};
void fill_launch_params(const FusedArgs& args, const FusedKernelSignature& sig,
                        FusedLaunchParams& params);

}  // namespace gt::worker::device
