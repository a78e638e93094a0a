#include "workerd/cuda/nvrtc_compiler.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <nvrtc.h>

#include <mutex>
#include <string>
#include <vector>

namespace gt::worker::cuda {
namespace {

// The NVRTC entry points used, resolved once from the library.
struct Nvrtc {
  void* lib = nullptr;
  std::string error;  // why it could not be loaded
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcGetErrorString) error_string = nullptr;
  decltype(&::nvrtcGetNumSupportedArchs) num_archs = nullptr;
  decltype(&::nvrtcGetSupportedArchs) archs = nullptr;
  decltype(&::nvrtcCreateProgram) create = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy = nullptr;
  decltype(&::nvrtcCompileProgram) compile = nullptr;
  decltype(&::nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) log = nullptr;
  decltype(&::nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) cubin = nullptr;
  decltype(&::nvrtcGetPTXSize) ptx_size = nullptr;
  decltype(&::nvrtcGetPTX) ptx = nullptr;
};

const Nvrtc& nvrtc() {
  static Nvrtc n;
  static std::once_flag once;
  std::call_once(once, [] {
    for (const char* name : {"libnvrtc.so.13", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.13"}) {
      n.lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (n.lib) break;
    }
    if (!n.lib) {
      const char* e = ::dlerror();
      n.error = e ? e : "libnvrtc.so.13 not found";
      return;
    }
    bool all = true;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(n.lib, name));
      if (!fn) all = false;
    };
    sym(n.version, "nvrtcVersion");
    sym(n.error_string, "nvrtcGetErrorString");
    sym(n.num_archs, "nvrtcGetNumSupportedArchs");
    sym(n.archs, "nvrtcGetSupportedArchs");
    sym(n.create, "nvrtcCreateProgram");
    sym(n.destroy, "nvrtcDestroyProgram");
    sym(n.compile, "nvrtcCompileProgram");
    sym(n.log_size, "nvrtcGetProgramLogSize");
    sym(n.log, "nvrtcGetProgramLog");
    sym(n.cubin_size, "nvrtcGetCUBINSize");
    sym(n.cubin, "nvrtcGetCUBIN");
    sym(n.ptx_size, "nvrtcGetPTXSize");
    sym(n.ptx, "nvrtcGetPTX");
    if (!all) {
      n.error = "libnvrtc lacks an entry point this worker uses";
      n.lib = nullptr;
    }
  });
  return n;
}

class NvrtcCompiler final : public device::KernelCompiler {
 public:
  NvrtcCompiler(const Nvrtc& n, std::string version, int target, bool cubin)
      : n_(n), version_(std::move(version)), target_(target), cubin_(cubin) {}

  std::string id() const override {
    return fmt::format("nvrtc {} {}_{}", version_, cubin_ ? "sm" : "compute", target_);
  }

  Result<std::string> compile(const device::FusedKernelSource& src) override {
    std::vector<const char*> names, texts;
    for (const device::RtcHeader& h : device::rtc_headers()) {
      names.push_back(h.name);
      texts.push_back(h.text);
    }
    nvrtcProgram prog = nullptr;
    nvrtcResult r = n_.create(&prog, src.source.c_str(), "gt_fused_kernel.cu",
                              static_cast<int>(names.size()), texts.data(), names.data());
    if (r != NVRTC_SUCCESS) return internal_error("nvrtcCreateProgram: {}", n_.error_string(r));
    struct Destroy {
      const Nvrtc& n;
      nvrtcProgram* p;
      ~Destroy() { n.destroy(p); }
    } destroy{n_, &prog};
    const std::string arch =
        fmt::format("--gpu-architecture={}_{}", cubin_ ? "sm" : "compute", target_);
    // nvcc's defaults for the eager kernels (FMA contraction inside an op's formula, IEEE
    // division and square root), so each step's math is the eager kernel's.
    // -default-device: rtc_std.h's helpers are plain constexpr functions.
    const char* opts[] = {arch.c_str(), "-std=c++17", "-default-device", "-DNDEBUG"};
    r = n_.compile(prog, 4, opts);
    if (r != NVRTC_SUCCESS) {
      size_t log_bytes = 0;
      std::string log;
      if (n_.log_size(prog, &log_bytes) == NVRTC_SUCCESS && log_bytes > 1) {
        log.resize(log_bytes);
        n_.log(prog, log.data());
        log.resize(log_bytes - 1);
      }
      return internal_error("NVRTC cannot compile {}: {}: {}", src.name, n_.error_string(r), log);
    }
    size_t bytes = 0;
    std::string bin;
    if (cubin_) {
      if ((r = n_.cubin_size(prog, &bytes)) == NVRTC_SUCCESS) {
        bin.resize(bytes);
        r = n_.cubin(prog, bin.data());
      }
    } else if ((r = n_.ptx_size(prog, &bytes)) == NVRTC_SUCCESS) {
      bin.resize(bytes);  // (PTX text with its terminating NUL, as the loader wants it)
      r = n_.ptx(prog, bin.data());
    }
    if (r != NVRTC_SUCCESS) return internal_error("NVRTC output of {}: {}", src.name, n_.error_string(r));
    return bin;
  }

 private:
  const Nvrtc& n_;
  const std::string version_;
  const int target_;
  const bool cubin_;
};

}  // namespace

Result<std::unique_ptr<device::KernelCompiler>> make_nvrtc_compiler(int arch) {
  const Nvrtc& n = nvrtc();
  if (!n.lib) return unavailable("NVRTC: {}", n.error);
  int major = 0, minor = 0;
  if (n.version(&major, &minor) != NVRTC_SUCCESS) return unavailable("NVRTC: no version");
  int count = 0;
  if (n.num_archs(&count) != NVRTC_SUCCESS || count <= 0) return unavailable("NVRTC: no targets");
  std::vector<int> archs(static_cast<size_t>(count));
  if (n.archs(archs.data()) != NVRTC_SUCCESS) return unavailable("NVRTC: no targets");
  int below = 0;
  for (int a : archs) {
    if (a == arch)
      return std::unique_ptr<device::KernelCompiler>(
          new NvrtcCompiler(n, fmt::format("{}.{}", major, minor), arch, true));
    if (a < arch && a > below) below = a;
  }
  if (below == 0) return unavailable("NVRTC {}.{} targets no architecture up to sm_{}", major, minor, arch);
  return std::unique_ptr<device::KernelCompiler>(
      new NvrtcCompiler(n, fmt::format("{}.{}", major, minor), below, false));
}

}  // namespace gt::worker::cuda
