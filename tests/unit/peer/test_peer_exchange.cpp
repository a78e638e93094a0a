// TcpPeerLink point to point: send/recv in both directions at once with large payloads (no
// deadlock), byte counters, backpressure under a small buffer budget, reset.
#include "peer_test_util.h"

#include <atomic>
#include <numeric>
#include <thread>
#include "require_ok.h"

using namespace gt;
using namespace gt::test;

namespace {

Tensor iota_f32(int64_t n, float start) {
  Tensor t = host_tensor(Shape{n}, DType::kFloat32);
  float* p = ptr<float>(t);
  for (int64_t i = 0; i < n; ++i) p[i] = start + static_cast<float>(i % 1000003);
  return t;
}

bool equal_bytes(const Tensor& a, const Tensor& b) {
  return a.meta == b.meta && std::memcmp(a.storage->data(), b.storage->data(),
                                         static_cast<size_t>(a.meta.nbytes())) == 0;
}

}  // namespace

TEST_CASE("send/recv both ways at once with 16 MiB payloads does not deadlock", "[peer]") {
  Cluster c(2);
  const int64_t n = 4 << 20;  // 16 MiB of float32
  Tensor src[2] = {iota_f32(n, 1), iota_f32(n, -7)};
  Tensor dst[2] = {host_tensor(Shape{n}, DType::kFloat32), host_tensor(Shape{n}, DType::kFloat32)};
  Status send_st[2], recv_st[2];
  auto t0 = std::chrono::steady_clock::now();
  run_parallel(2, [&](int i) {
    const uint32_t other = c.ids[1 - i];
    // Both send first: each side's receiver thread must drain while its executor sends.
    CommGroup s = group_for(CommId::k_send, make_send(other, 100 + i), c.ids[i]);
    send_st[i] = c[i].run(CommId::k_send, s, &src[i], nullptr, 1);
    CommGroup r = group_for(CommId::k_recv, make_recv(other, 100 + (1 - i), dst[i].meta), c.ids[i]);
    recv_st[i] = c[i].run(CommId::k_recv, r, nullptr, &dst[i], 1);
  });
  for (int i = 0; i < 2; ++i) {
    INFO(send_st[i].to_string() << " / " << recv_st[i].to_string());
    GT_REQUIRE_OK(send_st[i]);
    GT_REQUIRE_OK(recv_st[i]);
    CHECK(!dst[i].poison);
    CHECK(equal_bytes(dst[i], src[1 - i]));
    CHECK(c[i].stats().bytes_sent == static_cast<uint64_t>(n * 4));
    CHECK(c[i].stats().bytes_received == static_cast<uint64_t>(n * 4));
  }
  CHECK(seconds_since(t0) < 5);
}

TEST_CASE("messages for later instructions queue up, tags and sessions keep them apart", "[peer]") {
  Cluster c(2);
  // Worker 0 sends three tensors (two sessions, reused tag across sessions) before worker 1
  // asks for any; worker 1 takes them out of order.
  Tensor a = iota_f32(10, 0), b = iota_f32(20, 100), d = iota_f32(30, 1000);
  Status st[3];
  Tensor out[3] = {host_tensor(Shape{30}, DType::kFloat32), host_tensor(Shape{10}, DType::kFloat32),
                   host_tensor(Shape{20}, DType::kFloat32)};
  std::vector<Status> send_st(3);
  run_parallel(2, [&](int i) {
    if (i == 0) {
      send_st[0] = c[0].run(CommId::k_send, group_for(CommId::k_send, make_send(11, 5), 10), &a, nullptr, 1);
      send_st[1] = c[0].run(CommId::k_send, group_for(CommId::k_send, make_send(11, 6), 10), &b, nullptr, 1);
      send_st[2] = c[0].run(CommId::k_send, group_for(CommId::k_send, make_send(11, 5), 10), &d, nullptr, 2);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      st[0] = c[1].run(CommId::k_recv, group_for(CommId::k_recv, make_recv(10, 5, out[0].meta), 11),
                       nullptr, &out[0], 2);
      st[1] = c[1].run(CommId::k_recv, group_for(CommId::k_recv, make_recv(10, 5, out[1].meta), 11),
                       nullptr, &out[1], 1);
      st[2] = c[1].run(CommId::k_recv, group_for(CommId::k_recv, make_recv(10, 6, out[2].meta), 11),
                       nullptr, &out[2], 1);
    }
  });
  for (int i = 0; i < 3; ++i) {
    GT_REQUIRE_OK(send_st[i]);
    INFO(st[i].to_string());
    GT_REQUIRE_OK(st[i]);
  }
  CHECK(equal_bytes(out[0], d));
  CHECK(equal_bytes(out[1], a));
  CHECK(equal_bytes(out[2], b));
  CHECK(c[1].buffered_bytes() == 0);
}

