// Blocking helpers over a socket file descriptor, for the latency-critical paths where a thread
// hop would cost more than the work: a client thread at a sync point writes its request and
// reads the reply itself, and a worker thread sends its replies directly (ARCHITECTURE §2).
#pragma once

#include <string_view>

#include "libgtcore/frame_codec.h"
#include "libgtcore/status.h"

namespace gt {

// Writes all of `data` (waits on POLLOUT when the socket is non-blocking and full).
Status send_all(int fd, std::string_view data);

// Reads at least one byte into `decoder` (waits up to `timeout_ms`, -1 = forever). Returns
// Unavailable on EOF or error, DeadlineExceeded on timeout.
Status read_some(int fd, FrameDecoder* decoder, int timeout_ms);

}  // namespace gt
