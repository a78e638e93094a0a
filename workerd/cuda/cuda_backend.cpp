#include "workerd/cuda/cuda_backend.h"

#include <fmt/format.h>

#include <new>
#include <string>
#include <vector>

namespace gt::worker {

using cuda::CudaAllocator;

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
  std::unique_ptr<CudaBackend> b(new CudaBackend(index, opts));
  GT_RETURN_IF_ERROR(b->init());
  return b;
}

CudaBackend::CudaBackend(int device, CudaBackendOptions opts) : device_(device), opts_(opts) {}

Status CudaBackend::init() {
  GT_CUDA_CHECK(cudaSetDevice(device_));
  cudaDeviceProp prop{};
  GT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  memory_ = opts_.max_memory_bytes != 0 ? opts_.max_memory_bytes : prop.totalGlobalMem;
  name_ = fmt::format("{} (sm_{}{}, {} GiB)", prop.name, prop.major, prop.minor,
                      (prop.totalGlobalMem + (uint64_t{1} << 29)) >> 30);
  allocator_ = std::make_unique<CudaAllocator>(opts_.max_memory_bytes);
  cuda::register_creation(kernels_);
  cuda::register_elementwise(kernels_);
  cuda::register_reduce(kernels_);
  cuda::register_layout(kernels_);
  cuda::register_indexing(kernels_);
  cuda::register_matmul(kernels_);
  set_kernels(kernels_);
  return Status::ok();
}

CudaBackend::~CudaBackend() {
  if (use_device().is_ok()) {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    for (auto& [id, s] : sessions_) destroy(s);
    sessions_.clear();
  }
  allocator_.reset();
}

// The current device is per host thread: the executor thread is not the one that built the
// backend, so every entry point makes sure it is ours (cudaGetDevice is a cheap thread-local
// read; another backend or the caller may have switched it).
Status CudaBackend::use_device() const {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == device_) return Status::ok();
  GT_CUDA_CHECK(cudaSetDevice(device_));
  return Status::ok();
}

