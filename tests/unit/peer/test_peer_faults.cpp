// TcpPeerLink under faults: a missing peer (deadline), a peer killed mid-collective (error, not
// a hang), poisoned inputs (markers carry the error to every member), and hostile bytes on the
// peer port (that connection is refused; the link keeps serving the others).
#include "peer_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "workerd/peer/peer_wire.h"
#include "require_ok.h"

using namespace gt;
using namespace gt::test;

namespace {

Tensor filled(int64_t n, float v) {
  Tensor t = host_tensor(Shape{n}, DType::kFloat32);
  for (int64_t i = 0; i < n; ++i) ptr<float>(t)[i] = v + static_cast<float>(i);
  return t;
}

int raw_connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

void raw_send(int fd, const std::string& bytes) {
  REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
}

// True when the link closed the connection within `ms` (whatever it answered before).
bool closed_within(int fd, int ms) {
  auto t0 = std::chrono::steady_clock::now();
  char buf[256];
  while (seconds_since(t0) * 1000 < ms) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return true;
  }
  return false;
}

std::string hello_for(uint32_t sender, const std::string& secret = "") {
  return worker::peer::encode_hello(sender, secret);
}

std::string header(uint32_t sender, uint64_t tag, uint64_t length, uint32_t kind = 1) {
  worker::peer::FrameHeader h{static_cast<worker::peer::MsgKind>(kind), sender, 0, 1, tag, length};
  std::string s(worker::peer::kHeaderBytes, '\0');
  worker::peer::encode_header(h, s.data());
  return s;
}

// The link still moves data between two healthy members.
void check_still_serving(Cluster& c, uint64_t tag) {
  Tensor src = filled(1000, 5), dst = host_tensor(Shape{1000}, DType::kFloat32);
  CommGroup s = group_for(CommId::k_send, make_send(c.ids[0], tag), c.ids[1]);
  CommGroup r = group_for(CommId::k_recv, make_recv(c.ids[1], tag, dst.meta), c.ids[0]);
  Status ss, rs;
  run_parallel(2, [&](int i) {
    if (i == 0) ss = c[1].run(CommId::k_send, s, &src, nullptr, 1);
    else rs = c[0].run(CommId::k_recv, r, nullptr, &dst, 1);
  });
  INFO(ss.to_string() << " / " << rs.to_string());
  GT_REQUIRE_OK(ss);
  GT_REQUIRE_OK(rs);
  CHECK(std::memcmp(src.storage->data(), dst.storage->data(), 4000) == 0);
}

}  // namespace

TEST_CASE("a peer that never sends fails the instruction at the deadline, naming peer and tag",
          "[peer][faults]") {
  TcpPeerLinkOptions o;
  o.timeout_ms = 300;
  Cluster c(2, o);
  Tensor dst = host_tensor(Shape{4}, DType::kFloat32);
  auto t0 = std::chrono::steady_clock::now();
  Status st = c[0].run(CommId::k_recv, group_for(CommId::k_recv, make_recv(11, 77, dst.meta), 10),
                       nullptr, &dst, 1);
  double took = seconds_since(t0);
  CHECK(st.code() == Code::kDeadlineExceeded);
  CHECK_THAT(st.message(), Catch::Contains("worker 11") && Catch::Contains("tag 77"));
  CHECK(took >= 0.29);
  CHECK(took < 2);
  // A collective with a member that does not show up fails the same way.
  Tensor in = filled(8, 1), out = host_tensor(Shape{8}, DType::kFloat32);
  const std::vector<uint32_t> g = {10, 11};
  t0 = std::chrono::steady_clock::now();
  st = c[0].run(CommId::k_all_reduce,
                group_for(CommId::k_all_reduce, make_all_reduce(78, ReduceKind::kSum, g), 10), &in, &out, 1);
  CHECK(st.code() == Code::kDeadlineExceeded);
  CHECK(seconds_since(t0) < 2);
}

TEST_CASE("a peer nobody listens for fails the send at the deadline", "[peer][faults]") {
  TcpPeerLinkOptions o;
  o.timeout_ms = 300;
  Cluster c(1, o);
  std::string dead_address;
  {
    auto gone = TcpPeerLink::create({});
    GT_REQUIRE_OK(gone);
    dead_address = (*gone)->address();
  }  // closed: nothing listens there now
  c[0].set_peers({{10, c[0].address()}, {11, dead_address}});
  Tensor src = filled(4, 0);
  auto t0 = std::chrono::steady_clock::now();
  Status st = c[0].run(CommId::k_send, group_for(CommId::k_send, make_send(11, 5), 10), &src, nullptr, 1);
  CHECK(st.code() == Code::kDeadlineExceeded);
  CHECK_THAT(st.message(), Catch::Contains("worker 11") && Catch::Contains(dead_address));
  CHECK(seconds_since(t0) >= 0.29);  // it kept trying while the peer might still be starting
  CHECK(seconds_since(t0) < 2);
  // A worker missing from the peer table is an immediate, clear error.
  st = c[0].run(CommId::k_send, group_for(CommId::k_send, make_send(12, 6), 10), &src, nullptr, 1);
  CHECK(st.code() == Code::kFailedPrecondition);
  CHECK_THAT(st.message(), Catch::Contains("peer table"));
}

