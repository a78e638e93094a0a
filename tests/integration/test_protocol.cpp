// Protocol-level tests against real daemons: the handshake, hostile and malformed frames,
// session isolation, and worker-side failures delivered at sync points. Everything here is sent
// raw, the way a buggy or hostile client could.
#include <catch2/catch.hpp>

#include <cstring>

#include "daemons.h"
#include "instr_builder.h"
#include "libgtcore/frame_codec.h"
#include "raw_client.h"
#include "require_ok.h"

using namespace gt;
using namespace gt::testing;

namespace {

Daemons& shared_daemons() {
  // 1 MiB per worker: a 4 MiB tensor fails on the worker (not in the dispatcher).
  static Daemons d(DaemonOptions{2, {}, {"--max-memory-bytes", "1048576"}});
  return d;
}

// A client that can still do real work: the proof that others keep being served.
void expect_healthy(const std::string& address) {
  RawClient c(address);
  REQUIRE(c.hello().kind_case() == v1::ServerMessage::kWelcome);
  c.send(batch_of({from_floats(1, {1, 2, 3, 4}, Shape{2, 2}),
                   make_instr(OpId::k_add, 2, {1, 1})}));
  v1::Reply r = c.request(v1::Request::FETCH, 2);
  REQUIRE(r.errors_size() == 0);
  CHECK(floats_of(r) == std::vector<float>{2, 4, 6, 8});
}

std::string frame_bytes(const v1::ClientMessage& m) {
  std::string out;
  GT_REQUIRE_OK(append_frame(&out, m));
  return out;
}

}  // namespace

TEST_CASE("handshake: welcome, and wrong versions refused with a reason", "[protocol]") {
  Daemons& d = shared_daemons();
  {
    RawClient c(d.address());
    auto m = c.hello();
    REQUIRE(m.kind_case() == v1::ServerMessage::kWelcome);
    CHECK(m.welcome().session_id() > 0);
    CHECK(m.welcome().num_workers() == 2);
  }
  {
    RawClient c(d.address());
    auto m = c.hello(/*major=*/99);
    REQUIRE(m.kind_case() == v1::ServerMessage::kRefusal);
    CHECK_THAT(m.refusal().reason(), Catch::Contains("protocol version 99"));
    CHECK(c.closed_by_peer());
  }
  {
    RawClient c(d.address());
    auto m = c.hello(0, /*op_hash=*/0x1234);
    REQUIRE(m.kind_case() == v1::ServerMessage::kRefusal);
    CHECK_THAT(m.refusal().reason(), Catch::Contains("op table mismatch"));
  }
  {
    RawClient c(d.address());  // a batch before Hello
    c.send(batch_of({make_instr(OpId::k_zeros, 1, {}, make_shape_dtype(Shape{2}, DType::kFloat32))}));
    auto m = c.read();
    REQUIRE(m);
    REQUIRE(m->kind_case() == v1::ServerMessage::kRefusal);
    CHECK_THAT(m->refusal().reason(), Catch::Contains("Hello"));
  }
  expect_healthy(d.address());
}

