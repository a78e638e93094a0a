#include "workerd/device/fused_kernel_cache.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "gt/core/fnv.h"

namespace gt::worker::device {
namespace {

constexpr std::string_view kMagic = "GTKERNEL1\n";
// A cached binary larger than this is not one of ours (a fused kernel's is a few KiB).
constexpr uint64_t kMaxBinaryBytes = 64ull << 20;

}  // namespace

FusedKernelCache::FusedKernelCache(Options opts, std::unique_ptr<KernelCompiler> compiler,
                                   Loader load)
    : opts_(std::move(opts)),
      compiler_(std::move(compiler)),
      compiler_id_(compiler_->id()),
      load_(std::move(load)) {}

FusedKernelCache::~FusedKernelCache() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void* FusedKernelCache::find(const FusedKernelSignature& sig) {
  std::string key = sig.key();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) return it->second.state == State::kReady ? it->second.kernel : nullptr;
    if (entries_.size() >= opts_.max_kernels) {
      if (stats_.refused++ == 0)
        spdlog::warn("fused kernels: {} held, the most this worker keeps; chains of other "
                     "structures run op by op",
                     entries_.size());
      return nullptr;
    }
    entries_.emplace(key, Entry{});
    if (!opts_.synchronous) {
      queue_.push_back(fused_kernel_source(sig));
      if (!thread_.joinable()) thread_ = std::thread([this] { compile_loop(); });
    }
  }
  if (!opts_.synchronous) {
    cv_.notify_one();
    return nullptr;
  }
  const FusedKernelSource src = fused_kernel_source(sig);
  finish(key, build(src));
  std::lock_guard<std::mutex> lock(mu_);
  const Entry& e = entries_.at(key);
  return e.state == State::kReady ? e.kernel : nullptr;
}

void FusedKernelCache::compile_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    FusedKernelSource src = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    Result<void*> kernel = build(src);
    finish(src.key, std::move(kernel));
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

void FusedKernelCache::finish(const std::string& key, Result<void*> kernel) {
  if (kernel.is_ok() && *kernel == nullptr) kernel = internal_error("the loader made no kernel");
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[key];
  if (kernel.is_ok()) {
    e.state = State::kReady;
    e.kernel = *kernel;
    ++stats_.ready;
  } else {
    e.state = State::kFailed;
    ++stats_.failed;
    // Once per key: its chains run eagerly from now on.
    spdlog::warn("fused kernel {} ({}): {}; the chain runs op by op", key, compiler_id_,
                 kernel.status().message());
  }
}

Result<void*> FusedKernelCache::build(const FusedKernelSource& src) {
  std::string path;
  if (!opts_.dir.empty() && disk_ok_)
    path = fmt::format("{}/{}.{:08x}.gtk", opts_.dir, src.name,
                       static_cast<uint32_t>(fnv1a(compiler_id_)));
  Result<std::string> bin = not_found("not cached");
  if (!path.empty()) bin = read_cached(src, path);
  if (bin.is_ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.disk_hits;
  } else {
    const auto t0 = std::chrono::steady_clock::now();
    bin = compiler_->compile(src);
    if (!bin.is_ok()) return bin.status();
    spdlog::info("fused kernel {} compiled by {} in {:.0f} ms: {}", src.name, compiler_id_,
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
                 src.key);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.compiled;
    }
    if (!path.empty()) write_cached(src, path, *bin);
  }
  return load_(*bin, src.name);
}

Result<std::string> FusedKernelCache::read_cached(const FusedKernelSource& src,
                                                  const std::string& path) {
  // A binary is code the device runs: only a file this worker's user wrote, and no one else may
  // change, is loaded (another one is compiled again and replaced).
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return not_found("{} is not cached", path);
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return permission_denied("{} is not this worker's own file", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("{} is not cached", path);
  // magic, key line, compiler id line, binary size line, binary.
  std::string magic(kMagic.size(), '\0');
  std::string key, id, size_line;
  if (!in.read(magic.data(), static_cast<std::streamsize>(magic.size())) || magic != kMagic ||
      !std::getline(in, key) || !std::getline(in, id) || !std::getline(in, size_line))
    return data_loss("{}: not a cached kernel", path);
  if (key != src.key || id != compiler_id_)
    return data_loss("{}: made for another kernel or compiler", path);
  uint64_t bytes = 0;
  try {
    size_t used = 0;
    bytes = std::stoull(size_line, &used);
    if (used != size_line.size()) throw std::invalid_argument("trailing characters");
  } catch (const std::exception&) {
    return data_loss("{}: a bad size", path);
  }
  if (bytes == 0 || bytes > kMaxBinaryBytes) return data_loss("{}: a bad size", path);
  std::string bin(bytes, '\0');
  if (!in.read(bin.data(), static_cast<std::streamsize>(bytes)) || in.peek() != EOF)
    return data_loss("{}: truncated or too long", path);
  return bin;
}

void FusedKernelCache::write_cached(const FusedKernelSource& src, const std::string& path,
                                    const std::string& bin) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // A directory made here is the worker's alone (its files are loaded as code).
  if (fs::create_directories(opts_.dir, ec) && !ec)
    fs::permissions(opts_.dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  const std::string tmp = fmt::format("{}.tmp{}", path, ::getpid());
  bool ok = !ec;
  if (ok) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << kMagic << src.key << '\n' << compiler_id_ << '\n' << bin.size() << '\n';
    out.write(bin.data(), static_cast<std::streamsize>(bin.size()));
    out.close();
    ok = static_cast<bool>(out);
  }
  if (ok) {
    fs::rename(tmp, path, ec);
    ok = !ec;
  }
  if (!ok) {
    fs::remove(tmp, ec);
    disk_ok_ = false;  // once: the kernels stay in memory
    spdlog::warn("kernel_cache_dir {}: cannot write compiled kernels there; they are kept in "
                 "memory only",
                 opts_.dir);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.disk_writes;
  }
  // The directory is bounded: checked at this cache's first write, then every kPruneEvery.
  if (writes_since_prune_++ % kPruneEvery == 0) prune_disk();
}

void FusedKernelCache::prune_disk() {
  namespace fs = std::filesystem;
  std::error_code ec;
  // Only this cache's own kind of file, owned by this user: others' files are left alone.
  std::vector<std::pair<fs::file_time_type, fs::path>> files;
  for (fs::directory_iterator it(opts_.dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& f = it->path();
    struct stat st {};
    if (f.extension() != ".gtk" || ::stat(f.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != ::geteuid())
      continue;
    files.emplace_back(fs::last_write_time(f, ec), f);
  }
  if (files.size() <= opts_.max_disk_files) return;
  std::sort(files.begin(), files.end());  // oldest first
  const size_t remove = files.size() - opts_.max_disk_files;
  for (size_t i = 0; i < remove; ++i) fs::remove(files[i].second, ec);
  spdlog::info("kernel_cache_dir {}: removed the {} oldest of {} compiled kernels (keeps {})",
               opts_.dir, remove, files.size(), opts_.max_disk_files);
}

FusedKernelCacheStats FusedKernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void FusedKernelCache::wait_idle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return stop_ || (queue_.empty() && !busy_); });
}

}  // namespace gt::worker::device
