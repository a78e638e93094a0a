// What a worker with seconds of queued device work must still do (issue 10), shared by the
// sim-device test (test_sim_worker) and the GPU one (tests/gpu/test_cuda_daemons): serve another
// session at once, and stay registered (heartbeats answered, no device wait on its I/O thread).
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "daemons.h"
#include "instr_builder.h"
#include "libgtcore/op_attrs.h"
#include "raw_client.h"

namespace gt::testing {

using BacklogClock = std::chrono::steady_clock;

inline int64_t ms_since(BacklogClock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(BacklogClock::now() - t0).count();
}

// Another session's op + fetch, on its own stream, done in well under a second; its time (ms).
inline int64_t check_other_session_meanwhile(const Daemons& d) {
  RawClient light(d.address());
  REQUIRE(light.hello().kind_case() == v1::ServerMessage::kWelcome);
  light.send(batch_of({from_floats(1, {1, 2, 3}, Shape{3}),
                       make_instr(OpId::k_mul, 2, {1},
                                  make_binary_scalar(ScalarSide::kRight, 2.0, false))}));
  const auto t1 = BacklogClock::now();
  v1::Reply lr = light.request(v1::Request::FETCH, 2);
  const int64_t took = ms_since(t1);
  CHECK(took < 1000);
  REQUIRE(lr.errors_size() == 0);
  CHECK(floats_of(lr) == std::vector<float>{2, 4, 6});
  return took;
}

// The worker is still registered and was never declared dead.
inline void check_still_registered(const Daemons& d) {
  RawClient probe(d.address());
  REQUIRE(probe.hello().kind_case() == v1::ServerMessage::kWelcome);
  CHECK(probe.worker_stats().size() == 1);
  std::ifstream log(d.dir() + "/dispatcher.log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK(text.find("its tensors are lost") == std::string::npos);
}

}  // namespace gt::testing
