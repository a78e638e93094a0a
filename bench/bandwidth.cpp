// gt-bench-bandwidth (issue 15): upload and fetch bandwidth through GT, 1 MiB .. 256 MiB (up to
// 1 GiB with --max-mib 1024), against single-thread memcpy of the same bytes in the same run.
//
//   upload: gt::from_bytes(bytes) then gt::synchronize()  (client -> dispatcher -> worker)
//   fetch:  t.to_bytes()                                   (worker -> dispatcher -> client)
//           into a fresh string each time, as a program gets it (its pages fault in)
//   into:   the same fetch into a buffer already touched (gt::detail::fetch_into, what to_vector
//           uses underneath): the transport alone, as memcpy is measured
//   place:  the values in memory the result owns (gt::detail::fetch_shared, what numpy arrays
//           are made from): from a local dispatcher, the shared-memory region the worker wrote
//           them into (one copy in all); else a fresh buffer fetched into
//   memcpy: std::memcpy into a buffer already touched, same size
//   dispatcher CPU: the embedded dispatcher's CPU time (every thread, schedstat) per MiB
//           uploaded, over the upload's timed span: what relaying an upload costs it
//
// The embedded default (a Unix socket) fetches large tensors through shared memory; GT_SHM=0
// makes it use the sockets (two hops), as a client over TCP does. Run both for the comparison.
//
//   tcp:    the same bytes streamed once over a raw loopback TCP connection (a thread writes,
//           this one reads into a touched buffer): one hop, the ceiling of a socket fetch's two
//
// Each size runs once untimed, then `reps` times per side in alternating order (load changes
// hit every side alike); medians are reported as GB/s and as a fraction of memcpy's. Uses GT_ADDRESS when set, else the
// embedded default. `--json` prints one JSON object of named figures.
#include <gt/gt.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "proc_cpu.h"

using gt::bench::median;
using gt::bench::now_s;

