// CPU time of processes, for benchmarks that report where a step's time goes (client,
// dispatcher, worker). Read from /proc/<pid>/task/*/schedstat (nanoseconds on the CPU, every
// thread; the tick-based utime/stime of /proc/<pid>/stat is 10 ms coarse, too coarse for a 1 ms
// step). Linux only, which GT is.
#pragma once

#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace gt::bench {

// Nanoseconds all threads of `pid` have run (0 when it is gone).
inline uint64_t process_cpu_ns(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  uint64_t total = 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(dir + "/" + e->d_name + "/schedstat");
    uint64_t on_cpu = 0;
    if (f >> on_cpu) total += on_cpu;
  }
  ::closedir(d);
  return total;
}

inline std::string process_name(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(f, name);
  return name;
}

inline pid_t parent_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  const size_t close = line.rfind(')');  // the name may hold spaces and parentheses
  if (close == std::string::npos || close + 4 >= line.size()) return 0;
  return static_cast<pid_t>(std::atol(line.c_str() + close + 4));  // ") S <ppid>"
}

// Processes descended from `root` (children, grandchildren, ...).
inline std::vector<pid_t> descendants(pid_t root) {
  std::vector<pid_t> all, out;
  if (DIR* d = ::opendir("/proc")) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] >= '1' && e->d_name[0] <= '9') all.push_back(std::atoi(e->d_name));
    ::closedir(d);
  }
  for (pid_t p : all) {
    for (pid_t a = parent_of(p), hops = 0; a > 1 && hops < 64; a = parent_of(a), ++hops) {
      if (a == root) {
        out.push_back(p);
        break;
      }
    }
  }
  return out;
}

}  // namespace gt::bench
