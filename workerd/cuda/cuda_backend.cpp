#include "workerd/cuda/cuda_backend.h"

#include <fmt/format.h>

#include <new>
#include <string>

namespace gt::worker {

namespace {
// cuBLAS's workspace per handle, given from the caching allocator (cublasSetWorkspace) so that
// it is counted with everything else: the size PyTorch configures on Hopper (":4096:8").
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;
}  // namespace

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // no driver / no device: not an error for "auto"
    return 0;
  }
  return n;
}

Result<std::unique_ptr<Backend>> make_cuda_backend(int index, const CudaBackendOptions& opts) {
  GT_ASSIGN_OR_RETURN(std::unique_ptr<CudaBackend> b, CudaBackend::create(index, opts));
  return std::unique_ptr<Backend>(std::move(b));
}

Result<std::unique_ptr<CudaBackend>> CudaBackend::create(int index, CudaBackendOptions opts) {
  const int n = cuda_device_count();
  if (index < 0 || index >= n)
    return unavailable("CUDA device {} not found ({} visible)", index, n);
  GT_CUDA_CHECK(cudaSetDevice(index));
  cudaDeviceProp prop{};
  GT_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  std::string name = fmt::format("{} (sm_{}{}, {} GiB)", prop.name, prop.major, prop.minor,
                                 (prop.totalGlobalMem + (uint64_t{1} << 29)) >> 30);
  std::unique_ptr<CudaBackend> b(new CudaBackend(index, std::move(name), prop.totalGlobalMem, opts));
  b->sm_count_ = prop.multiProcessorCount;
  if (b->opts_.fused_kernels) b->enable_fused(prop.major * 10 + prop.minor);
  return b;
}

CudaBackend::CudaBackend(int device, std::string name, uint64_t total_memory,
                         CudaBackendOptions opts)
    : StreamBackend(std::make_unique<cuda::CudaDeviceApi>(device, total_memory),
                    opts.max_memory_bytes),
      device_(device),
      opts_(opts),
      name_(std::move(name)) {
  api_ = static_cast<cuda::CudaDeviceApi*>(&device_api());
  cuda::register_creation(kernels_);
  cuda::register_elementwise(kernels_);
  cuda::register_reduce(kernels_);
  cuda::register_layout(kernels_);
  cuda::register_indexing(kernels_);
  cuda::register_matmul(kernels_);
  set_kernels(kernels_);
}

CudaBackend::~CudaBackend() {
  shutdown();  // (the fused-kernel cache too: nothing loads any more)
  {
    std::lock_guard<std::mutex> lock(libs_mu_);
    if (api_->use_device().is_ok())
      for (SessionLibs& l : spare_libs_) free_libs(l);
    spare_libs_.clear();
  }
  if (api_->use_device().is_ok())
    for (cudaLibrary_t lib : fused_libs_) cudaLibraryUnload(lib);
}