namespace {

struct Row {
  int64_t mib;
  double upload_s, fetch_s, into_s, place_s, tcp_s, memcpy_s;
  double upload_dispatcher_us_per_mib;  // -1: not measured (GT_ADDRESS)
};

// Seconds to stream src over a raw loopback TCP connection into dst (one hop), or 0 on error.
double loopback_s(const std::string& src, std::string& dst) {
  const int l = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(l, 1) != 0 ||
      ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(l);
    return 0;
  }
  const int c = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(c);
    ::close(l);
    return 0;
  }
  const int w = ::accept(l, nullptr, nullptr);
  const double t0 = now_s();
  std::thread writer([&] {
    for (size_t off = 0; off < src.size();) {
      const ssize_t n = ::write(w, src.data() + off, src.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
  });
  size_t got = 0;
  while (got < dst.size()) {
    const ssize_t n = ::read(c, dst.data() + got, dst.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  const double s = now_s() - t0;
  writer.join();
  ::close(w);
  ::close(c);
  ::close(l);
  return got == dst.size() ? s : 0;
}

double gbps(int64_t bytes, double s) { return s > 0 ? static_cast<double>(bytes) / s / 1e9 : 0; }

}  // namespace

int main(int argc, char** argv) {
  int64_t max_mib = 256;
  int reps = 5;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--max-mib" && i + 1 < argc) {
      max_mib = std::atoll(argv[++i]);
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--json") {
      json = true;
    } else {
      std::fprintf(stderr, "usage: gt-bench-bandwidth [--max-mib N] [--reps R] [--json]\n");
      return 2;
    }
  }
  if (max_mib < 1 || reps < 1) {
    std::fprintf(stderr, "gt-bench-bandwidth: --max-mib and --reps must be positive\n");
    return 2;
  }
  gt::synchronize();  // the session (and an embedded default) is up before timing
  pid_t dispatcher_pid = 0;  // the embedded default's (none with GT_ADDRESS)
  if (!std::getenv("GT_ADDRESS"))
    for (pid_t p : gt::bench::descendants(::getpid()))
      if (gt::bench::process_name(p) == "gt-dispatcherd") dispatcher_pid = p;
  std::vector<Row> rows;
  for (int64_t mib = 1; mib <= max_mib; mib *= 4) {
    const int64_t bytes = mib << 20;
    std::string src(static_cast<size_t>(bytes), '\0');
    for (size_t i = 0; i < src.size(); i += 4096) src[i] = static_cast<char>(i / 4096);
    std::string dst(src.size(), '\1');  // touched: memcpy measures copying, not page faults
    const gt::Tensor resident = gt::from_bytes({bytes / 4}, gt::kFloat32, src);
    std::vector<double> up, fetch, into, place, tcp, copy, up_cpu;
    std::string got, reused(src.size(), '\2');  // touched, like memcpy's destination
    bool into_ok = true;
    // One untimed round first: a size's first transfers set things up once (the shared-memory
    // arena grows to hold it, the worker's allocator caches a block of it).
    for (int r = -1; r < reps; ++r) {
      const uint64_t cpu0 = dispatcher_pid ? gt::bench::process_cpu_ns(dispatcher_pid) : 0;
      double t0 = now_s();
      gt::Tensor t = gt::from_bytes({bytes / 4}, gt::kFloat32, src);
      gt::synchronize();
      up.push_back(now_s() - t0);
      if (dispatcher_pid)  // microseconds per MiB
        up_cpu.push_back(static_cast<double>(gt::bench::process_cpu_ns(dispatcher_pid) - cpu0) /
                         1e3 / static_cast<double>(mib));
      t0 = now_s();
      got = resident.to_bytes();
      fetch.push_back(now_s() - t0);
      t0 = now_s();
      gt::detail::fetch_into(resident, reused.data(), reused.size());
      into.push_back(now_s() - t0);
      into_ok = into_ok && reused == src;
      t0 = now_s();
      std::shared_ptr<const char> held = gt::detail::fetch_shared(resident);
      place.push_back(now_s() - t0);
      into_ok = into_ok && std::memcmp(held.get(), src.data(), src.size()) == 0;
      held.reset();
      tcp.push_back(loopback_s(src, reused));
      t0 = now_s();
      std::memcpy(dst.data(), src.data(), src.size());
      copy.push_back(now_s() - t0);
    }
    if (got != src || dst != src || !into_ok) {
      std::fprintf(stderr, "gt-bench-bandwidth: WRONG RESULT at %lld MiB\n",
                   static_cast<long long>(mib));
      return 1;
    }
    for (auto* v : {&up, &fetch, &into, &place, &tcp, &copy}) v->erase(v->begin());  // untimed round
    if (!up_cpu.empty()) up_cpu.erase(up_cpu.begin());
    rows.push_back({mib, median(up), median(fetch), median(into), median(place), median(tcp),
                    median(copy), up_cpu.empty() ? -1.0 : median(up_cpu)});
  }
  if (json) {
    std::printf("{");
    const char* sep = "";
    for (const Row& r : rows) {
      const int64_t b = r.mib << 20;
      const auto m = static_cast<long long>(r.mib);
      std::printf("%s\"upload_%lldmib_gbps\": %.3f, \"fetch_%lldmib_gbps\": %.3f, "
                  "\"fetch_into_%lldmib_gbps\": %.3f, \"memcpy_%lldmib_gbps\": %.3f, "
                  "\"fetch_%lldmib_of_memcpy\": %.3f, \"fetch_into_%lldmib_of_memcpy\": %.3f, "
                  "\"fetch_in_place_%lldmib_gbps\": %.3f, \"fetch_in_place_%lldmib_of_memcpy\": %.3f, "
                  "\"tcp_loopback_%lldmib_gbps\": %.3f, \"upload_%lldmib_dispatcher_us_per_mib\": %.1f",
                  sep, m, gbps(b, r.upload_s), m, gbps(b, r.fetch_s), m, gbps(b, r.into_s), m,
                  gbps(b, r.memcpy_s), m, r.memcpy_s / r.fetch_s, m, r.memcpy_s / r.into_s, m,
                  gbps(b, r.place_s), m, r.memcpy_s / r.place_s, m, gbps(b, r.tcp_s), m,
                  r.upload_dispatcher_us_per_mib);
      sep = ", ";
    }
    std::printf("}\n");
    return 0;
  }
  std::printf("gt-bench-bandwidth: medians of %d runs, GB/s (fraction of single-thread memcpy)\n",
              reps);
  const char* shm = std::getenv("GT_SHM");
  std::printf("  transport: %s\n", std::getenv("GT_ADDRESS") ? "GT_ADDRESS (shared memory if a Unix socket)"
                                    : shm && std::string(shm) == "0" ? "embedded default, sockets (GT_SHM=0)"
                                    : "embedded default, shared memory");
  std::printf("  %8s  %16s  %16s  %16s  %16s  %16s  %10s  %14s\n", "size", "upload", "fetch",
              "fetch into", "fetch in place", "tcp loopback", "memcpy", "disp. us/MiB up");
  for (const Row& r : rows) {
    const int64_t b = r.mib << 20;
    std::printf("  %5lld MiB  %7.2f (%5.1f%%)  %7.2f (%5.1f%%)  %7.2f (%5.1f%%)  %7.2f (%5.1f%%)  "
                "%7.2f (%5.1f%%)  %10.2f  %14.1f\n",
                static_cast<long long>(r.mib), gbps(b, r.upload_s),
                100.0 * r.memcpy_s / r.upload_s, gbps(b, r.fetch_s),
                100.0 * r.memcpy_s / r.fetch_s, gbps(b, r.into_s), 100.0 * r.memcpy_s / r.into_s,
                gbps(b, r.place_s), 100.0 * r.memcpy_s / r.place_s, gbps(b, r.tcp_s),
                100.0 * r.memcpy_s / r.tcp_s, gbps(b, r.memcpy_s), r.upload_dispatcher_us_per_mib);
  }
  std::printf("  (issue 15 targets: a 256 MiB fetch >= 50%% of memcpy over TCP loopback, >= 80%% "
              "over shared memory; tcp loopback: one raw hop, a socket fetch takes two)\n");
  return 0;
}
