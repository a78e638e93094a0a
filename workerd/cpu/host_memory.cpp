#include "workerd/cpu/host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>
#include <vector>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

namespace gt::worker {

namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
// cgroup v1 reports "no limit" as a huge page-rounded number.
constexpr uint64_t kNoLimit = uint64_t{1} << 62;

std::optional<uint64_t> parse_u64(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<std::string> slurp(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::optional<uint64_t> read_u64(const std::string& path) {
  auto s = slurp(path);
  if (!s) return std::nullopt;
  return parse_u64(*s);
}

// `key value` lines (memory.stat); value of `key` or nullopt.
std::optional<uint64_t> stat_value(const std::string& path, std::string_view key) {
  std::ifstream f(path);
  std::string k;
  uint64_t v = 0;
  while (f >> k >> v)
    if (k == key) return v;
  return std::nullopt;
}

// One memory cgroup level: its limit and what it counts as in use (less reclaimable cache).
struct CgroupLevel {
  uint64_t limit = 0;
  uint64_t used = 0;
};

// The memory cgroup directories of this process, innermost first, up to the mount point.
struct CgroupDirs {
  bool v2 = false;
  std::vector<std::string> dirs;
};

CgroupDirs find_cgroup_dirs() {
  CgroupDirs out;
  auto self = slurp("/proc/self/cgroup");
  auto mounts = slurp("/proc/self/mountinfo");
  if (!self || !mounts) return out;
  // "4:memory:/a/b" (v1, the memory controller) or "0::/a/b" (v2).
  std::string v1_path, v2_path;
  bool have_v1 = false, have_v2 = false;
  std::istringstream lines(*self);
  for (std::string line; std::getline(lines, line);) {
    size_t c1 = line.find(':'), c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    std::string ctrls = line.substr(c1 + 1, c2 - c1 - 1), path = line.substr(c2 + 1);
    if (ctrls.empty() && line.compare(0, c1, "0") == 0) {
      v2_path = path;
      have_v2 = true;
    }
    std::istringstream cs(ctrls);
    for (std::string c; std::getline(cs, c, ',');)
      if (c == "memory") {
        v1_path = path;
        have_v1 = true;
      }
  }
  // mountinfo: id parent dev root mountpoint opts [optional...] - fstype source superopts
  std::string mount_root, mount_point;
  bool found = false;
  std::istringstream ml(*mounts);
  for (std::string line; std::getline(ml, line) && !found;) {
    std::istringstream ls(line);
    std::vector<std::string> f;
    for (std::string w; ls >> w;) f.push_back(w);
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || f.end() - dash < 4) continue;
    const std::string& fstype = *(dash + 1);
    const std::string& super = *(dash + 3);
    if (have_v1 && fstype == "cgroup" && ("," + super + ",").find(",memory,") != std::string::npos) {
      out.v2 = false;
      found = true;
    } else if (!have_v1 && have_v2 && fstype == "cgroup2") {
      out.v2 = true;
      found = true;
    }
    if (found) {
      mount_root = f[3];
      mount_point = f[4];
    }
  }
  if (!found) return out;
  std::string path = out.v2 ? v2_path : v1_path;
  // Below the mount's root (a container sees its own cgroup as "/"): the part under it.
  if (mount_root != "/" && path.compare(0, mount_root.size(), mount_root) == 0)
    path = path.substr(mount_root.size());
  else if (mount_root != "/")
    path = "/";
  if (path.find("..") != std::string::npos) path = "/";
  while (true) {
    out.dirs.push_back(mount_point + (path == "/" ? "" : path));
    if (path == "/" || path.empty()) break;
    size_t slash = path.rfind('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
  return out;
}

std::vector<CgroupLevel> cgroup_levels() {
  std::vector<CgroupLevel> levels;
  CgroupDirs cg = find_cgroup_dirs();
  for (const std::string& d : cg.dirs) {
    CgroupLevel l;
    std::optional<uint64_t> limit, used, cache;
    if (cg.v2) {
      auto max = slurp(d + "/memory.max");
      if (!max) continue;
      limit = parse_u64(*max);  // "max": none
      used = read_u64(d + "/memory.current");
      cache = stat_value(d + "/memory.stat", "inactive_file");
    } else {
      limit = read_u64(d + "/memory.limit_in_bytes");
      used = read_u64(d + "/memory.usage_in_bytes");
      cache = stat_value(d + "/memory.stat", "total_inactive_file");
    }
    if (!limit || *limit >= kNoLimit) continue;
    l.limit = *limit;
    uint64_t u = used.value_or(0), c = cache.value_or(0);
    l.used = u > c ? u - c : 0;
    levels.push_back(l);
  }
  return levels;
}

uint64_t physical_memory() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

}  // namespace

Result<std::optional<uint64_t>> parse_max_memory_bytes(const std::string& text) {
  if (text == "auto") return std::optional<uint64_t>();
  auto v = parse_u64(text);
  if (!v || *v > (uint64_t{1} << 50))
    return invalid_argument(
        "max_memory_bytes: expected 'auto' or a byte count up to 2^50, got '{}'", text);
  if (*v == 0) return std::optional<uint64_t>();  // the old spelling of the default
  return std::optional<uint64_t>(*v);
}

uint64_t host_memory_total() {
  uint64_t total = physical_memory();
  for (const CgroupLevel& l : cgroup_levels())
    if (total == 0 || l.limit < total) total = l.limit;
  return total;
}

std::optional<uint64_t> host_memory_available() {
  std::optional<uint64_t> avail;
  std::ifstream f("/proc/meminfo");
  std::string key, unit;
  uint64_t kb = 0;
  while (f >> key >> kb) {
    std::getline(f, unit);
    if (key == "MemAvailable:") {
      avail = kb * 1024;
      break;
    }
  }
  for (const CgroupLevel& l : cgroup_levels()) {
    uint64_t room = l.limit > l.used ? l.limit - l.used : 0;
    if (!avail || room < *avail) avail = room;
  }
  return avail;
}

uint64_t host_memory_headroom(uint64_t total) { return std::max(kGiB, total / 10); }

uint64_t auto_cpu_memory_limit() {
  uint64_t total = host_memory_total();
  if (total == 0) return 0;  // unknown: only the touch test guards
  uint64_t headroom = host_memory_headroom(total);
  return total > 2 * headroom ? total - headroom : total / 2;
}

HostMemoryGuard HostMemoryGuard::system() {
  HostMemoryGuard g;
  uint64_t total = host_memory_total();
  g.headroom = total == 0 ? kGiB : std::min(host_memory_headroom(total), total / 2);
  g.available = [] { return host_memory_available(); };
  return g;
}

bool commit_pages(void* p, uint64_t n) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096);
  auto begin = reinterpret_cast<uintptr_t>(p);
  uintptr_t first = (begin + page - 1) / page * page, end = (begin + n) / page * page;
  if (end > first) {
    if (::madvise(reinterpret_cast<void*>(first), end - first, MADV_POPULATE_WRITE) == 0)
      return true;
    if (errno != EINVAL) return false;  // ENOMEM, EFAULT, EHWPOISON: the memory is not there
  }
  // A kernel without MADV_POPULATE_WRITE: write one byte of every page (the block is new
  // memory, its contents are undefined until a kernel writes them anyway).
  volatile unsigned char* b = static_cast<unsigned char*>(p);
  for (uint64_t off = 0; off < n; off += page) b[off] = 0;
  if (n > 0) b[n - 1] = 0;
  return true;
}

}  // namespace gt::worker