// A session's libraries: a cuBLAS handle on its stream with a workspace from the allocator, and
// the index-check slots. Out of memory on the way trims the cache and tries once more.
Result<CudaBackend::SessionLibs> CudaBackend::make_libs(device::Stream s) {
  GT_RETURN_IF_ERROR(api_->use_device());
  SessionLibs l;
  auto fail = [&](Status st) {
    free_libs(l);
    return st;
  };
  cublasStatus_t e = cublasCreate(&l.blas);
  if (e == CUBLAS_STATUS_ALLOC_FAILED) {
    trim_cache();
    e = cublasCreate(&l.blas);
  }
  if (e != CUBLAS_STATUS_SUCCESS) {
    l.blas = nullptr;
    return fail(cuda::cublas_status(e, "cublasCreate", __FILE__, __LINE__));
  }
  const auto stream = static_cast<cudaStream_t>(s);
  if (Status st = cuda::cublas_status(cublasSetStream(l.blas, stream), "cublasSetStream", __FILE__,
                                      __LINE__);
      !st.is_ok())
    return fail(st);
  // float16/bfloat16 GEMMs accumulate in float32 (issue 4): forbid cuBLAS's reduced-precision
  // split-K reductions, which PyTorch allows by default for speed.
  if (Status st = cuda::cublas_status(
          cublasSetMathMode(l.blas, static_cast<cublasMath_t>(
                                        CUBLAS_DEFAULT_MATH |
                                        CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
          "cublasSetMathMode", __FILE__, __LINE__);
      !st.is_ok())
    return fail(st);
  auto ws = allocator().allocate(kCublasWorkspaceBytes, s);
  if (!ws.is_ok()) return fail(ws.status());
  l.workspace = ws->data;
  if (Status st = cuda::cublas_status(cublasSetWorkspace(l.blas, l.workspace, kCublasWorkspaceBytes),
                                      "cublasSetWorkspace", __FILE__, __LINE__);
      !st.is_ok())
    return fail(st);
  auto slot = allocator().allocate(2 * sizeof(int64_t), s);
  if (!slot.is_ok()) return fail(slot.status());
  l.check_slot = static_cast<int64_t*>(slot->data);
  auto host = device_api().host_alloc(2 * sizeof(int64_t));
  if (!host.is_ok()) return fail(host.status());
  l.check_host = static_cast<int64_t*>(*host);
  return l;
}

void CudaBackend::free_libs(SessionLibs& l) {
  if (l.blas) cublasDestroy(l.blas);
  if (l.workspace) allocator().deallocate(l.workspace);
  if (l.check_slot) allocator().deallocate(l.check_slot);
  if (l.check_host) device_api().host_free(l.check_host);
  l = SessionLibs{};
}

Status CudaBackend::on_session_created(uint64_t session, device::Stream s) {
  SessionLibs l;
  {
    std::lock_guard<std::mutex> lock(libs_mu_);
    if (!spare_libs_.empty()) {
      l = spare_libs_.back();
      spare_libs_.pop_back();
    }
  }
  if (l.blas) {  // an ended session's: its handle and buffers move to this stream
    GT_RETURN_IF_ERROR(api_->use_device());
    Status st = cuda::cublas_status(cublasSetStream(l.blas, static_cast<cudaStream_t>(s)),
                                    "cublasSetStream", __FILE__, __LINE__);
    if (st.is_ok()) st = use_on(l.workspace, s);
    if (st.is_ok()) st = use_on(l.check_slot, s);
    if (!st.is_ok()) {
      free_libs(l);
      return st;
    }
  } else {
    GT_ASSIGN_OR_RETURN(l, make_libs(s));
  }
  std::lock_guard<std::mutex> lock(libs_mu_);
  libs_[session] = l;
  return Status::ok();
}

// On the completion thread, once the session's stream has finished its work.
void CudaBackend::on_session_destroyed(uint64_t session) {
  SessionLibs l;
  {
    std::lock_guard<std::mutex> lock(libs_mu_);
    auto it = libs_.find(session);
    if (it == libs_.end()) return;
    l = it->second;
    libs_.erase(it);
    // Kept for the next session (no device-wide synchronize here), unless the device is lost.
    if (spare_libs_.size() < kSpareLibs && cuda::cuda_sticky_error().is_ok()) {
      spare_libs_.push_back(l);
      return;
    }
  }
  if (api_->use_device().is_ok()) free_libs(l);
}

Result<void*> CudaBackend::native_stream(uint64_t session) {
  GT_RETURN_IF_ERROR(api_->use_device());
  GT_ASSIGN_OR_RETURN(device::Stream s, stream_for(session));
  return static_cast<void*>(s);
}

Status CudaBackend::use_on_session(const void* data, uint64_t session) {
  GT_RETURN_IF_ERROR(api_->use_device());
  GT_ASSIGN_OR_RETURN(device::Stream s, stream_for(session));
  return use_on(data, s);
}

Status CudaBackend::run_kernel(const KernelArgs& args) {
  GT_RETURN_IF_ERROR(api_->use_device());
  GT_ASSIGN_OR_RETURN(device::Stream s, stream_for(args.session));
  // Blocks last used by another stream are ordered after that work (the allocator).
  for (const Tensor* t : args.inputs)
    if (t->storage) GT_RETURN_IF_ERROR(use_on(t->storage->data(), s));
  if (args.out.storage) GT_RETURN_IF_ERROR(use_on(args.out.storage->data(), s));
  SessionLibs libs;
  {
    std::lock_guard<std::mutex> lock(libs_mu_);
    auto it = libs_.find(args.session);
    if (it == libs_.end()) return internal_error("no cuBLAS handle for session {}", args.session);
    libs = it->second;
  }
  cuda::OpContext ctx;
  ctx.stream = static_cast<cudaStream_t>(s);
  ctx.blas = libs.blas;
  ctx.alloc = &allocator();
  ctx.api = api_;
  ctx.allow_tf32 = opts_.allow_tf32;
  ctx.capturing = capturing(args.session);
  ctx.check_slot = libs.check_slot;
  ctx.check_host = libs.check_host;
  ctx.report = [this, session = args.session, handle = args.out.handle, op = args.op,
                slot = args.out.storage ? args.out.storage->error_slot() : nullptr](Status st) {
    report_kernel_failure(session, handle, op, slot, std::move(st));
  };
  return kernels_[static_cast<size_t>(args.op)](args, ctx);
}

}  // namespace gt::worker
