// Creates the backend for `--device`: "cpu", a CUDA device index, or "auto" (GPU 0 when this
// build has CUDA and a GPU is present, else the CPU).
#pragma once

#include <memory>
#include <string>

#include "libgtcore/config.h"
#include "workerd/backend.h"

namespace gt::worker {

Result<std::unique_ptr<Backend>> make_backend(const std::string& device, const Config& cfg);

}  // namespace gt::worker
