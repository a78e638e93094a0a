// Helpers for the peer link tests: host tensors without a backend, a cluster of TcpPeerLinks
// on loopback that know each other, and running one "executor thread" per member.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "libgtcore/comm.h"
#include "workerd/peer/tcp_peer_link.h"

namespace gt::test {

using worker::ErrorRecord;
using worker::Storage;
using worker::TcpPeerLink;
using worker::TcpPeerLinkOptions;
using worker::Tensor;

// A tensor over plain host memory, zero-filled.
Tensor host_tensor(const Shape& s, DType dt);
template <typename T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(t.storage->data());
}

// A poisoned tensor, the way the executor holds one.
Tensor poisoned(const std::string& op, const std::string& message, const std::string& origin);

// n links on 127.0.0.1 with worker ids `ids` (default 10, 11, ...), each knowing all others.
struct Cluster {
  explicit Cluster(int n, TcpPeerLinkOptions opts = {}, std::vector<uint32_t> ids = {});
  TcpPeerLink& operator[](size_t i) { return *links[i]; }
  std::map<uint32_t, std::string> table() const;
  std::vector<std::unique_ptr<TcpPeerLink>> links;
  std::vector<uint32_t> ids;
};

// Decodes a comm instruction's attributes the way the executor does (aborts on failure;
// safe on the members' threads, unlike Catch assertions).
CommGroup group_for(CommId c, const OpAttrs& a, uint32_t self);

// Runs fn(i) for every i in [0, n) on its own thread, all at once; returns when all are done.
// (Catch assertions are not thread-safe: fn records results, the test checks them after.)
void run_parallel(int n, const std::function<void(int)>& fn);

double seconds_since(std::chrono::steady_clock::time_point t);

}  // namespace gt::test
