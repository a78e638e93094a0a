// Host memory as a worker may use it (ARCHITECTURE §6: out of memory is an error on that instruction,
// never a crash of the worker). With the kernel's overcommit, a huge allocation "succeeds" and
// the OOM killer takes the process when its pages are touched; these functions let the worker
// refuse such a request up front instead:
//
//  - host_memory_total(): physical RAM, or less when the worker's memory cgroup (v1 or v2, any
//    ancestor) has a lower limit;
//  - host_memory_available(): what can be had right now: MemAvailable (/proc/meminfo), or less
//    when the cgroup's limit minus its (non-reclaimable) usage is lower;
//  - host_memory_headroom(total): what a worker leaves to everything else, max(1 GiB, 10%);
//  - the `max_memory_bytes` option: "auto" (the default: a CPU worker takes total - headroom,
//    a CUDA worker the device's memory) or an explicit byte count.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "libgtcore/status.h"

namespace gt::worker {

// The parsed `max_memory_bytes` option: nullopt = "auto" (also what 0 means, the old spelling
// of "no limit beyond the device's own memory"); otherwise a limit in bytes (1 .. 2^50).
Result<std::optional<uint64_t>> parse_max_memory_bytes(const std::string& text);

uint64_t host_memory_total();
std::optional<uint64_t> host_memory_available();  // nullopt: cannot be told
uint64_t host_memory_headroom(uint64_t total);
// The automatic limit of a CPU worker: total - headroom (half the total on a tiny machine).
uint64_t auto_cpu_memory_limit();

// The CPU allocator's guard against the OOM killer ("touch test"): a request of at least
// `large` bytes is refused unless `available()` leaves `headroom` bytes after it, and its pages
// are committed (written) at once, so the memory is really there when the instruction runs.
struct HostMemoryGuard {
  uint64_t large = uint64_t{64} << 20;
  uint64_t headroom = 0;
  std::function<std::optional<uint64_t>()> available;  // empty: no guard at all
  // The real host: host_memory_available() and host_memory_headroom(host_memory_total()).
  static HostMemoryGuard system();
};

// Commits the pages of [p, p + n): every page is faulted in for writing now. False when the
// kernel refused (MADV_POPULATE_WRITE reports ENOMEM instead of the fault killing us later).
bool commit_pages(void* p, uint64_t n);

}  // namespace gt::worker
