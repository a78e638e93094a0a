// The CUDA backend's fused elementwise chains (issue 11 step 3): each chain's program
// (device/fused_kernel_source.h) compiled by NVRTC for this GPU, loaded as a CUDA library, and
// launched on the session's stream -- inside a device graph too, as any kernel.
#include <fmt/format.h>

#include <algorithm>

#include "workerd/cuda/cuda_backend.h"
#include "workerd/cuda/cuda_check.h"
#include "workerd/cuda/nvrtc_compiler.h"

namespace gt::worker {

namespace {
constexpr int kFusedBlock = 256;  // the programs' __launch_bounds__
// Grid-stride loops: enough blocks to fill every SM several times over, no more.
constexpr int64_t kFusedBlocksPerSm = 8;
}  // namespace

static_assert(sizeof(device::FusedOperandParam) == 152,
              "the generated programs' GtOperand has this layout");

void CudaBackend::enable_fused(int arch) {
  device::FusedKernelCache::Options o;
  o.dir = opts_.kernel_cache_dir;
  enable_fused_kernels([this, arch, o]() -> Result<std::unique_ptr<device::FusedKernelCache>> {
    GT_ASSIGN_OR_RETURN(std::unique_ptr<device::KernelCompiler> compiler,
                        cuda::make_nvrtc_compiler(arch));
    return std::make_unique<device::FusedKernelCache>(
        o, std::move(compiler),
        [this](const std::string& bin, const std::string& name) { return load_fused(bin, name); });
  });
}

// On the cache's compile thread.
Result<void*> CudaBackend::load_fused(const std::string& binary, const std::string& name) {
  GT_RETURN_IF_ERROR(api_->use_device());
  cudaLibrary_t lib = nullptr;
  GT_CUDA_CHECK(cudaLibraryLoadData(&lib, binary.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  cudaKernel_t kernel = nullptr;
  if (cudaError_t e = cudaLibraryGetKernel(&kernel, lib, name.c_str()); e != cudaSuccess) {
    cudaLibraryUnload(lib);
    return internal_error("{} not in its compiled library: {}", name, cudaGetErrorString(e));
  }
  // Libraries load lazily (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2): the module
  // is loaded -- and a PTX image JIT-compiled -- at the first launch, on the executor's thread,
  // maybe inside a graph capture, where a failure (no image for this GPU, a PTX newer than the
  // driver) would fail every run. Asking for the kernel's attributes loads it now, on this
  // thread, and a kernel that cannot run here is the chain's failure, once.
  cudaFuncAttributes attr{};
  const cudaError_t loaded = cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(kernel));
  if (loaded != cudaSuccess || attr.maxThreadsPerBlock < kFusedBlock) {
    Status st = loaded != cudaSuccess
                    ? cuda::cuda_status(loaded, "loading a fused kernel", __FILE__, __LINE__)
                    : internal_error("{}: {} threads per block at most, {} needed", name,
                                     attr.maxThreadsPerBlock, kFusedBlock);
    cudaLibraryUnload(lib);
    return st;
  }
  std::lock_guard<std::mutex> lock(fused_libs_mu_);
  fused_libs_.push_back(lib);
  return static_cast<void*>(kernel);
}

Status CudaBackend::run_fused_kernel(const FusedArgs& args) {
  const device::FusedKernelSignature sig = device::signature_of(args);
  GT_ASSIGN_OR_RETURN(void* kernel, fused_kernel(sig));
  GT_RETURN_IF_ERROR(api_->use_device());
  GT_ASSIGN_OR_RETURN(device::Stream s, stream_for(args.session));
  GT_RETURN_IF_ERROR(use_on(args.head.storage->data(), s));
  GT_RETURN_IF_ERROR(use_on(args.out.storage->data(), s));
  for (const FusedStep& st : args.steps)
    if (st.operand) GT_RETURN_IF_ERROR(use_on(st.operand->storage->data(), s));
  device::FusedLaunchParams params;
  device::fill_launch_params(args, sig, params);
  const int64_t n = params.n;
  if (n == 0) return Status::ok();
  const int64_t blocks = std::min<int64_t>((n + kFusedBlock - 1) / kFusedBlock,
                                           kFusedBlocksPerSm * sm_count_);
  GT_CUDA_CHECK(cudaLaunchKernel(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kFusedBlock),
                                 params.pointers.data(), 0, static_cast<cudaStream_t>(s)));
  return Status::ok();
}

}  // namespace gt::worker
