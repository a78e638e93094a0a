// A raw loopback TCP ping-pong (blocking sockets, TCP_NODELAY): the floor any request/reply
// over loopback pays on this machine, measured in the same run as GT's fetch round trip.
#pragma once

#include <cstddef>
#include <vector>

namespace gt::bench {

// Returns `iters` round-trip times in seconds for `msg_bytes`-byte messages.
std::vector<double> tcp_pingpong(int iters, size_t msg_bytes);

}  // namespace gt::bench