Result<CudaBackend::Session*> CudaBackend::session(uint64_t id) {
  std::lock_guard<std::mutex> lock(sessions_mu_);
  auto it = sessions_.find(id);
  if (it != sessions_.end()) return &it->second;
  Session s;
  // Non-blocking: the session's work must not serialize with the legacy default stream.
  GT_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  if (cublasStatus_t e = cublasCreate(&s.blas); e != CUBLAS_STATUS_SUCCESS) {
    cudaStreamDestroy(s.stream);
    return cuda::cublas_status(e, "cublasCreate", __FILE__, __LINE__);
  }
  cublasSetStream(s.blas, s.stream);
  // float16/bfloat16 GEMMs accumulate in float32 (issue 4): forbid cuBLAS's reduced-precision
  // split-K reductions, which PyTorch allows by default for speed.
  cublasSetMathMode(s.blas,
                    static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                              CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
  auto slot = allocator_->allocate(sizeof(int64_t));
  if (!slot.is_ok()) {
    cublasDestroy(s.blas);
    cudaStreamDestroy(s.stream);
    return slot.status();
  }
  s.check_slot = static_cast<int64_t*>(slot.value().data);
  GT_RETURN_IF_ERROR(allocator_->use_on(s.check_slot, s.stream));
  return &sessions_.emplace(id, s).first->second;
}

void CudaBackend::destroy(Session& s) {
  cudaStreamSynchronize(s.stream);
  if (s.check_slot) allocator_->deallocate(s.check_slot);
  allocator_->forget_stream(s.stream);
  if (s.blas) cublasDestroy(s.blas);
  cudaStreamDestroy(s.stream);
  cudaGetLastError();
  s = Session{};
}

void CudaBackend::end_session(uint64_t id) {
  if (!use_device().is_ok()) return;
  std::lock_guard<std::mutex> lock(sessions_mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  destroy(it->second);
  sessions_.erase(it);
}

Result<cudaStream_t> CudaBackend::stream_of(uint64_t id) {
  GT_RETURN_IF_ERROR(use_device());
  GT_ASSIGN_OR_RETURN(Session * s, session(id));
  return s->stream;
}

Result<void*> CudaBackend::native_stream(uint64_t id) {
  GT_ASSIGN_OR_RETURN(cudaStream_t s, stream_of(id));
  return static_cast<void*>(s);
}

Status CudaBackend::use_on_session(const void* data, uint64_t id) {
  return stream_for(data, id).status();
}

Result<cudaStream_t> CudaBackend::stream_for(const void* data, uint64_t id) {
  GT_RETURN_IF_ERROR(use_device());
  GT_ASSIGN_OR_RETURN(Session * s, session(id));
  GT_RETURN_IF_ERROR(allocator_->use_on(data, s->stream));
  return s->stream;
}

Result<std::shared_ptr<Storage>> CudaBackend::alloc(size_t bytes) {
  if (bytes == 0) return std::make_shared<Storage>(nullptr, 0, 0, this);
  GT_RETURN_IF_ERROR(use_device());
  GT_ASSIGN_OR_RETURN(CudaAllocator::Block b, allocator_->allocate(bytes));
  try {
    return std::make_shared<Storage>(b.data, bytes, b.capacity, this);
  } catch (const std::bad_alloc&) {
    allocator_->deallocate(b.data);
    return resource_exhausted("out of memory: no room for the storage record of {} bytes", bytes);
  }
}

void CudaBackend::release(void* data, size_t /*capacity*/) {
  if (data == nullptr || !use_device().is_ok()) return;
  allocator_->deallocate(data);
}

void CudaBackend::trim_cache() {
  if (use_device().is_ok()) allocator_->trim();
}

BackendStats CudaBackend::stats() const { return allocator_->stats(); }

Status CudaBackend::run_kernel(const KernelArgs& args) {
  GT_RETURN_IF_ERROR(use_device());
  GT_ASSIGN_OR_RETURN(Session * s, session(args.session));
  // Blocks last used by another session's stream are ordered after that work (allocator).
  for (const Tensor* t : args.inputs)
    GT_RETURN_IF_ERROR(allocator_->use_on(t->storage->data(), s->stream));
  GT_RETURN_IF_ERROR(allocator_->use_on(args.out.storage->data(), s->stream));
  cuda::OpContext ctx;
  ctx.stream = s->stream;
  ctx.blas = s->blas;
  ctx.alloc = allocator_.get();
  ctx.allow_tf32 = opts_.allow_tf32;
  ctx.check_slot = s->check_slot;
  return kernels_[static_cast<size_t>(args.op)](args, ctx);
}

Status CudaBackend::read_bytes(const DeviceBytes& b, void* dst, uint64_t session_id) {
  GT_ASSIGN_OR_RETURN(cudaStream_t s, stream_for(b.block, session_id));
  GT_CUDA_CHECK(cudaMemcpyAsync(dst, static_cast<const unsigned char*>(b.block) + b.offset, b.n,
                                cudaMemcpyDeviceToHost, s));
  GT_CUDA_CHECK(cudaStreamSynchronize(s));
  return Status::ok();
}

// `src` is pageable host memory (an instruction's bytes, a host buffer): CUDA stages a pageable
// source before cudaMemcpyAsync returns, so the caller may free it right after.
Status CudaBackend::write_bytes(const DeviceBytes& b, const void* src, uint64_t session_id) {
  GT_ASSIGN_OR_RETURN(cudaStream_t s, stream_for(b.block, session_id));
  GT_CUDA_CHECK(cudaMemcpyAsync(static_cast<unsigned char*>(b.block) + b.offset, src, b.n,
                                cudaMemcpyHostToDevice, s));
  return Status::ok();
}

Status CudaBackend::zero_bytes(const DeviceBytes& b, uint64_t session_id) {
  GT_ASSIGN_OR_RETURN(cudaStream_t s, stream_for(b.block, session_id));
  GT_CUDA_CHECK(cudaMemsetAsync(static_cast<unsigned char*>(b.block) + b.offset, 0, b.n, s));
  return Status::ok();
}

Status CudaBackend::synchronize(uint64_t session_id) {
  GT_RETURN_IF_ERROR(use_device());
  {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    if (sessions_.find(session_id) == sessions_.end()) return Status::ok();  // nothing queued
  }
  GT_ASSIGN_OR_RETURN(Session * s, session(session_id));
  GT_CUDA_CHECK(cudaStreamSynchronize(s->stream));
  return Status::ok();
}

}  // namespace gt::worker
