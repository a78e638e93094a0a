// The worker's validation of instruction batches: frames of gt.v1.WorkerBatch executed in order
// by one Executor on a CpuBackend (so later batches can use earlier handles). The memory limit
// is small, so absurd sizes fail cleanly and legitimate work stays fast. When the executor is
// gone every byte must be back with the allocator.
#include <string>

#include "libgtcore/frame_codec.h"
#include "proto/gt.pb.h"
#include "tests/fuzz/harness.h"
#include "workerd/cpu/cpu_backend.h"
#include "workerd/executor.h"

namespace gt::fuzz {

void run_worker_batch(const uint8_t* data, size_t size) {
  worker::CpuBackend backend(worker::CpuBackendOptions{kWorkerMemoryBytes, 1, uint64_t{1} << 20});
  {
    std::string out;
    worker::Executor ex(
        backend,
        [&out](v1::WorkerMessage&& m) {  // what gt-workerd would write to the dispatcher
          out.clear();
          Status st = append_frame(&out, m, 0xffffffffull);
          GT_FUZZ_CHECK(st.is_ok(), "a reply could not be framed: %s", st.message().c_str());
        },
        64 * 1024);
    FrameDecoder dec(kFuzzMaxFrameBytes);
    dec.append(std::string_view(reinterpret_cast<const char*>(data), size));
    while (true) {
      auto f = dec.next();
      if (!f.is_ok() || !f->has_value()) break;
      v1::WorkerBatch batch;
      if (!parse_frame(**f, &batch).is_ok()) continue;
      ex.execute(batch);
    }
  }
  worker::BackendStats st = backend.stats();
  GT_FUZZ_CHECK(st.allocated_bytes == 0, "%llu bytes still allocated after the executor is gone",
                static_cast<unsigned long long>(st.allocated_bytes));
}

}  // namespace gt::fuzz