TEST_CASE("a small buffer budget applies backpressure instead of failing", "[peer]") {
  TcpPeerLinkOptions o;
  o.max_buffered_bytes = 64 << 10;
  Cluster c(2, o);
  const int64_t n = 1 << 20;  // 4 MiB: far over the budget
  Tensor src = iota_f32(n, 3), dst = host_tensor(Shape{n}, DType::kFloat32);
  Status s, r;
  std::atomic<bool> sent{false};
  bool sent_before_recv = true;
  run_parallel(2, [&](int i) {
    if (i == 0) {
      s = c[0].run(CommId::k_send, group_for(CommId::k_send, make_send(11, 1), 10), &src, nullptr, 1);
      sent = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      sent_before_recv = sent;
      r = c[1].run(CommId::k_recv, group_for(CommId::k_recv, make_recv(10, 1, dst.meta), 11), nullptr,
                   &dst, 1);
    }
  });
  GT_REQUIRE_OK(s);
  GT_REQUIRE_OK(r);
  CHECK_FALSE(sent_before_recv);  // the sender waited for the receiver to make room
  CHECK(equal_bytes(src, dst));
}

TEST_CASE("recv of the wrong size is an error naming both sizes", "[peer]") {
  Cluster c(2);
  Tensor src = iota_f32(16, 0), dst = host_tensor(Shape{8}, DType::kFloat32);
  Status s, r;
  run_parallel(2, [&](int i) {
    if (i == 0)
      s = c[0].run(CommId::k_send, group_for(CommId::k_send, make_send(11, 1), 10), &src, nullptr, 1);
    else
      r = c[1].run(CommId::k_recv, group_for(CommId::k_recv, make_recv(10, 1, dst.meta), 11), nullptr,
                   &dst, 1);
  });
  GT_CHECK_OK(s);
  CHECK_FALSE(r.is_ok());
  CHECK_THAT(r.message(), Catch::Contains("64") && Catch::Contains("32"));
}

TEST_CASE("reset drops connections and ends waits, the link serves again after", "[peer]") {
  TcpPeerLinkOptions o;
  o.timeout_ms = 10000;
  Cluster c(2, o);
  Tensor dst = host_tensor(Shape{4}, DType::kFloat32);
  Status r;
  auto t0 = std::chrono::steady_clock::now();
  std::thread waiter([&] {
    r = c[1].run(CommId::k_recv, group_for(CommId::k_recv, make_recv(10, 1, dst.meta), 11), nullptr,
                 &dst, 1);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  c[1].reset();
  waiter.join();
  CHECK(r.code() == Code::kUnavailable);
  CHECK(seconds_since(t0) < 2);
  // A new dispatcher hands out the table again.
  c[1].set_self(11);
  c[1].set_peers(c.table());
  Tensor src = iota_f32(4, 9);
  Status s;
  run_parallel(2, [&](int i) {
    if (i == 0)
      s = c[0].run(CommId::k_send, group_for(CommId::k_send, make_send(11, 2), 10), &src, nullptr, 1);
    else
      r = c[1].run(CommId::k_recv, group_for(CommId::k_recv, make_recv(10, 2, dst.meta), 11), nullptr,
                   &dst, 1);
  });
  INFO(s.to_string() << " / " << r.to_string());
  GT_CHECK_OK(s);
  GT_CHECK_OK(r);
  CHECK(equal_bytes(src, dst));
}

TEST_CASE("a peer that is still starting is retried until it listens", "[peer]") {
  uint16_t port;
  {
    auto probe = TcpPeerLink::create({});
    GT_REQUIRE_OK(probe);
    port = (*probe)->port();
  }  // nothing listens on `port` until the late peer starts
  TcpPeerLinkOptions o;
  o.timeout_ms = 5000;
  auto early = TcpPeerLink::create(o);
  GT_REQUIRE_OK(early);
  TcpPeerLink& a = **early;
  a.set_self(10);
  a.set_peers({{11, "127.0.0.1:" + std::to_string(port)}});
  Tensor src = iota_f32(1000, 2), dst = host_tensor(Shape{1000}, DType::kFloat32);
  CommGroup sg = group_for(CommId::k_send, make_send(11, 1), 10);
  CommGroup rg = group_for(CommId::k_recv, make_recv(10, 1, dst.meta), 11);
  std::unique_ptr<TcpPeerLink> late;
  Status created, s, r;
  std::thread starter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    TcpPeerLinkOptions lo = o;
    lo.port = port;
    auto l = TcpPeerLink::create(lo);
    created = l.status();
    if (!l.is_ok()) return;
    late = std::move(*l);
    late->set_self(11);
    late->set_peers({{10, a.address()}});
    r = late->run(CommId::k_recv, rg, nullptr, &dst, 1);
  });
  auto t0 = std::chrono::steady_clock::now();
  s = a.run(CommId::k_send, sg, &src, nullptr, 1);
  starter.join();
  GT_REQUIRE_OK(created);
  INFO(s.to_string() << " / " << r.to_string());
  GT_CHECK_OK(s);
  GT_CHECK_OK(r);
  CHECK(seconds_since(t0) >= 0.25);
  CHECK(equal_bytes(src, dst));
}