TEST_CASE("malformed, oversized and truncated frames are refused, others keep working",
          "[protocol]") {
  Daemons& d = shared_daemons();
  RawClient bystander(d.address());
  REQUIRE(bystander.hello().kind_case() == v1::ServerMessage::kWelcome);
  bystander.send(batch_of({from_floats(7, {5, 6}, Shape{2})}));

  SECTION("garbage protobuf") {
    RawClient c(d.address());
    REQUIRE(c.hello().kind_case() == v1::ServerMessage::kWelcome);
    std::string garbage = "\xff\xff\xff\xff\xff\xff\xff\xff\x0f\x01\x02";
    uint32_t n = static_cast<uint32_t>(garbage.size());
    std::string frame(reinterpret_cast<const char*>(&n), 4);
    c.send_raw(frame + garbage);
    auto m = c.read();
    REQUIRE(m);
    REQUIRE(m->kind_case() == v1::ServerMessage::kRefusal);
    CHECK_THAT(m->refusal().reason(), Catch::Contains("malformed"));
    CHECK(c.closed_by_peer());
  }
  SECTION("a length prefix beyond the maximum is refused before any allocation") {
    RawClient c(d.address());
    REQUIRE(c.hello().kind_case() == v1::ServerMessage::kWelcome);
    uint32_t n = 0xfffffff0u;  // ~4 GiB claimed
    c.send_raw(std::string(reinterpret_cast<const char*>(&n), 4));
    auto m = c.read();
    REQUIRE(m);
    REQUIRE(m->kind_case() == v1::ServerMessage::kRefusal);
    CHECK_THAT(m->refusal().reason(), Catch::Contains("exceeds the maximum"));
    CHECK(c.closed_by_peer());
  }
  SECTION("a frame cut off mid-way by a disconnect") {
    std::string f = frame_bytes(batch_of({from_floats(1, {1, 2, 3}, Shape{3})}));
    {
      RawClient c(d.address());
      REQUIRE(c.hello().kind_case() == v1::ServerMessage::kWelcome);
      c.send_raw(f.substr(0, f.size() / 2));
    }  // closed here
  }
  SECTION("a hostile first frame: garbage instead of Hello") {
    RawClient c(d.address());
    c.send_raw(std::string("\x05\x00\x00\x00hello", 9));
    auto m = c.read();
    REQUIRE(m);
    CHECK(m->kind_case() == v1::ServerMessage::kRefusal);
  }
  // The bystander's session is intact and both daemons still serve.
  v1::Reply r = bystander.request(v1::Request::FETCH, 7);
  REQUIRE(r.errors_size() == 0);
  CHECK(floats_of(r) == std::vector<float>{5, 6});
  CHECK(d.dispatcher_alive());
  expect_healthy(d.address());
}

TEST_CASE("a session cannot name another session's tensors", "[protocol][isolation]") {
  Daemons& d = shared_daemons();
  RawClient a(d.address()), b(d.address());
  REQUIRE(a.hello().kind_case() == v1::ServerMessage::kWelcome);
  REQUIRE(b.hello().kind_case() == v1::ServerMessage::kWelcome);
  a.send(batch_of({from_floats(1, {1, 2}, Shape{2})}));
  REQUIRE(a.request(v1::Request::SYNC).errors_size() == 0);

  // B uses A's id 1: unknown in B's namespace, poisoned result, error at B's next sync.
  b.send(batch_of({make_instr(OpId::k_add, 2, {1, 1})}));
  v1::Reply sync = b.request(v1::Request::SYNC);
  REQUIRE(sync.errors_size() == 1);
  CHECK(sync.errors(0).op() == "add");
  CHECK_THAT(sync.errors(0).message(), Catch::Contains("unknown tensor id 1"));
  v1::Reply f = b.request(v1::Request::FETCH, 1);
  REQUIRE(f.errors_size() == 1);
  CHECK_THAT(f.errors(0).message(), Catch::Contains("unknown tensor id 1"));
  // The dependent of the poisoned id carries the original error, without a new report.
  v1::Reply f2 = b.request(v1::Request::FETCH, 2);
  REQUIRE(f2.errors_size() == 1);
  CHECK(f2.errors(0).op() == "add");
  CHECK(b.request(v1::Request::SYNC).errors_size() == 0);  // reported once

  // A's tensor is untouched.
  v1::Reply mine = a.request(v1::Request::FETCH, 1);
  REQUIRE(mine.errors_size() == 0);
  CHECK(floats_of(mine) == std::vector<float>{1, 2});
}

TEST_CASE("a worker-side failure surfaces at the next sync naming the op, all goes on",
          "[protocol][errors]") {
  Daemons& d = shared_daemons();
  RawClient c(d.address());
  REQUIRE(c.hello().kind_case() == v1::ServerMessage::kWelcome);
  // 4 MiB on a worker limited to 1 MiB: the dispatcher accepts it, the worker cannot.
  c.send(batch_of({make_instr(OpId::k_zeros, 1, {}, make_shape_dtype(Shape{1 << 20}, DType::kFloat32)),
                   make_instr(OpId::k_neg, 2, {1}),
                   from_floats(3, {1, 2, 3}, Shape{3}),
                   make_instr(OpId::k_mul, 4, {3, 3})}));
  v1::Reply sync = c.request(v1::Request::SYNC);
  REQUIRE(sync.errors_size() == 1);  // neg inherits the poison without a second report
  CHECK(sync.errors(0).op() == "zeros");
  CHECK_THAT(sync.errors(0).message(), Catch::Contains("out of memory"));
  CHECK_THAT(sync.errors(0).origin(), Catch::StartsWith("worker "));
  v1::Reply dep = c.request(v1::Request::FETCH, 2);
  REQUIRE(dep.errors_size() == 1);
  CHECK(dep.errors(0).op() == "zeros");
  v1::Reply ok = c.request(v1::Request::FETCH, 4);
  REQUIRE(ok.errors_size() == 0);
  CHECK(floats_of(ok) == std::vector<float>{1, 4, 9});
  CHECK(c.request(v1::Request::SYNC).errors_size() == 0);
  expect_healthy(d.address());
}

