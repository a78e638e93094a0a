#include "libgtcore/socket_io.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gt {

Status after_failed_send(int fd, ssize_t n) {
  if (n < 0 && errno == EINTR) return Status::ok();
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    pollfd p{fd, POLLOUT, 0};
    ::poll(&p, 1, -1);
    return Status::ok();
  }
  return unavailable("send failed: {}", n < 0 ? std::strerror(errno) : "connection closed");
}

Status send_all(int fd, std::string_view data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) off += static_cast<size_t>(n);
    else GT_RETURN_IF_ERROR(after_failed_send(fd, n));
  }
  return Status::ok();
}

void enlarge_socket_buffers(int fd) {
  const int bytes = kSocketBufferBytes;
  (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

Status send_all_parts(int fd, std::span<const std::string_view> parts) {
  constexpr size_t kMaxParts = 64;  // iovecs per sendmsg (IOV_MAX is larger)
  iovec iov[kMaxParts];
  size_t next = 0;  // the first part not yet in iov
  while (true) {
    size_t count = 0;
    while (next < parts.size() && count < kMaxParts) {
      std::string_view p = parts[next++];
      if (!p.empty()) iov[count++] = iovec{const_cast<char*>(p.data()), p.size()};
    }
    if (count == 0) return Status::ok();
    size_t first = 0;  // the first of iov not yet written completely
    while (first < count) {
      msghdr msg{};
      msg.msg_iov = iov + first;
      msg.msg_iovlen = count - first;
      ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
      if (n <= 0) {
        GT_RETURN_IF_ERROR(after_failed_send(fd, n));
        continue;
      }
      auto left = static_cast<size_t>(n);
      while (first < count && left >= iov[first].iov_len) left -= iov[first++].iov_len;
      if (first < count) {
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
        iov[first].iov_len -= left;
      }
    }
  }
}

namespace {

// A recv that returned `r` <= 0: the peer closed, or an error, or nothing yet (then waits up to
// timeout_ms for data). OK means "try the recv again".
Status after_failed_recv(int fd, ssize_t r, int timeout_ms) {
  if (r == 0) return unavailable("connection closed by the peer");
  if (errno == EINTR) return Status::ok();
  if (errno != EAGAIN && errno != EWOULDBLOCK)
    return unavailable("recv failed: {}", std::strerror(errno));
  pollfd pf{fd, POLLIN, 0};
  const int pr = ::poll(&pf, 1, timeout_ms);
  if (pr == 0) return deadline_exceeded("no data within {} ms", timeout_ms);
  if (pr < 0 && errno != EINTR) return unavailable("poll failed: {}", std::strerror(errno));
  return Status::ok();
}

}  // namespace

Status read_exact(int fd, char* dst, size_t n, int timeout_ms) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::recv(fd, dst + got, n - got, 0);
    if (r > 0) {
      got += static_cast<size_t>(r);
      continue;
    }
    GT_RETURN_IF_ERROR(after_failed_recv(fd, r, timeout_ms));
  }
  return Status::ok();
}

Status read_some(int fd, FrameDecoder* decoder, int timeout_ms) {
  while (true) {
    char* p = decoder->prepare(64 * 1024);
    ssize_t n = ::recv(fd, p, decoder->prepared_size(), 0);
    if (n > 0) {
      decoder->commit(static_cast<size_t>(n));
      return Status::ok();
    }
    GT_RETURN_IF_ERROR(after_failed_recv(fd, n, timeout_ms));
  }
}

}  // namespace gt
