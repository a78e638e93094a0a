// Blocking helpers over a socket file descriptor, for the latency-critical paths where a thread
// hop would cost more than the work: a client thread at a sync point writes its request and
// reads the reply itself, and a worker thread sends its replies directly (ARCHITECTURE §2).
#pragma once

#include <sys/types.h>

#include <initializer_list>
#include <span>
#include <string_view>

#include "libgtcore/frame_codec.h"
#include "libgtcore/status.h"

namespace gt {

// Writes all of `data` (waits on POLLOUT when the socket is non-blocking and full).
Status send_all(int fd, std::string_view data);

// After a send on `fd` that returned `n` <= 0 (errno set when negative): Ok to try again (an
// interrupted call, or a full socket that now has room), else why the send failed.
Status after_failed_send(int fd, ssize_t n);

// Writes all of `parts`, in order, with scatter-gather I/O (sendmsg): a frame's header and a
// payload that lives elsewhere (a tensor's memory) leave without being copied together first.
Status send_all_parts(int fd, std::span<const std::string_view> parts);
inline Status send_all_parts(int fd, std::initializer_list<std::string_view> parts) {
  return send_all_parts(fd, std::span<const std::string_view>(parts.begin(), parts.size()));
}

// Raises the socket's kernel send and receive buffers towards kSocketBufferBytes (the system's
// net.core.[wr]mem_max caps it): a large fetch then crosses each hop in a few big steps instead
// of many ~200 KiB ones, each a wake-up of the process on the other side. The memory is used
// only while bytes wait in it. Best effort: errors are ignored.
inline constexpr int kSocketBufferBytes = 4 << 20;
void enlarge_socket_buffers(int fd);

// Reads exactly `n` bytes into `dst` (waits up to `timeout_ms` for each read, -1 = forever): a
// payload whose size the frame header gave goes straight to where it belongs.
Status read_exact(int fd, char* dst, size_t n, int timeout_ms);

// Reads at least one byte into `decoder` (waits up to `timeout_ms`, -1 = forever). Returns
// Unavailable on EOF or error, DeadlineExceeded on timeout.
Status read_some(int fd, FrameDecoder* decoder, int timeout_ms);

}  // namespace gt
