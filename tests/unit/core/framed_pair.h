// Two connected FramedConnections over a Unix socket pair on one io_context, for the tests of the
// connection's write queue and of descriptor passing: `a` sends, `b` receives.
#pragma once

#include <catch2/catch.hpp>

#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "libgtcore/framed_connection.h"

namespace gt::test {

struct FramedPair {
  asio::io_context io;
  std::shared_ptr<FramedConnection> a, b;
  FramedPair() {
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    a = std::make_shared<FramedConnection>(
        StreamSocket(io, asio::generic::stream_protocol(AF_UNIX, 0), sv[0]), 1 << 30);
    b = std::make_shared<FramedConnection>(
        StreamSocket(io, asio::generic::stream_protocol(AF_UNIX, 0), sv[1]), 1 << 30);
  }
  // Runs the io_context until `got` holds as many frames as `sent`, then compares them.
  void expect_received(const std::vector<std::string>& got, const std::vector<std::string>& sent) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (got.size() < sent.size() && std::chrono::steady_clock::now() < deadline)
      io.run_for(std::chrono::milliseconds(20));
    REQUIRE(got.size() == sent.size());
    for (size_t i = 0; i < sent.size(); ++i) {
      INFO("frame " << i);
      CHECK(got[i].size() == sent[i].size());
      CHECK(got[i] == sent[i]);
    }
    CHECK(a->pending_bytes() == 0);
  }
};

}  // namespace gt::test