TEST_CASE("a peer killed mid-collective fails the instruction instead of hanging", "[peer][faults]") {
  TcpPeerLinkOptions o;
  o.timeout_ms = 20000;
  Cluster c(3, o);
  const std::vector<uint32_t> g = {10, 11, 12};
  const int64_t n = 1 << 16;
  std::vector<Tensor> in = {filled(n, 1), filled(n, 2)}, out = {host_tensor(Shape{n}, DType::kFloat32),
                                                                host_tensor(Shape{n}, DType::kFloat32)};
  std::vector<CommGroup> gs = {group_for(CommId::k_all_reduce, make_all_reduce(9, ReduceKind::kSum, g), 10),
                               group_for(CommId::k_all_reduce, make_all_reduce(9, ReduceKind::kSum, g), 11)};
  Status st[2];
  auto t0 = std::chrono::steady_clock::now();
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    c.links[2].reset();  // member 12 dies without ever taking part: its sockets close
  });
  run_parallel(2, [&](int k) { st[k] = c[static_cast<size_t>(k)].run(CommId::k_all_reduce, gs[k], &in[k], &out[k], 1); });
  killer.join();
  CHECK(seconds_since(t0) < 5);
  int errors = 0;
  for (int k = 0; k < 2; ++k) {
    INFO(st[k].to_string());
    // Each survivor either saw the disconnect itself or got the other survivor's error.
    CHECK((!st[k].is_ok() || out[k].poison));
    if (!st[k].is_ok()) {
      ++errors;
      CHECK(st[k].code() == Code::kUnavailable);
      CHECK_THAT(st[k].message(), Catch::Contains("worker 12"));
    }
  }
  CHECK(errors >= 1);
}

TEST_CASE("a poisoned input sends markers: every member's result carries the original error",
          "[peer][faults]") {
  Cluster c(3);
  const std::vector<uint32_t> g = {10, 11, 12};
  const auto origin_rec = ErrorRecord{"matmul", "shapes [2, 3] and [4, 5] do not match", "worker 11"};

  SECTION("all_reduce") {
    std::vector<Tensor> in = {filled(10, 0), poisoned(origin_rec.op, origin_rec.message, origin_rec.origin),
                              filled(10, 1)};
    std::vector<Tensor> out = {host_tensor(Shape{10}, DType::kFloat32), Tensor{},
                               host_tensor(Shape{10}, DType::kFloat32)};
    out[1].poison = in[1].poison;  // what the executor hands the link for a poisoned input
    std::vector<CommGroup> gs;
    for (uint32_t self : g) gs.push_back(group_for(CommId::k_all_reduce, make_all_reduce(3, ReduceKind::kSum, g), self));
    Status st[3];
    auto t0 = std::chrono::steady_clock::now();
    run_parallel(3, [&](int k) { st[k] = c[static_cast<size_t>(k)].run(CommId::k_all_reduce, gs[k], &in[k], &out[k], 1); });
    CHECK(seconds_since(t0) < 2);
    for (int k = 0; k < 3; ++k) {
      INFO(k << ": " << st[k].to_string());
      GT_REQUIRE_OK(st[k]);
      REQUIRE(out[k].poison);
      CHECK(out[k].poison->op == origin_rec.op);
      CHECK(out[k].poison->message == origin_rec.message);
      CHECK(out[k].poison->origin == origin_rec.origin);
      CHECK_FALSE(out[k].storage);
    }
  }
  SECTION("all_gather and reduce_scatter") {
    for (CommId op : {CommId::k_all_gather, CommId::k_reduce_scatter}) {
      const std::vector<int64_t> ext = {2, 2, 2};
      std::vector<Tensor> in, out;
      for (int k = 0; k < 3; ++k) {
        in.push_back(op == CommId::k_all_gather ? filled(2, 0) : filled(6, 0));
        out.push_back(host_tensor(Shape{op == CommId::k_all_gather ? 6 : 2}, DType::kFloat32));
      }
      in[2] = poisoned(origin_rec.op, origin_rec.message, origin_rec.origin);
      out[2] = Tensor{};
      out[2].poison = in[2].poison;
      std::vector<CommGroup> gs;
      const uint64_t tag = op == CommId::k_all_gather ? 4 : 5;
      for (uint32_t self : g)
        gs.push_back(group_for(op, op == CommId::k_all_gather ? make_all_gather(tag, 0, g, ext)
                                                              : make_reduce_scatter(tag, 0, g, ext), self));
      Status st[3];
      run_parallel(3, [&](int k) { st[k] = c[static_cast<size_t>(k)].run(op, gs[k], &in[k], &out[k], 1); });
      for (int k = 0; k < 3; ++k) {
        INFO(comm_name(op) << " " << k << ": " << st[k].to_string());
        GT_REQUIRE_OK(st[k]);
        REQUIRE(out[k].poison);
        CHECK(out[k].poison->message == origin_rec.message);
      }
    }
  }
  SECTION("send/recv") {
    Tensor in = poisoned(origin_rec.op, origin_rec.message, origin_rec.origin);
    Tensor send_out;
    send_out.poison = in.poison;
    Tensor dst = host_tensor(Shape{4}, DType::kFloat32);
    Status s, r;
    run_parallel(2, [&](int k) {
      if (k == 0) s = c[0].run(CommId::k_send, group_for(CommId::k_send, make_send(11, 6), 10), &in, &send_out, 1);
      else r = c[1].run(CommId::k_recv, group_for(CommId::k_recv, make_recv(10, 6, dst.meta), 11), nullptr, &dst, 1);
    });
    GT_REQUIRE_OK(s);
    GT_REQUIRE_OK(r);
    REQUIRE(dst.poison);
    CHECK(dst.poison->op == "matmul");
    CHECK(dst.poison->origin == "worker 11");
  }
  // Nothing is left behind in any mailbox (late markers for the abandoned tag are dropped on
  // arrival), and the link goes on working.
  for (size_t k = 0; k < 3; ++k) {
    auto t0 = std::chrono::steady_clock::now();
    while (c[k].buffered_bytes() != 0 && seconds_since(t0) < 2)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(c[k].buffered_bytes() == 0);
  }
  check_still_serving(c, 99);
}

