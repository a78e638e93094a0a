// Session-level functions: connect, the embedded default's worker count, synchronize, seed and
// the worker statistics behind gt.debug.get_worker_stats (sync points release the GIL).
#include "common.h"

namespace gtpy {

void init_session(py::module_& m) {
  m.def("connect", &gt::connect, "address"_a,
        "Connects to a running dispatcher ('host:port' or 'unix:/path'); call before the first op. "
        "Without it, GT_ADDRESS is used, else a private dispatcher and workers are spawned.");
  m.def(
      "gpu_workers",
      [](int n) {
        if (n < 1) throw py::value_error("gpu_workers: n must be >= 1, got " + std::to_string(n));
        gt::set_embedded_workers(n);
      },
      "n"_a,
      "Sets the number of workers of the embedded default (one per GPU, or CPU workers where "
      "there is none); call before the first op.");
  m.def("set_sync_timeout", &gt::set_sync_timeout, "seconds"_a,
        "Deadline of every sync point in seconds: one with no answer from the dispatcher for this "
        "long raises gt.WorkerError and the session is lost. 0: none; negative: back to "
        "GT_SYNC_TIMEOUT_S, else 900 s.");
  m.def(
      "synchronize", [] { sync_point([] { gt::synchronize(); }); },
      "Waits until every op queued so far has run; raises gt.WorkerError for the first failure.");
  m.def("manual_seed", [](uint64_t seed) { gt::manual_seed(seed); }, "seed"_a,
        "Seeds the counter-based RNG of randn / rand (same numbers on any worker layout).");
  m.def(
      "set_float32_matmul_precision",
      [](const std::string& p) {
        try {
          gt::set_float32_matmul_precision(p);
        } catch (const gt::Error& e) {
          throw py::value_error(e.what());
        }
      },
      "precision"_a,
      "How float32 matmuls may compute, as torch.set_float32_matmul_precision: 'highest' "
      "(exact float32, the default), 'high' (TF32 tensor cores allowed), 'medium' (bfloat16 "
      "allowed). GPU workers only; anything else raises ValueError (torch only warns).");
  m.def("get_float32_matmul_precision", &gt::get_float32_matmul_precision,
        "The float32 matmul precision set_float32_matmul_precision chose ('highest' by default).");
  m.def("_session_alive", &gt::session_active);
  m.def("_session_id", &gt::session_id);
  m.def("_worker_stats", [] {
    std::vector<gt::WorkerStats> stats = sync_point([] { return gt::worker_stats(); });
    py::list out;
    for (const auto& s : stats) {
      py::dict d;
      d["worker_id"] = s.worker_id;
      d["device"] = s.device;
      d["tensors"] = s.tensors;
      d["bytes"] = s.bytes;
      d["ops_executed"] = s.ops_executed;
      d["errors"] = s.errors;
      d["peak_bytes"] = s.peak_bytes;
      d["reserved_bytes"] = s.reserved_bytes;
      d["sessions"] = s.sessions;
      out.append(std::move(d));
    }
    return out;
  });
  m.def("_status_json", [] { return sync_point([] { return gt::status().json; }); });
}

}  // namespace gtpy
