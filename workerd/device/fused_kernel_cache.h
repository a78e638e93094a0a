// The compiled fused-chain kernels of a device (fused_kernel_source.h), by signature key: in
// memory for the worker's life and, with a directory (worker option kernel_cache_dir), on disk
// across restarts and workers.
//
// Compiling takes tens of milliseconds and loading touches the device, so neither runs on the
// executor's thread: the first find() of a key queues it for the cache's compile thread and
// answers "not yet" -- the chain then runs eagerly, as it would without fusion -- and a later
// find() answers with the kernel. A key whose compile or load failed answers "no" for good (the
// failure is logged once, with the compiler's log). Options::synchronous compiles in find()
// instead (tools and tests that want the first run fused).
//
// On disk a binary is one file, <dir>/<kernel name>.<compiler id hash>.gtk, written whole to a
// temporary name and renamed, so readers see all of it or nothing. It holds its key and compiler
// id, checked on reading: a file that is damaged, names another key (a hash collision) or comes
// from another compiler or GPU architecture is compiled again and replaced. A directory that
// cannot be created or written costs the disk half only (logged once); the directory keeps at
// most Options::max_disk_files of this user's kernels (the oldest go). The files are code the
// device runs: only regular files owned by the worker's user and writable by no one else are
// read (a directory the cache creates is the user's alone).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "libgtcore/status.h"
#include "workerd/device/fused_kernel_source.h"

namespace gt::worker::device {

// Makes a device binary from a program (NVRTC on CUDA).
class KernelCompiler {
 public:
  virtual ~KernelCompiler() = default;
  // Names the compiler, its version and target ("nvrtc 13.0 sm_90"): binaries of another id are
  // not reused.
  virtual std::string id() const = 0;
  virtual Result<std::string> compile(const FusedKernelSource& src) = 0;
};

struct FusedKernelCacheStats {
  uint64_t compiled = 0;     // binaries the compiler made
  uint64_t disk_hits = 0;    // binaries read from the directory instead
  uint64_t disk_writes = 0;  // binaries written to it
  uint64_t failed = 0;       // keys whose compile or load failed
  uint64_t ready = 0;        // kernels loaded
  uint64_t refused = 0;      // finds of new keys beyond Options::max_kernels
};

class FusedKernelCache {
 public:
  struct Options {
    std::string dir;  // empty: memory only
    bool synchronous = false;
    // Kernels held (compiled, queued or failed) at most: chains of structures beyond these run
    // op by op (logged once). Users choose the structures, so without a bound a session could
    // keep the compile thread busy and fill the device with modules.
    size_t max_kernels = 4096;
    // Files kept in `dir` at most (the oldest by modification time go first): kernels of
    // structures no longer used do not pile up across restarts.
    size_t max_disk_files = 16384;
  };
  // Turns a binary into the device's handle of the kernel `name` in it (CUDA: a loaded library's
  // kernel). Runs on the compile thread (or in find(), synchronous); a null handle is a failure.
  using Loader = std::function<Result<void*>(const std::string& binary, const std::string& name)>;

  FusedKernelCache(Options opts, std::unique_ptr<KernelCompiler> compiler, Loader load);
  ~FusedKernelCache();  // waits for a compile in progress; queued ones are dropped
  FusedKernelCache(const FusedKernelCache&) = delete;
  FusedKernelCache& operator=(const FusedKernelCache&) = delete;

  // The kernel of `sig`, or nullptr: being compiled (queued now on first sight) or failed.
  void* find(const FusedKernelSignature& sig);
  FusedKernelCacheStats stats() const;
  const std::string& compiler_id() const { return compiler_id_; }
  // Waits until nothing is queued or compiling (tests, tools).
  void wait_idle();

 private:
  enum class State : uint8_t { kQueued, kReady, kFailed };
  struct Entry {
    State state = State::kQueued;
    void* kernel = nullptr;
  };
  // Compiles (or reads) and loads one kernel: the handle, or the failure.
  Result<void*> build(const FusedKernelSource& src);
  Result<std::string> read_cached(const FusedKernelSource& src, const std::string& path);
  void write_cached(const FusedKernelSource& src, const std::string& path, const std::string& bin);
  void prune_disk();
  void finish(const std::string& key, Result<void*> kernel);
  void compile_loop();

  const Options opts_;
  std::unique_ptr<KernelCompiler> compiler_;
  const std::string compiler_id_;
  const Loader load_;
  bool disk_ok_ = true;  // (the compile thread's, or find()'s when synchronous)
  static constexpr uint64_t kPruneEvery = 1024;
  uint64_t writes_since_prune_ = 0;  // (likewise)
  mutable std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::unordered_map<std::string, Entry> entries_;
  std::deque<FusedKernelSource> queue_;
  bool busy_ = false, stop_ = false;
  FusedKernelCacheStats stats_;
  std::thread thread_;  // started on the first queued key
};

}  // namespace gt::worker::device
