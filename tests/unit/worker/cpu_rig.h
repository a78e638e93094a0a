// An executor on an in-process CPU backend, fed batches as the dispatcher numbers them, with
// fetches read back from its replies (the executor tests' common rig).
#pragma once

#include <string>
#include <utility>

#include "executor_test_util.h"
#include "workerd/cpu/cpu_backend.h"
#include "workerd/executor.h"

namespace gt::test {

struct CpuRig {
  static constexpr uint64_t kSession = 7;

  worker::CpuBackend backend{worker::CpuBackendOptions{0, 1, 0}};
  Outbox out;
  worker::Executor ex{backend, [this](v1::WorkerMessage&& m) { out.push(std::move(m)); }, 64 << 20};
  uint64_t next_request = 1;
  uint64_t next_seq = 0;

  v1::WorkerBatch batch() {
    v1::WorkerBatch b;
    b.set_session(kSession);
    return b;
  }
  // Numbered as the dispatcher numbers batches (a HotRun counts as what it stands for).
  void run(v1::WorkerBatch b) {
    b.set_first_seq(next_seq);
    next_seq += static_cast<uint64_t>(b.instrs_size() + b.frees_size()) + b.hot_extra();
    ex.execute(b);
  }
  // The bytes of `handle`, or the op its poison names ("" when it has a value).
  std::pair<std::string, std::string> fetch(uint64_t handle) {
    v1::WorkerBatch b = batch();
    const uint64_t id = next_request++;
    add_request(b, id, v1::Request::FETCH, handle);
    run(std::move(b));
    return out.fetched(id);
  }
  v1::WorkerLoad load() {
    v1::WorkerLoad l;
    ex.fill_load(&l);
    return l;
  }
};

}  // namespace gt::test