TEST_CASE("hostile instructions are errors, never crashes", "[protocol][hostile]") {
  Daemons& d = shared_daemons();
  RawClient c(d.address());
  REQUIRE(c.hello().kind_case() == v1::ServerMessage::kWelcome);
  c.send(batch_of({from_floats(1, {1, 2, 3, 4}, Shape{2, 2})}));

  std::vector<v1::Instr> bad;
  {
    v1::Instr in = make_instr(OpId::k_zeros, 10, {}, make_shape_dtype(Shape{2}, DType::kFloat32));
    for (int i = 0; i < 8; ++i) in.add_shape(1);  // rank 9
    bad.push_back(in);
  }
  bad.push_back(make_instr(OpId::k_zeros, 11, {},  // 2^62 elements
                           make_shape_dtype(Shape{1ll << 31, 1ll << 31}, DType::kFloat32)));
  {
    v1::Instr in = make_instr(OpId::k_add, 12, {1, 1});
    in.set_op(999);  // unknown op
    bad.push_back(in);
  }
  {
    v1::Instr in = make_instr(OpId::k_zeros, 13, {}, make_shape_dtype(Shape{2}, DType::kFloat32));
    in.set_shape(0, -5);  // negative dim
    bad.push_back(in);
  }
  {
    OpAttrs a;
    a.push_int(6);
    std::string payload(16, 'x');
    a.data = payload;
    bad.push_back(make_instr(OpId::k_host_chunk, 0, {1}, a));  // writes past the end
  }
  bad.push_back(make_instr(OpId::k_matmul, 14, {1, 999}));    // forged handle
  bad.push_back(make_instr(OpId::k_add, 1, {1, 1}));          // reuses a live id
  bad.push_back(make_instr(OpId::k_add, 0, {1, 1}));          // missing result id
  {
    OpAttrs a = make_permute(std::vector<int64_t>{0, 0});
    bad.push_back(make_instr(OpId::k_permute, 15, {1}, a));   // not a permutation
  }
  {
    OpAttrs a = make_reduce(1ll << 40, false);
    bad.push_back(make_instr(OpId::k_sum, 16, {1}, a));       // absurd dim
  }
  {
    OpAttrs a;
    a.shape = Shape{2, 2};
    a.has_shape = true;
    for (int i = 0; i < 4; ++i) a.push_int(i == 1 ? (1ll << 62) : 0);  // absurd slice step
    bad.push_back(make_instr(OpId::k_slice, 17, {1}, a));
  }
  {
    OpAttrs a = make_arange(0, 1e300, 1e-300, DType::kFloat32);
    bad.push_back(make_instr(OpId::k_arange, 18, {}, a));     // absurd length
  }
  bad.push_back(make_instr(OpId::k_cat, 19, {}, make_axis(0)));  // no inputs
  v1::ClientMessage m;
  for (auto& in : bad) *m.mutable_batch()->add_instrs() = in;
  c.send(m);
  v1::Reply sync = c.request(v1::Request::SYNC);
  CHECK(sync.errors_size() == static_cast<int>(bad.size()));
  for (const auto& e : sync.errors()) CHECK(e.origin() == "dispatcher");
  v1::Reply f = c.request(v1::Request::FETCH, 1);  // the live tensor survived
  REQUIRE(f.errors_size() == 0);
  CHECK(floats_of(f) == std::vector<float>{1, 2, 3, 4});
  CHECK(d.dispatcher_alive());
  expect_healthy(d.address());
}
