// Creates the backend for the `device` option: "cpu", a CUDA device index, or "auto" (GPU 0
// when this build has CUDA and a GPU is present, else the CPU), with the device options of
// worker_options.def (max_memory_bytes, blas_threads, allow_tf32).
#pragma once

#include <memory>

#include "workerd/backend.h"
#include "workerd/worker_options.h"

namespace gt::worker {

Result<std::unique_ptr<Backend>> make_backend(const WorkerOptions& opts);

}  // namespace gt::worker