TEST_CASE("hostile bytes on the peer port: that connection is refused, the link keeps serving",
          "[peer][faults]") {
  TcpPeerLinkOptions o;
  o.hello_timeout_ms = 300;
  o.timeout_ms = 5000;
  SECTION("without a secret") {
    Cluster c(2, o);
    const uint16_t port = c[0].port();
    int garbage = raw_connect(port);
    raw_send(garbage, "GET / HTTP/1.1\r\nHost: gt\r\n\r\n");
    CHECK(closed_within(garbage, 2000));
    ::close(garbage);

    int silent = raw_connect(port);  // says nothing: dropped after the hello timeout
    CHECK(closed_within(silent, 2000));
    ::close(silent);

    int huge = raw_connect(port);
    raw_send(huge, hello_for(77) + header(77, 1, uint64_t{1} << 60));
    CHECK(closed_within(huge, 2000));
    ::close(huge);

    int bad_kind = raw_connect(port);
    raw_send(bad_kind, hello_for(78) + header(78, 1, 16, 9));
    CHECK(closed_within(bad_kind, 2000));
    ::close(bad_kind);

    int spoof = raw_connect(port);  // frames must come from the sender named in the hello
    raw_send(spoof, hello_for(79) + header(11, 1, 16));
    CHECK(closed_within(spoof, 2000));
    ::close(spoof);

    int bad_marker = raw_connect(port);
    raw_send(bad_marker, hello_for(80) + header(80, 1, 8, 2) + std::string(8, '\xff'));
    CHECK(closed_within(bad_marker, 2000));
    ::close(bad_marker);

    check_still_serving(c, 1);

    // A length that contradicts what the receiver expects is refused before allocating.
    Tensor dst = host_tensor(Shape{4}, DType::kFloat32);
    Status r;
    std::thread waiter([&] {
      r = c[0].run(CommId::k_recv, group_for(CommId::k_recv, make_recv(81, 2, dst.meta), 10), nullptr, &dst, 1);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    int liar = raw_connect(port);
    raw_send(liar, hello_for(81) + header(81, 2, uint64_t{1} << 40));
    CHECK(closed_within(liar, 2000));
    ::close(liar);
    waiter.join();
    CHECK_FALSE(r.is_ok());
    CHECK_THAT(r.message(), Catch::Contains("worker 81"));
    check_still_serving(c, 3);
  }
  SECTION("with a secret") {
    o.secret = "correct horse";
    Cluster c(2, o);
    int wrong = raw_connect(c[0].port());
    raw_send(wrong, hello_for(11, "battery staple"));
    char verdict[4] = {0};
    pollfd p{wrong, POLLIN, 0};
    REQUIRE(::poll(&p, 1, 2000) == 1);
    REQUIRE(::recv(wrong, verdict, 4, 0) == 4);
    CHECK(worker::peer::get_u32(verdict) == worker::peer::kHelloRefused);
    CHECK(closed_within(wrong, 2000));
    ::close(wrong);
    check_still_serving(c, 1);

    // A worker configured with another secret gets a clear refusal.
    TcpPeerLinkOptions other = o;
    other.secret = "something else";
    auto stranger = TcpPeerLink::create(other);
    GT_REQUIRE_OK(stranger);
    (*stranger)->set_self(11);
    (*stranger)->set_peers(c.table());
    Tensor src = filled(4, 0);
    Status st = (*stranger)->run(CommId::k_send, group_for(CommId::k_send, make_send(10, 4), 11), &src,
                                 nullptr, 1);
    CHECK(st.code() == Code::kPermissionDenied);
    CHECK_THAT(st.message(), Catch::Contains("secret"));
  }
}
